#include "weights/formats/gguf.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>

#include "core/text/quoting.hpp"
#include "core/text/utf8.hpp"
#include "weights/files/checked_math.hpp"
#include "weights/files/input_file.hpp"
#include "weights/formats/limits.hpp"

namespace rootspan::weights {

namespace {

constexpr const char *kOperation = "open_checkpoint";
constexpr std::uint64_t kFixedHeaderBytes = 24;  // magic, version, tensor count, key-value count
// The fewest bytes a key-value pair can take: key length, (empty) key,
// value type, a one-byte value.
constexpr std::uint64_t kMinKeyValueBytes = 8 + 4 + 1;
// The fewest bytes a tensor info can take: name length, a one-byte name,
// dimension count, one dimension, type, offset.
constexpr std::uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;
// The read window: the header is read in pieces of this size, whatever its
// total size.
constexpr std::uint64_t kWindowBytes = 1 << 16;
constexpr std::uint64_t kMaxSignedDimension = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// ggml's tensor types. Ids 4, 5 and 31-33, 36-38 were removed and are refused
// by name.
constexpr std::array<GgufType, 32> kTypes{{
    {0, "F32", 1, 4, ROOTSPAN_DTYPE_F32},    {1, "F16", 1, 2, ROOTSPAN_DTYPE_F16},
    {2, "Q4_0", 32, 18, std::nullopt},       {3, "Q4_1", 32, 20, std::nullopt},
    {6, "Q5_0", 32, 22, std::nullopt},       {7, "Q5_1", 32, 24, std::nullopt},
    {8, "Q8_0", 32, 34, std::nullopt},       {9, "Q8_1", 32, 36, std::nullopt},
    {10, "Q2_K", 256, 84, std::nullopt},     {11, "Q3_K", 256, 110, std::nullopt},
    {12, "Q4_K", 256, 144, std::nullopt},    {13, "Q5_K", 256, 176, std::nullopt},
    {14, "Q6_K", 256, 210, std::nullopt},    {15, "Q8_K", 256, 292, std::nullopt},
    {16, "IQ2_XXS", 256, 66, std::nullopt},  {17, "IQ2_XS", 256, 74, std::nullopt},
    {18, "IQ3_XXS", 256, 98, std::nullopt},  {19, "IQ1_S", 256, 50, std::nullopt},
    {20, "IQ4_NL", 32, 18, std::nullopt},    {21, "IQ3_S", 256, 110, std::nullopt},
    {22, "IQ2_S", 256, 82, std::nullopt},    {23, "IQ4_XS", 256, 136, std::nullopt},
    {24, "I8", 1, 1, ROOTSPAN_DTYPE_I8},     {25, "I16", 1, 2, ROOTSPAN_DTYPE_I16},
    {26, "I32", 1, 4, ROOTSPAN_DTYPE_I32},   {27, "I64", 1, 8, ROOTSPAN_DTYPE_I64},
    {28, "F64", 1, 8, ROOTSPAN_DTYPE_F64},   {29, "IQ1_M", 256, 56, std::nullopt},
    {30, "BF16", 1, 2, ROOTSPAN_DTYPE_BF16}, {34, "TQ1_0", 256, 54, std::nullopt},
    {35, "TQ2_0", 256, 66, std::nullopt},    {39, "MXFP4", 32, 17, std::nullopt},
}};

constexpr std::array<std::pair<std::uint32_t, std::string_view>, 8> kRemovedTypes{{
    {4, "Q4_2"},
    {5, "Q4_3"},
    {31, "Q4_0_4_4"},
    {32, "Q4_0_4_8"},
    {33, "Q4_0_8_8"},
    {36, "IQ4_NL_4_4"},
    {37, "IQ4_NL_4_8"},
    {38, "IQ4_NL_8_8"},
}};

// Bytes of one fixed-size value; 0 for strings, arrays and unknown types.
std::uint64_t value_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8:
    case GgufValueType::kI8:
    case GgufValueType::kBool:
      return 1;
    case GgufValueType::kU16:
    case GgufValueType::kI16:
      return 2;
    case GgufValueType::kU32:
    case GgufValueType::kI32:
    case GgufValueType::kF32:
      return 4;
    case GgufValueType::kU64:
    case GgufValueType::kI64:
    case GgufValueType::kF64:
      return 8;
    case GgufValueType::kString:
    case GgufValueType::kArray:
      return 0;
  }
  return 0;
}

std::uint64_t read_le(const std::byte *bytes, std::uint64_t size) {
  std::uint64_t value = 0;
  for (std::uint64_t i = size; i-- > 0;) value = (value << 8) | std::to_integer<std::uint64_t>(bytes[i]);
  return value;
}

std::string hex32(std::uint32_t value) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "0x%08X", value);
  return buffer;
}

// Every cause names the file, the byte offset and the field.
struct Failure {
  std::string file;

  Diagnostic operator()(std::uint64_t at, std::string_view field, const std::string &cause) const {
    return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, prefix(at, field) + cause);
  }
  Diagnostic operator()(std::uint64_t at, std::string_view field, const std::string &cause, std::uint64_t expected,
                        std::uint64_t actual) const {
    return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, prefix(at, field) + cause, expected, actual);
  }
  std::string prefix(std::uint64_t at, std::string_view field) const {
    return quoted_text(file) + ": at byte " + std::to_string(at) + ": " + std::string(field) + ": ";
  }
};

// Reads the file front to back through a bounded window. Every read is
// checked against the file's size first, so a count or length that claims
// more than the file holds fails before anything is allocated for it.
class Cursor {
 public:
  using ReadAt = std::function<Result<void>(std::span<std::byte>, std::uint64_t)>;

  Cursor(ReadAt read_at, std::uint64_t size, const Failure &fail)
      : read_at_(std::move(read_at)), size_(size), fail_(fail) {}

  std::uint64_t position() const { return position_; }
  std::uint64_t remaining() const { return size_ - position_; }
  std::uint64_t size() const { return size_; }

  Result<void> bytes(std::span<std::byte> out, std::string_view field) {
    if (out.size() > remaining()) {
      return fail_(
          position_, field,
          "needs " + std::to_string(out.size()) + " bytes but the file ends after " + std::to_string(remaining()),
          out.size(), remaining());
    }
    std::size_t done = 0;
    while (done < out.size()) {
      if (position_ < window_start_ || position_ >= window_start_ + window_.size()) {
        const std::uint64_t n = std::min(kWindowBytes, remaining());
        window_.resize(static_cast<std::size_t>(n));
        window_start_ = position_;
        if (auto read = read_at_(window_, window_start_); !read) {
          window_.clear();
          return read.error();
        }
      }
      const std::uint64_t in_window = position_ - window_start_;
      const std::size_t n =
          static_cast<std::size_t>(std::min<std::uint64_t>(out.size() - done, window_.size() - in_window));
      std::memcpy(out.data() + done, window_.data() + in_window, n);
      done += n;
      position_ += n;
    }
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }

  Result<std::uint64_t> integer(std::uint64_t size, std::string_view field) {
    std::byte buffer[8];
    BOOST_OUTCOME_TRY(bytes(std::span(buffer, static_cast<std::size_t>(size)), field));
    return read_le(buffer, size);
  }
  Result<std::uint32_t> u32(std::string_view field) {
    BOOST_OUTCOME_TRY(value, integer(4, field));
    return static_cast<std::uint32_t>(value);
  }
  Result<std::uint64_t> u64(std::string_view field) { return integer(8, field); }

  // A length-prefixed string: the length is checked against `max_bytes` and
  // the bytes left before the string is allocated.
  Result<std::string> string(std::string_view field, std::uint64_t max_bytes, std::string_view limit_reason) {
    const std::uint64_t at = position_;
    BOOST_OUTCOME_TRY(length, u64(field));
    if (length > max_bytes) {
      return fail_(at, field,
                   "string length " + std::to_string(length) + " exceeds the limit of " + std::to_string(max_bytes) +
                       " bytes (" + std::string(limit_reason) + ")",
                   max_bytes, length);
    }
    if (length > remaining()) {
      return fail_(at, field,
                   "string length " + std::to_string(length) +
                       " runs past the end of the file: " + std::to_string(remaining()) + " bytes remain",
                   remaining(), length);
    }
    std::string text(static_cast<std::size_t>(length), '\0');
    BOOST_OUTCOME_TRY(bytes(std::as_writable_bytes(std::span(text)), field));
    return text;
  }

 private:
  ReadAt read_at_;
  std::uint64_t size_;
  const Failure &fail_;
  std::uint64_t position_ = 0;
  std::uint64_t window_start_ = 0;
  std::vector<std::byte> window_;
};

std::string type_names() {
  std::string names;
  for (const GgufType &type : gguf_types()) names += (names.empty() ? "" : ", ") + std::string(type.name);
  return names;
}

// The format names keys as ASCII segments joined by '.' ("general.architecture",
// "llama.rope.dimension_count"): letters, digits, '_' and '-', no segment empty.
Result<void> check_key_name(const std::string &key, std::uint64_t at, std::string_view field, const Failure &fail) {
  if (key.empty()) return fail(at, field, "the key is empty; keys are non-empty ASCII names such as \"general.name\"");
  std::size_t segment = 0;
  for (std::size_t i = 0; i < key.size(); ++i) {
    const char c = key[i];
    if (c == '.') {
      if (segment == 0) {
        return fail(at, field,
                    "key " + quoted_text(key) + " has an empty segment at byte " + std::to_string(i) +
                        " of the key; keys are ASCII names joined by '.'");
      }
      segment = 0;
      continue;
    }
    const bool allowed =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!allowed) {
      return fail(at, field,
                  "key " + quoted_text(key) + " holds " + quoted_text(std::string(1, c)) + " at byte " +
                      std::to_string(i) +
                      " of the key; keys are ASCII letters, digits, '_' and '-' "
                      "joined by '.'");
    }
    ++segment;
  }
  if (segment == 0) {
    return fail(at, field, "key " + quoted_text(key) + " ends with '.'; keys are ASCII names joined by '.'");
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<void> check_utf8(const std::string &text, std::uint64_t at, std::string_view field, const Failure &fail) {
  if (const auto bad = first_invalid_utf8(text)) {
    return fail(at, field, quoted_text(text) + " is not valid UTF-8 (byte " + std::to_string(*bad) + ")");
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

Result<GgufValueType> value_type(Cursor &cursor, std::string_view field, const Failure &fail) {
  const std::uint64_t at = cursor.position();
  BOOST_OUTCOME_TRY(raw, cursor.u32(field));
  if (raw > static_cast<std::uint32_t>(GgufValueType::kF64)) {
    return fail(at, field, "value type " + std::to_string(raw) + " is not one of 0-12", 12, raw);
  }
  return static_cast<GgufValueType>(raw);
}

// `count` elements of `type` (not an array), appended to `value`.
Result<void> read_elements(Cursor &cursor, GgufValueType type, std::uint64_t count, GgufValue &value,
                           const std::string &field, const Failure &fail) {
  const std::uint64_t at = cursor.position();
  if (type == GgufValueType::kString) {
    // Each string takes at least its 8-byte length.
    if (count > cursor.remaining() / 8) {
      return fail(at, field,
                  std::to_string(count) + " strings need at least " + std::to_string(8) +
                      " bytes each, more than the " + std::to_string(cursor.remaining()) + " bytes left in the file",
                  cursor.remaining() / 8, count);
    }
    for (std::uint64_t i = 0; i < count; ++i) {
      BOOST_OUTCOME_TRY(text, cursor.string(field, kGgufMaxStringBytes, "1 GiB"));
      value.strings.push_back(std::move(text));
    }
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  }
  const std::uint64_t size = value_size(type);
  const auto total = checked_mul(count, size);
  if (!total || *total > cursor.remaining()) {
    return fail(at, field,
                std::to_string(count) + " values of " + std::string(gguf_value_type_name(type)) +
                    " run past the end of the file: " + std::to_string(cursor.remaining()) + " bytes remain",
                cursor.remaining(), total.value_or(UINT64_MAX));
  }
  value.raw.resize(static_cast<std::size_t>(*total));
  return cursor.bytes(value.raw, field);
}

Result<GgufValue> read_value(Cursor &cursor, GgufValueType type, const std::string &field, const Failure &fail) {
  GgufValue value;
  value.type = type;
  value.element_type = type;
  if (type != GgufValueType::kArray) {
    BOOST_OUTCOME_TRY(read_elements(cursor, type, 1, value, field, fail));
    return value;
  }
  const std::uint64_t type_at = cursor.position();
  BOOST_OUTCOME_TRY(element_type, value_type(cursor, field + " (array element type)", fail));
  value.element_type = element_type;
  if (value.element_type == GgufValueType::kArray) {
    return fail(type_at, field, "an array of arrays: nested arrays are not allowed");
  }
  BOOST_OUTCOME_TRY(count, cursor.u64(field + " (array length)"));
  value.count = count;
  BOOST_OUTCOME_TRY(read_elements(cursor, value.element_type, value.count, value, field, fail));
  return value;
}

std::uint64_t pad_amount(std::uint64_t offset, std::uint64_t alignment) {
  const std::uint64_t rest = offset % alignment;
  return rest == 0 ? 0 : alignment - rest;
}

Result<std::uint64_t> padded(std::uint64_t offset, std::uint64_t alignment, std::uint64_t at, std::string_view field,
                             const Failure &fail) {
  const auto sum = checked_add(offset, pad_amount(offset, alignment));
  if (!sum) {
    return fail(at, field, std::to_string(offset) + " padded to " + std::to_string(alignment) + " overflows 64 bits");
  }
  return *sum;
}

Result<std::uint64_t> alignment_of(const GgufFile &file, const std::vector<std::uint64_t> &value_offsets,
                                   const Failure &fail) {
  const auto found = file.value_index.find("general.alignment");
  if (found == file.value_index.end()) return kGgufDefaultAlignment;
  const GgufValue &value = file.metadata[found->second].second;
  const std::uint64_t at = value_offsets[found->second];
  if (value.type != GgufValueType::kU32) {
    return fail(at, "general.alignment",
                "is of type " + std::string(gguf_value_type_name(value.type)) + ", expected u32",
                static_cast<std::uint64_t>(GgufValueType::kU32), static_cast<std::uint64_t>(value.type));
  }
  const std::uint64_t alignment = *value.unsigned_integer();
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    return fail(at, "general.alignment", std::to_string(alignment) + " is not a power of two");
  }
  return alignment;
}

Result<GgufTensor> read_tensor_info(Cursor &cursor, std::size_t index, const Failure &fail) {
  GgufTensor tensor;
  tensor.info_offset = cursor.position();
  const std::string field = "tensor #" + std::to_string(index);
  const std::uint64_t name_at = cursor.position();
  BOOST_OUTCOME_TRY(name, cursor.string(field + " name", kGgufMaxNameBytes, "ggml names are shorter than 64"));
  tensor.name = name;
  if (tensor.name.empty()) return fail(name_at, field + " name", "is empty");
  BOOST_OUTCOME_TRY(check_utf8(tensor.name, name_at, field + " name", fail));
  // C reads a name up to its first NUL: "a\0x" would be taken for another tensor, "a".
  if (const std::size_t nul = tensor.name.find('\0'); nul != std::string::npos) {
    return fail(name_at, field + " name",
                quoted_text(tensor.name) + " holds a NUL byte at position " + std::to_string(nul) +
                    " (its bytes begin at byte " + std::to_string(name_at + 8) +
                    "); C reads a name up to its first NUL, so it would read as " +
                    quoted_text(tensor.name.substr(0, nul)));
  }
  const std::string named = "tensor " + quoted_text(tensor.name);

  const std::uint64_t dims_at = cursor.position();
  BOOST_OUTCOME_TRY(dims, cursor.u32(named + " dimension count"));
  if (dims == 0 || dims > kGgufMaxDims) {
    return fail(dims_at, named + " dimension count",
                std::to_string(dims) + " dimensions, expected 1 to " + std::to_string(kGgufMaxDims), kGgufMaxDims,
                dims);
  }
  for (std::uint32_t d = 0; d < dims; ++d) {
    const std::uint64_t at = cursor.position();
    const std::string dim_field = named + " ne[" + std::to_string(d) + "]";
    BOOST_OUTCOME_TRY(ne, cursor.u64(dim_field));
    if (ne > kMaxSignedDimension) {
      return fail(at, dim_field,
                  "is negative as a signed 64-bit number (" + std::to_string(static_cast<std::int64_t>(ne)) + ")");
    }
    tensor.ne.push_back(ne);
  }

  const std::uint64_t type_at = cursor.position();
  BOOST_OUTCOME_TRY(type_id, cursor.u32(named + " type"));
  tensor.type = gguf_type(type_id);
  if (!tensor.type) {
    if (const auto removed = gguf_removed_type_name(type_id)) {
      return fail(type_at, named + " type",
                  "type " + std::to_string(type_id) + " (" + std::string(*removed) +
                      ") was removed from ggml and cannot be read");
    }
    return fail(type_at, named + " type",
                "unknown type id " + std::to_string(type_id) + " (known: " + type_names() + ")");
  }

  // ggml's rules: the first dimension is whole blocks, and the element count
  // fits a signed 64-bit number.
  const std::uint64_t per_block = tensor.type->values_per_block;
  if (tensor.ne[0] % per_block != 0) {
    return fail(type_at, named + " ne[0]",
                std::to_string(tensor.ne[0]) + " values are not a whole number of " + std::string(tensor.type->name) +
                    " blocks of " + std::to_string(per_block),
                0, tensor.ne[0] % per_block);
  }
  const auto elements = checked_product(tensor.ne);
  if (!elements || *elements > kMaxSignedDimension) {
    return fail(dims_at, named + " dimensions",
                "ne " + shape_text(tensor.ne) + " hold more elements than a signed 64-bit number can count");
  }
  std::vector<std::uint64_t> blocks = tensor.ne;
  blocks[0] /= per_block;
  const auto block_count = checked_product(blocks);
  const auto bytes = block_count ? checked_mul(*block_count, tensor.type->bytes_per_block) : std::nullopt;
  if (!bytes) {
    return fail(dims_at, named + " dimensions",
                "ne " + shape_text(tensor.ne) + " of " + std::string(tensor.type->name) +
                    " hold more bytes than 64 bits can count");
  }
  tensor.bytes = *bytes;
  BOOST_OUTCOME_TRY(offset, cursor.u64(named + " offset"));
  tensor.offset = offset;
  return tensor;
}

Result<GgufFile> parse(Cursor::ReadAt read_at, std::uint64_t file_size, const std::filesystem::path &path) {
  const Failure fail{path.string()};
  Cursor cursor(std::move(read_at), file_size, fail);
  GgufFile file;
  file.path = path;
  file.file_size = file_size;

  std::byte magic[4];
  if (file_size < 4) {
    return fail(0, "magic", "the file is " + std::to_string(file_size) + " bytes, too short for the GGUF magic", 4,
                file_size);
  }
  BOOST_OUTCOME_TRY(cursor.bytes(magic, "magic"));
  if (!has_gguf_magic(magic)) {
    return fail(0, "magic",
                "is " + quoted_text(std::string_view(reinterpret_cast<const char *>(magic), 4)) +
                    ", expected \"GGUF\": not a GGUF file");
  }
  BOOST_OUTCOME_TRY(version, cursor.u32("version"));
  file.version = version;
  if (file.version == 1) {
    return fail(4, "version",
                "version 1 is not supported (it predates 64-bit counts); this reader reads versions 2 and 3",
                kGgufMaxVersion, 1);
  }
  if (file.version != 0 && (file.version & 0xFFFF) == 0) {
    return fail(4, "version",
                "version " + hex32(file.version) +
                    " is byte-swapped: this is a big-endian GGUF file, and only little-endian files can be read",
                kGgufMaxVersion, file.version);
  }
  if (file.version < kGgufMinVersion || file.version > kGgufMaxVersion) {
    return fail(4, "version",
                "version " + std::to_string(file.version) + " is not supported; this reader reads versions 2 and 3",
                kGgufMaxVersion, file.version);
  }
  BOOST_OUTCOME_TRY(tensor_count, cursor.u64("tensor count"));
  BOOST_OUTCOME_TRY(kv_count, cursor.u64("key-value count"));
  const std::uint64_t body = cursor.remaining();
  if (tensor_count > body / kMinTensorInfoBytes) {
    return fail(8, "tensor count",
                std::to_string(tensor_count) + " tensors cannot fit in the " + std::to_string(body) +
                    " bytes after the header (each tensor info takes at least " + std::to_string(kMinTensorInfoBytes) +
                    ")",
                body / kMinTensorInfoBytes, tensor_count);
  }
  if (tensor_count > kMaxTensorsPerFile) {
    return fail(8, "tensor count",
                std::to_string(tensor_count) + " tensors, more than the limit of " +
                    std::to_string(kMaxTensorsPerFile) + " tensors in one file",
                kMaxTensorsPerFile, tensor_count);
  }
  if (kv_count > body / kMinKeyValueBytes) {
    return fail(16, "key-value count",
                std::to_string(kv_count) + " key-value pairs cannot fit in the " + std::to_string(body) +
                    " bytes after the header (each takes at least " + std::to_string(kMinKeyValueBytes) + ")",
                body / kMinKeyValueBytes, kv_count);
  }

  std::vector<std::uint64_t> value_offsets;  // where each value starts
  std::vector<std::uint64_t> key_offsets;    // where each key starts
  for (std::uint64_t i = 0; i < kv_count; ++i) {
    const std::string field = "key #" + std::to_string(i);
    const std::uint64_t key_at = cursor.position();
    BOOST_OUTCOME_TRY(key, cursor.string(field, kGgufMaxStringBytes, "1 GiB"));
    BOOST_OUTCOME_TRY(check_utf8(key, key_at, field, fail));
    BOOST_OUTCOME_TRY(check_key_name(key, key_at, field, fail));
    const std::string value_field = "value of " + quoted_text(key);
    const std::uint64_t value_at = cursor.position();
    BOOST_OUTCOME_TRY(type, value_type(cursor, value_field, fail));
    BOOST_OUTCOME_TRY(value, read_value(cursor, type, value_field, fail));
    const auto [it, inserted] = file.value_index.emplace(key, file.metadata.size());
    if (!inserted) {
      return fail(
          key_at, field,
          "duplicate key " + quoted_text(key) + " (first at byte " + std::to_string(key_offsets[it->second]) + ")");
    }
    file.metadata.emplace_back(std::move(key), std::move(value));
    value_offsets.push_back(value_at);
    key_offsets.push_back(key_at);
  }
  BOOST_OUTCOME_TRY(alignment, alignment_of(file, value_offsets, fail));
  file.alignment = alignment;

  std::uint64_t expected_offset = 0;
  for (std::uint64_t i = 0; i < tensor_count; ++i) {
    BOOST_OUTCOME_TRY(tensor, read_tensor_info(cursor, static_cast<std::size_t>(i), fail));
    const std::string named = "tensor " + quoted_text(tensor.name);
    const std::uint64_t offset_at = cursor.position() - 8;
    if (const auto [it, inserted] = file.tensor_index.emplace(tensor.name, file.tensors.size()); !inserted) {
      return fail(tensor.info_offset, named + " name",
                  "duplicate tensor name (first at byte " + std::to_string(file.tensors[it->second].info_offset) + ")");
    }
    if (tensor.offset != expected_offset) {
      const std::string after = file.tensors.empty()
                                    ? std::string("the first tensor starts the data section at 0")
                                    : "the previous tensor " + quoted_text(file.tensors.back().name) + " ends at " +
                                          std::to_string(file.tensors.back().offset + file.tensors.back().bytes) +
                                          ", padded to the alignment of " + std::to_string(file.alignment) +
                                          " that is " + std::to_string(expected_offset);
      return fail(offset_at, named + " offset",
                  "is " + std::to_string(tensor.offset) + ", expected " + std::to_string(expected_offset) + ": " +
                      after +
                      (tensor.offset < expected_offset ? " (the tensors would overlap)"
                                                       : " (offsets must follow each other without gaps)"),
                  expected_offset, tensor.offset);
    }
    const auto end = checked_add(tensor.offset, tensor.bytes);
    if (!end) return fail(offset_at, named + " offset", "offset plus size overflows 64 bits");
    BOOST_OUTCOME_TRY(next_offset, padded(*end, file.alignment, offset_at, named + " offset", fail));
    expected_offset = next_offset;
    file.tensors.push_back(std::move(tensor));
  }

  BOOST_OUTCOME_TRY(data_offset, padded(cursor.position(), file.alignment, cursor.position(), "data section", fail));
  file.data_offset = data_offset;
  for (const GgufTensor &tensor : file.tensors) {
    const std::string named = "tensor " + quoted_text(tensor.name);
    const auto begin = checked_add(file.data_offset, tensor.offset);
    const auto end = begin ? checked_add(*begin, tensor.bytes) : std::nullopt;
    if (!end || *end > file_size) {
      return fail(tensor.info_offset, named + " data",
                  std::to_string(tensor.bytes) + " bytes at data offset " + std::to_string(tensor.offset) +
                      " (file offset " + (begin ? std::to_string(*begin) : std::string("past 2^64")) +
                      ") run past the end of the " + std::to_string(file_size) + "-byte file",
                  file_size, end.value_or(UINT64_MAX));
    }
  }
  return file;
}

}  // namespace

bool has_gguf_magic(std::span<const std::byte> first_bytes) {
  return first_bytes.size() >= 4 && std::memcmp(first_bytes.data(), "GGUF", 4) == 0;
}

std::string_view gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::kU8:
      return "u8";
    case GgufValueType::kI8:
      return "i8";
    case GgufValueType::kU16:
      return "u16";
    case GgufValueType::kI16:
      return "i16";
    case GgufValueType::kU32:
      return "u32";
    case GgufValueType::kI32:
      return "i32";
    case GgufValueType::kF32:
      return "f32";
    case GgufValueType::kBool:
      return "bool";
    case GgufValueType::kString:
      return "string";
    case GgufValueType::kArray:
      return "array";
    case GgufValueType::kU64:
      return "u64";
    case GgufValueType::kI64:
      return "i64";
    case GgufValueType::kF64:
      return "f64";
  }
  return "";
}

std::span<const GgufType> gguf_types() { return kTypes; }

const GgufType *gguf_type(std::uint32_t id) {
  for (const GgufType &type : gguf_types()) {
    if (type.id == id) return &type;
  }
  return nullptr;
}

std::optional<std::string_view> gguf_removed_type_name(std::uint32_t id) {
  for (const auto &[removed, name] : kRemovedTypes) {
    if (removed == id) return name;
  }
  return std::nullopt;
}

std::optional<double> GgufValue::number(std::uint64_t i) const {
  const std::uint64_t size = value_size(element_type);
  if (size == 0 || i >= count || (i + 1) * size > raw.size()) return std::nullopt;
  const std::uint64_t bits = read_le(raw.data() + i * size, size);
  switch (element_type) {
    case GgufValueType::kU8:
    case GgufValueType::kU16:
    case GgufValueType::kU32:
    case GgufValueType::kU64:
      return static_cast<double>(bits);
    case GgufValueType::kBool:
      return bits != 0 ? 1.0 : 0.0;
    case GgufValueType::kI8:
      return static_cast<double>(static_cast<std::int8_t>(bits));
    case GgufValueType::kI16:
      return static_cast<double>(static_cast<std::int16_t>(bits));
    case GgufValueType::kI32:
      return static_cast<double>(static_cast<std::int32_t>(bits));
    case GgufValueType::kI64:
      return static_cast<double>(static_cast<std::int64_t>(bits));
    case GgufValueType::kF32:
      return static_cast<double>(std::bit_cast<float>(static_cast<std::uint32_t>(bits)));
    case GgufValueType::kF64:
      return std::bit_cast<double>(bits);
    case GgufValueType::kString:
    case GgufValueType::kArray:
      break;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> GgufValue::unsigned_integer(std::uint64_t i) const {
  const std::uint64_t size = value_size(element_type);
  if (size == 0 || i >= count || (i + 1) * size > raw.size()) return std::nullopt;
  const std::uint64_t bits = read_le(raw.data() + i * size, size);
  switch (element_type) {
    case GgufValueType::kU8:
    case GgufValueType::kU16:
    case GgufValueType::kU32:
    case GgufValueType::kU64:
      return bits;
    case GgufValueType::kI8:
      return static_cast<std::int8_t>(bits) < 0 ? std::nullopt : std::optional<std::uint64_t>(bits);
    case GgufValueType::kI16:
      return static_cast<std::int16_t>(bits) < 0 ? std::nullopt : std::optional<std::uint64_t>(bits);
    case GgufValueType::kI32:
      return static_cast<std::int32_t>(bits) < 0 ? std::nullopt : std::optional<std::uint64_t>(bits);
    case GgufValueType::kI64:
      return static_cast<std::int64_t>(bits) < 0 ? std::nullopt : std::optional<std::uint64_t>(bits);
    default:
      return std::nullopt;
  }
}

const std::string *GgufValue::string(std::uint64_t i) const {
  if (element_type != GgufValueType::kString || i >= strings.size()) return nullptr;
  return &strings[static_cast<std::size_t>(i)];
}

std::vector<std::uint64_t> GgufTensor::shape() const { return {ne.rbegin(), ne.rend()}; }

std::vector<std::uint64_t> GgufTensor::block_grid() const {
  std::vector<std::uint64_t> grid = shape();
  grid.back() /= type->values_per_block;
  return grid;
}

std::vector<std::uint64_t> GgufTensor::byte_shape() const {
  std::vector<std::uint64_t> bytes = block_grid();
  bytes.back() *= type->bytes_per_block;  // bounded by the checked byte count
  return bytes;
}

const GgufValue *GgufFile::find_value(std::string_view key) const {
  const auto found = value_index.find(key);
  return found == value_index.end() ? nullptr : &metadata[found->second].second;
}

const GgufTensor *GgufFile::find_tensor(std::string_view name) const {
  const auto found = tensor_index.find(name);
  return found == tensor_index.end() ? nullptr : &tensors[found->second];
}

Result<GgufFile> parse_gguf(std::span<const std::byte> file_bytes, std::string_view file_name) {
  auto read_at = [file_bytes](std::span<std::byte> into, std::uint64_t offset) -> Result<void> {
    std::memcpy(into.data(), file_bytes.data() + offset, into.size());  // the cursor checked the range
    return BOOST_OUTCOME_V2_NAMESPACE::success();
  };
  return parse(read_at, file_bytes.size(), std::filesystem::path(file_name));
}

Result<GgufFile> open_gguf(const std::filesystem::path &path) {
  auto file = InputFile::open(path, kOperation);
  if (!file) return file.error();
  return open_gguf(file.value());
}

Result<GgufFile> open_gguf(const InputFile &input) {
  auto read_at = [&input](std::span<std::byte> into, std::uint64_t offset) { return input.read_exact(into, offset); };
  return parse(read_at, input.size(), input.path());
}

}  // namespace rootspan::weights
