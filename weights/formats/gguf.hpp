// The GGUF reader (versions 2 and 3, little-endian): the header, the typed
// metadata, the tensor infos and every rule that keeps a tensor's bytes
// inside the file. It reads with pread through a bounded window, so opening
// costs time in the header's size, never the data's, and nothing is
// allocated from a count before the count has been checked against the bytes
// the file has left.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/diagnostic.hpp"
#include "rootspan/types.h"

namespace rootspan::weights {

class InputFile;

inline constexpr std::uint32_t kGgufMinVersion = 2;
inline constexpr std::uint32_t kGgufMaxVersion = 3;
inline constexpr std::uint64_t kGgufDefaultAlignment = 32;
// ggml's name field holds 64 bytes with the terminating NUL.
inline constexpr std::uint64_t kGgufMaxNameBytes = 63;
inline constexpr std::uint32_t kGgufMaxDims = 4;
inline constexpr std::uint64_t kGgufMaxStringBytes = std::uint64_t{1} << 30;  // 1 GiB

// True when the first four bytes are "GGUF".
bool has_gguf_magic(std::span<const std::byte> first_bytes);

// The metadata value types, numbered as in the file.
enum class GgufValueType : std::uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

// "u8", "string", "array", ...; "" for a number outside 0-12.
std::string_view gguf_value_type_name(GgufValueType type);

// One entry of ggml's tensor type table.
struct GgufType {
  std::uint32_t id;                     // the number in the file
  std::string_view name;                // "Q4_K", "F32", ...
  std::uint64_t values_per_block;       // 1 for the dense types
  std::uint64_t bytes_per_block;        // element size for the dense types
  std::optional<rootspan_dtype> dense;  // the element type of a dense type; nullopt when block-quantized
};

// Every type ggml reads today, in id order.
std::span<const GgufType> gguf_types();
// The type of that id, or nullptr (unknown or removed).
const GgufType *gguf_type(std::uint32_t id);
// The name of a type id ggml once had and removed ("Q4_2", "Q4_0_4_4", ...),
// or nullopt.
std::optional<std::string_view> gguf_removed_type_name(std::uint32_t id);

// A metadata value: a scalar, or an array of scalars (arrays of arrays are
// refused). Numbers and booleans keep their little-endian bytes as in the
// file; strings are decoded.
struct GgufValue {
  GgufValueType type = GgufValueType::kU8;          // kArray for an array
  GgufValueType element_type = GgufValueType::kU8;  // the array's element type; `type` for a scalar
  std::uint64_t count = 1;                          // array length; 1 for a scalar
  std::vector<std::byte> raw;                       // count fixed-size elements (not strings)
  std::vector<std::string> strings;                 // count strings (string elements only)

  bool is_array() const { return type == GgufValueType::kArray; }
  // Element i as a number (integers, floats, booleans); nullopt for strings
  // or i out of range.
  std::optional<double> number(std::uint64_t i = 0) const;
  // Element i as an unsigned integer when it is an integer type holding a
  // non-negative value; nullopt otherwise.
  std::optional<std::uint64_t> unsigned_integer(std::uint64_t i = 0) const;
  // Element i as a string (string elements only), or nullptr.
  const std::string *string(std::uint64_t i = 0) const;
};

struct GgufTensor {
  std::string name;
  const GgufType *type = nullptr;  // points into the static table
  std::vector<std::uint64_t> ne;   // ggml's order: ne[0] varies fastest
  std::uint64_t offset = 0;        // relative to the data section
  std::uint64_t bytes = 0;         // exact size, without padding
  std::uint64_t info_offset = 0;   // file offset of this tensor's info, for messages

  // Row-major dimensions: ne reversed.
  std::vector<std::uint64_t> shape() const;
  // The block grid: shape() with its last axis divided by values_per_block.
  std::vector<std::uint64_t> block_grid() const;
  // The bytes as a U8 array: shape() with its last axis counting bytes
  // (blocks × bytes_per_block).
  std::vector<std::uint64_t> byte_shape() const;
};

struct GgufFile {
  std::filesystem::path path;  // as opened (or the name given to parse_gguf)
  std::uint64_t file_size = 0;
  std::uint32_t version = 0;
  std::uint64_t alignment = kGgufDefaultAlignment;
  std::uint64_t data_offset = 0;                            // absolute start of the data section
  std::vector<std::pair<std::string, GgufValue>> metadata;  // in file order
  std::vector<GgufTensor> tensors;                          // in file order (= offset order)

  const GgufValue *find_value(std::string_view key) const;
  const GgufTensor *find_tensor(std::string_view name) const;

  // Built by the reader.
  std::map<std::string, std::size_t, std::less<>> value_index;
  std::map<std::string, std::size_t, std::less<>> tensor_index;
};

// Validates a whole GGUF file held in memory. `file_name` is named in every
// cause. Errors: ROOTSPAN_ERR_INVALID_CHECKPOINT, operation
// "open_checkpoint", naming the file, the byte offset, the field and the
// expected and actual values.
Result<GgufFile> parse_gguf(std::span<const std::byte> file_bytes, std::string_view file_name);

// Opens a GGUF file and reads its header with pread, nothing of the data
// section. ROOTSPAN_ERR_IO when the file cannot be read.
Result<GgufFile> open_gguf(const std::filesystem::path &path);
// The same from a file already opened; it names the file by file.path().
Result<GgufFile> open_gguf(const InputFile &file);

}  // namespace rootspan::weights
