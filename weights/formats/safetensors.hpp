// The safetensors reader (docs/weight-schema.md): the 8-byte header length, the JSON
// header, and every rule that makes the tensors tile the data section
// exactly. It reads the header only: opening a checkpoint costs time in its
// header size, never its data size, and nothing is allocated for a header
// before its length has been checked against the limit and the file.
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
#include "weights/formats/safetensors_fields.hpp"
#include "weights/formats/tensor_table.hpp"

namespace rootspan::weights {

class InputFile;

// The largest header safetensors allows (100,000,000 bytes).
inline constexpr std::uint64_t kMaxSafetensorsHeader = 100'000'000;
// The little-endian header length before the header.
inline constexpr std::uint64_t kSafetensorsPrefix = 8;

class SafetensorsHeader {
 public:
  SafetensorsHeader() = default;
  // Takes tensors already validated and sorted by begin.
  SafetensorsHeader(std::map<std::string, std::string> metadata, std::vector<TensorInfo> tensors,
                    std::uint64_t data_size, bool has_metadata = false);

  const std::map<std::string, std::string> &metadata() const { return metadata_; }  // "__metadata__"
  // Whether the header has a __metadata__ object (an empty one included);
  // false when it has none, or `"__metadata__": null`.
  bool has_metadata() const { return has_metadata_; }
  // The tensors, in the form every checkpoint file has (tensor_table.hpp);
  // a checkpoint moves the table out of the header it read.
  const TensorTable &table() const & { return table_; }
  TensorTable table() && { return std::move(table_); }
  const std::vector<TensorInfo> &tensors() const { return table_.tensors(); }  // sorted by begin
  std::uint64_t data_size() const { return table_.data_bytes(); }              // bytes after the header
  // The tensor of that name, or nullptr.
  const TensorInfo *find(std::string_view name) const { return table_.find(name); }

 private:
  std::map<std::string, std::string> metadata_;
  bool has_metadata_ = false;
  TensorTable table_;
};

// One safetensors file: where its data section starts and what it holds.
struct SafetensorsFile {
  std::filesystem::path path;     // as opened (or the name given to parse_safetensors)
  std::uint64_t file_size = 0;    // fstat at open
  std::uint64_t header_size = 0;  // N
  SafetensorsHeader header;
  std::string header_sha256;  // of the prefix and header as read by open_safetensors (ParsedDigests::kTake);
                              // empty from parse_safetensors and with ParsedDigests::kSkip

  // Absolute file offset of the data section: 8 + N.
  std::uint64_t data_offset() const { return kSafetensorsPrefix + header_size; }
};

// The fields of a header, read through the strict JSON parser: every rule of
// one entry, with the cause worded. parse_safetensors_header reads valid
// headers faster (safetensors_fast_reader.hpp) and falls back to this one to
// say why a header is refused; tests compare the two.
Result<SafetensorsFields> read_safetensors_fields_strictly(std::string_view header_json, std::string_view file_name);

// Parses and validates the JSON header alone (the N bytes after the length
// prefix) for a data section of `data_size` bytes. `file_name` is named in
// every cause. A shape longer than kMaxTensorRank, or more than
// kMaxTensorsPerFile entries (limits.hpp), is refused while the JSON is
// parsed. Errors: ROOTSPAN_ERR_INVALID_CHECKPOINT (operation
// "open_checkpoint"), with expected and actual values where there are two.
// `readable`, as read_safetensors_fields_fast takes it: the bytes readable
// from header_json.data() on, read in place when they pad the text.
Result<SafetensorsHeader> parse_safetensors_header(std::string_view header_json, std::uint64_t data_size,
                                                   std::string_view file_name, std::size_t readable = 0);

// Validates a whole safetensors file held in memory: length prefix, header
// and data section.
Result<SafetensorsFile> parse_safetensors(std::span<const std::byte> file_bytes, std::string_view file_name);

// Whether opening takes the SHA-256 of the bytes it parsed (a safetensors
// prefix and header, a shard index). A verified load proves with them that it
// hashed the very bytes it parsed, and a digest manifest records them; any
// other open skips the work, and with it the crypto library's first-use start
// (a millisecond and more) in a process that hashes nothing else.
enum class ParsedDigests { kTake, kSkip };

// Opens a safetensors file and reads its length prefix and header with pread,
// nothing of the data section. ROOTSPAN_ERR_IO when the file cannot be read.
Result<SafetensorsFile> open_safetensors(const std::filesystem::path &path,
                                         ParsedDigests digests = ParsedDigests::kTake);
// The same from a file already opened (once, beneath its folder); it names
// the file by file.path().
Result<SafetensorsFile> open_safetensors(const InputFile &file, ParsedDigests digests = ParsedDigests::kTake);

}  // namespace rootspan::weights
