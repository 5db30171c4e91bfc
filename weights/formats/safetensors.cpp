#include "weights/formats/safetensors.hpp"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>

#include "core/sha256.hpp"
#include "core/text/quoting.hpp"
#include "core/text/strict_json.hpp"
#include "weights/files/checked_math.hpp"
#include "weights/files/input_file.hpp"
#include "weights/formats/limits.hpp"
#include "weights/formats/safetensors_fast_reader.hpp"

namespace rootspan::weights {

namespace {

using nlohmann::json;

constexpr const char *kOperation = "open_checkpoint";

// Every cause starts with the file; tensor causes go on with the tensor.
struct Failure {
  std::string_view file;

  Diagnostic operator()(const std::string &cause) const {
    return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, quoted_text(file) + ": " + cause);
  }
  Diagnostic operator()(const std::string &cause, std::uint64_t expected, std::uint64_t actual) const {
    return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, quoted_text(file) + ": " + cause, expected, actual);
  }
};

std::string tensor(std::string_view name) { return "tensor " + quoted_text(name) + ": "; }

std::string range_text(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

std::string dtype_names() {
  std::string names;
  for (const auto &entry : safetensors_dtypes()) {
    if (!names.empty()) names += ", ";
    names += entry.name;
  }
  return names;
}

// A JSON value as a short text for causes: numbers and strings as written,
// containers by kind only.
std::string value_text(const json &value) {
  if (value.is_string()) return quoted_text(value.get_ref<const std::string &>());
  if (value.is_number() || value.is_boolean() || value.is_null()) return value.dump();
  return std::string("an ") + value.type_name();
}

// `what` names the array in a cause; it is called only on a failure, so that
// a valid header of many tensors builds no message text.
template <class What>
Result<std::vector<std::uint64_t>> unsigned_array(const json &value, const What &what, const Failure &fail) {
  if (!value.is_array()) return fail(what() + " is " + value_text(value) + ", not an array");
  std::vector<std::uint64_t> out;
  out.reserve(value.size());
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_number_unsigned()) {
      return fail(what() + "[" + std::to_string(i) + "] is " + value_text(value[i]) + ", not a non-negative integer");
    }
    out.push_back(value[i].get<std::uint64_t>());
  }
  return out;
}

// Where the top-level key `key` begins in `text`, valid JSON: the offset of
// its opening quote, or nullopt. Called only on a failure, to point at a name.
std::optional<std::size_t> top_level_key_offset(std::string_view text, std::string_view key) {
  std::size_t depth = 0;
  bool key_next = false;  // the next string at depth 1 is a key
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t begin = i;
      for (++i; i < text.size() && text[i] != '"'; ++i) {
        if (text[i] == '\\') ++i;  // an escape: the next byte is never the closing quote
      }
      if (depth == 1 && key_next) {
        key_next = false;
        try {
          if (json::parse(text.substr(begin, i + 1 - begin)).get_ref<const std::string &>() == key) return begin;
        } catch (const std::exception &) {
          return std::nullopt;
        }
      }
    } else if (c == '{' || c == '[') {
      ++depth;
      key_next = c == '{' && depth == 1;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 1) {
      key_next = true;
    }
  }
  return std::nullopt;
}

// A name with a NUL byte is refused: C reads a name up to its first NUL, so
// through the C interface "a\0x" would be taken for another tensor, "a".
Result<void> check_name(const std::string &name, std::string_view header_json, const Failure &fail) {
  const std::size_t nul = name.find('\0');
  if (nul == std::string::npos) return BOOST_OUTCOME_V2_NAMESPACE::success();
  const auto at = top_level_key_offset(header_json, name);
  const std::string where =
      at ? " (the name begins at byte " + std::to_string(kSafetensorsPrefix + *at) + " of the file)" : std::string();
  return fail(tensor(name) + "the name holds a NUL byte at position " + std::to_string(nul) + where +
              "; C reads a name up to its first NUL, so it would read as " + quoted_text(name.substr(0, nul)));
}

Result<TensorInfo> parse_entry(const std::string &name, const json &entry, const Failure &fail) {
  // The cause prefix, built only on a failure.
  const auto at = [&] { return tensor(name); };
  if (!entry.is_object()) return fail(at() + "entry is " + value_text(entry) + ", not an object");
  // A missing field first: every reader refuses that; an unknown one only the strict ones.
  for (const char *field : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(field)) return fail(at() + "missing field \"" + field + "\"");
  }
  for (const auto &[key, _] : entry.items()) {
    if (key != "dtype" && key != "shape" && key != "data_offsets") {
      return fail(at() + "unknown field " + quoted_text(key) + " (expected dtype, shape, data_offsets)");
    }
  }

  TensorInfo info;
  info.name = name;
  const json &dtype = entry["dtype"];
  if (!dtype.is_string()) return fail(at() + "dtype is " + value_text(dtype) + ", not a string");
  const auto found = safetensors_dtype(std::string_view(dtype.get_ref<const std::string &>()));
  if (!found) {
    return fail(at() + "unknown dtype " + quoted_text(dtype.get_ref<const std::string &>()) +
                " (known: " + dtype_names() + ")");
  }
  info.dtype = *found;

  auto shape = unsigned_array(
      entry["shape"], [&] { return at() + "shape"; }, fail);
  if (!shape) return shape.error();
  info.shape = std::move(shape).value();

  auto offsets = unsigned_array(
      entry["data_offsets"], [&] { return at() + "data_offsets"; }, fail);
  if (!offsets) return offsets.error();
  if (offsets.value().size() != 2) {
    return fail(at() + "data_offsets has " + std::to_string(offsets.value().size()) + " entries, expected 2", 2,
                offsets.value().size());
  }
  info.begin = offsets.value()[0];
  info.end = offsets.value()[1];
  if (info.end < info.begin) {
    return fail(at() + "data_offsets " + range_text(info.begin, info.end) + " end before they begin", info.begin,
                info.end);
  }
  return info;
}

// end - begin must be exactly the bytes the shape and dtype need.
Result<void> check_size(const TensorInfo &info, const Failure &fail) {
  const auto at = [&] { return tensor(info.name); };
  const auto what = [&] { return "shape " + shape_text(info.shape) + " of " + std::string(info.dtype.name); };
  const auto elements = checked_product(info.shape);
  if (!elements) return fail(at() + what() + " has more elements than 64 bits can count");
  const auto bits = checked_bits(*elements, info.dtype.bits);
  if (!bits) return fail(at() + what() + " has more bits than 64 bits can count");
  if (!bits->whole_bytes()) {
    return fail(at() + what() + " is " + std::to_string(bits->bits) + " bits, not a whole number of bytes");
  }
  if (bits->bytes() != info.byte_length()) {
    return fail(at() + "data_offsets " + range_text(info.begin, info.end) + " hold " +
                    std::to_string(info.byte_length()) + " bytes, but " + what() + " needs " +
                    std::to_string(bits->bytes()),
                bits->bytes(), info.byte_length());
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

std::uint64_t read_le64(std::span<const std::byte> bytes) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | std::to_integer<std::uint64_t>(bytes[i]);
  return value;
}

// The header length against the limit and the file, before any allocation.
Result<void> check_header_length(std::uint64_t header_size, std::uint64_t file_size, const Failure &fail) {
  if (header_size > kMaxSafetensorsHeader) {
    return fail("header length " + std::to_string(header_size) + " exceeds the limit of " +
                    std::to_string(kMaxSafetensorsHeader) + " bytes",
                kMaxSafetensorsHeader, header_size);
  }
  if (kSafetensorsPrefix + header_size > file_size) {
    return fail("header length " + std::to_string(header_size) + " runs past the end of the file: 8 + " +
                    std::to_string(header_size) + " > " + std::to_string(file_size) + " bytes",
                file_size, kSafetensorsPrefix + header_size);
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

// A JSON document where a safetensors file was expected (most often a shard
// index given as a shard): its first bytes are text opening an object or an
// array, never a header length the limit allows.
bool looks_like_json(std::span<const std::byte> prefix) {
  for (const std::byte b : prefix) {
    const char c = static_cast<char>(b);
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    return c == '{' || c == '[';
  }
  return false;
}

// A refused header length, said plainly when the file is JSON text; the
// refusal's numbers stay.
Diagnostic explain_header_length(Diagnostic refused, std::span<const std::byte> prefix, std::string_view file_name) {
  if (!looks_like_json(prefix)) return refused;
  const std::string named = quoted_text(file_name) + ": ";
  const std::string detail = refused.cause.starts_with(named) ? refused.cause.substr(named.size()) : refused.cause;
  refused.cause = named + "looks like a JSON file, not a safetensors file (read as safetensors, its " + detail +
                  "); a shard index such as model.safetensors.index.json is not a shard: pass the index file "
                  "itself, or the folder that holds it, as the checkpoint";
  return refused;
}

Result<void> check_prefix_size(std::uint64_t file_size, const Failure &fail) {
  if (file_size < kSafetensorsPrefix) {
    return fail("file is " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length",
                kSafetensorsPrefix, file_size);
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace

SafetensorsHeader::SafetensorsHeader(std::map<std::string, std::string> metadata, std::vector<TensorInfo> tensors,
                                     std::uint64_t data_size, bool has_metadata)
    : metadata_(std::move(metadata)), has_metadata_(has_metadata), table_(std::move(tensors), data_size) {}

Result<SafetensorsFields> read_safetensors_fields_strictly(std::string_view header_json, std::string_view file_name) {
  const Failure fail{file_name};
  // Bounded while parsing: a shape is at most kMaxTensorRank numbers, the
  // header at most kMaxTensorsPerFile entries.
  const JsonLimits limits{kMaxTensorRank, kMaxTensorsPerFile,
                          "a tensor's shape has at most " + std::to_string(kMaxTensorRank) +
                              " dimensions, a header at most " + std::to_string(kMaxTensorsPerFile) +
                              " entries, __metadata__ included"};
  auto parsed = parse_strict_json(header_json, ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, file_name, limits);
  if (!parsed) return parsed.error();
  const json &root = parsed.value();
  if (!root.is_object()) return fail("header is " + value_text(root) + ", not a JSON object");

  SafetensorsFields fields;
  fields.tensors.reserve(root.size());
  for (const auto &[key, value] : root.items()) {
    if (key == "__metadata__") {
      // null is no metadata: the reference library reads it so, and MLX writes it.
      if (value.is_null()) continue;
      if (!value.is_object()) return fail("__metadata__ is " + value_text(value) + ", not an object or null");
      fields.has_metadata = true;
      for (const auto &[meta_key, meta_value] : value.items()) {
        if (!meta_value.is_string()) {
          return fail("__metadata__ entry " + quoted_text(meta_key) + " is " + value_text(meta_value) +
                      ", not a string");
        }
        fields.metadata.emplace(meta_key, meta_value.get<std::string>());
      }
      continue;
    }
    if (auto named = check_name(key, header_json, fail); !named) return named.error();
    auto info = parse_entry(key, value, fail);
    if (!info) return info.error();
    fields.tensors.push_back(std::move(info).value());
  }
  return fields;
}

Result<SafetensorsHeader> parse_safetensors_header(std::string_view header_json, std::uint64_t data_size,
                                                   std::string_view file_name, std::size_t readable) {
  const Failure fail{file_name};
  if (auto checked = check_json_text(header_json, ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, file_name); !checked) {
    return checked.error();
  }
  std::optional<SafetensorsFields> fast = read_safetensors_fields_fast(header_json, readable);
  if (!fast) {
    auto strict = read_safetensors_fields_strictly(header_json, file_name);
    if (!strict) return strict.error();
    fast = std::move(strict).value();
  }
  std::vector<TensorInfo> &tensors = fast->tensors;

  // Sorted by begin (then end, then name, so the order is total), the
  // tensors must tile the data section: no hole, no overlap, nothing after.
  // Writers list them in that order already (safetensors' own does), which
  // one pass sees: sorting 10,000 sorted tensors cost 2.5 million instructions.
  const auto in_file_order = [](const TensorInfo &a, const TensorInfo &b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  };
  if (!std::is_sorted(tensors.begin(), tensors.end(), in_file_order)) {
    std::sort(tensors.begin(), tensors.end(), in_file_order);
  }
  std::uint64_t cursor = 0;
  const TensorInfo *previous = nullptr;
  for (const TensorInfo &info : tensors) {
    const auto after = [&] {  // built only on a failure
      return previous ? "the previous tensor " + quoted_text(previous->name) + " ends at " + std::to_string(cursor)
                      : std::string("the data section starts at 0");
    };
    if (info.begin > cursor) {
      return fail(tensor(info.name) + "begins at " + std::to_string(info.begin) + " but " + after() + ": a hole of " +
                      std::to_string(info.begin - cursor) + " bytes",
                  cursor, info.begin);
    }
    if (info.begin < cursor) {
      return fail(tensor(info.name) + "begins at " + std::to_string(info.begin) + " but " + after() +
                      ": an overlap of " + std::to_string(cursor - info.begin) + " bytes",
                  cursor, info.begin);
    }
    if (info.end > data_size) {
      return fail(tensor(info.name) + "ends at " + std::to_string(info.end) + ", past the end of the data section (" +
                      std::to_string(data_size) + " bytes)",
                  data_size, info.end);
    }
    auto size = check_size(info, fail);
    if (!size) return size.error();
    cursor = info.end;
    previous = &info;
  }
  if (cursor != data_size) {
    return fail("the tensors end at " + std::to_string(cursor) + " but the data section has " +
                    std::to_string(data_size) + " bytes: " + std::to_string(data_size - cursor) + " trailing bytes",
                data_size, cursor);
  }
  return SafetensorsHeader(std::move(fast->metadata), std::move(tensors), data_size, fast->has_metadata);
}

Result<SafetensorsFile> parse_safetensors(std::span<const std::byte> file_bytes, std::string_view file_name) {
  const Failure fail{file_name};
  if (auto checked = check_prefix_size(file_bytes.size(), fail); !checked) return checked.error();
  const std::uint64_t header_size = read_le64(file_bytes.first(kSafetensorsPrefix));
  if (auto checked = check_header_length(header_size, file_bytes.size(), fail); !checked) {
    return explain_header_length(checked.error(), file_bytes.first(kSafetensorsPrefix), file_name);
  }
  const auto header_bytes = file_bytes.subspan(kSafetensorsPrefix, static_cast<std::size_t>(header_size));
  const std::uint64_t data_size = file_bytes.size() - kSafetensorsPrefix - header_size;
  auto header = parse_safetensors_header(
      std::string_view(reinterpret_cast<const char *>(header_bytes.data()), header_bytes.size()), data_size, file_name);
  if (!header) return header.error();
  return SafetensorsFile{
      std::filesystem::path(file_name), file_bytes.size(), header_size, std::move(header).value(), {}};
}

Result<SafetensorsFile> open_safetensors(const std::filesystem::path &path, ParsedDigests digests) {
  auto file = InputFile::open(path, kOperation, ROOTSPAN_ERR_INVALID_CHECKPOINT);
  if (!file) return file.error();
  return open_safetensors(file.value(), digests);
}

Result<SafetensorsFile> open_safetensors(const InputFile &input, ParsedDigests digests) {
  const std::filesystem::path &path = input.path();
  const std::string file_name = path.string();
  const Failure fail{file_name};
  const InputFile *const file = &input;
  const std::uint64_t file_size = input.size();
  if (auto checked = check_prefix_size(file_size, fail); !checked) return checked.error();

  std::byte prefix[kSafetensorsPrefix];
  if (auto read = file->read_exact(prefix, 0); !read) return read.error();
  const std::uint64_t header_size = read_le64(prefix);
  if (auto checked = check_header_length(header_size, file_size, fail); !checked) {
    return explain_header_length(checked.error(), prefix, file_name);
  }

  // Only now, with N bounded by the limit and the file, is the header read,
  // into a buffer with room after it for the parser to read in place.
  std::string buffer(static_cast<std::size_t>(header_size) + kHeaderReadPadding, '\0');
  const std::string_view header_json(buffer.data(), static_cast<std::size_t>(header_size));
  auto read =
      file->read_exact(std::as_writable_bytes(std::span(buffer.data(), header_json.size())), kSafetensorsPrefix);
  if (!read) return read.error();
  auto header =
      parse_safetensors_header(header_json, file_size - kSafetensorsPrefix - header_size, file_name, buffer.size());
  if (!header) return header.error();
  SafetensorsFile opened{path, file_size, header_size, std::move(header).value(), {}};
  if (digests == ParsedDigests::kTake) {
    // The bytes just parsed, so that a verified load can prove they are the
    // ones it hashes (weights/digests/landing.hpp).
    Sha256 parsed;
    parsed.update(prefix);
    parsed.update(std::as_bytes(std::span(header_json)));
    opened.header_sha256 = parsed.hex_digest();
  }
  return opened;
}

}  // namespace rootspan::weights
