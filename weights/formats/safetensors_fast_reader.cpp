#include "weights/formats/safetensors_fast_reader.hpp"

#include <cstdint>
#include <exception>
#include <unordered_set>
#include <utility>

#include <simdjson.h>

#include "weights/formats/limits.hpp"

namespace rootspan::weights {

namespace {

namespace ondemand = simdjson::ondemand;

constexpr unsigned kDtype = 1, kShape = 2, kOffsets = 4;

// A JSON integer of at least 0 and at most 2^64 - 1: get_uint64 refuses a
// minus sign (-0 included), a fraction, an exponent, anything larger, and
// anything that is not a number.
bool read_unsigned(ondemand::value value, std::uint64_t &out) {
  return value.get_uint64().get(out) == simdjson::SUCCESS;
}

// At most kMaxTensorRank extents, counted as they are read: a shape of
// millions of numbers stops at its 65th.
bool read_shape(ondemand::value value, std::vector<std::uint64_t> &shape) {
  ondemand::array dims;
  if (value.get_array().get(dims) != simdjson::SUCCESS) return false;
  for (auto dim : dims) {
    ondemand::value extent;
    std::uint64_t n = 0;
    if (shape.size() == kMaxTensorRank || dim.get(extent) != simdjson::SUCCESS || !read_unsigned(extent, n)) {
      return false;
    }
    shape.push_back(n);
  }
  return true;
}

bool read_offsets(ondemand::value value, TensorInfo &t) {
  ondemand::array offsets;
  if (value.get_array().get(offsets) != simdjson::SUCCESS) return false;
  std::uint64_t read[2] = {};
  std::size_t count = 0;
  for (auto offset : offsets) {
    ondemand::value number;
    if (count == 2 || offset.get(number) != simdjson::SUCCESS || !read_unsigned(number, read[count])) return false;
    ++count;
  }
  t.begin = read[0];
  t.end = read[1];
  return count == 2 && t.begin <= t.end;
}

// One tensor's entry: exactly the three fields, each once. A field name
// written with escapes is not recognised (the strict reader reads it).
bool read_entry(ondemand::value value, TensorInfo &t) {
  ondemand::object entry;
  if (value.get_object().get(entry) != simdjson::SUCCESS) return false;
  unsigned seen = 0;
  for (auto member : entry) {
    ondemand::field field;
    if (std::move(member).get(field) != simdjson::SUCCESS) return false;
    const ondemand::raw_json_string key = field.key();
    const unsigned which = key == "dtype" ? kDtype : key == "shape" ? kShape : key == "data_offsets" ? kOffsets : 0;
    if (which == 0 || (seen & which) != 0) return false;  // unknown or repeated
    seen |= which;
    if (which == kDtype) {
      std::string_view name;
      if (field.value().get_string().get(name) != simdjson::SUCCESS) return false;
      const auto dtype = safetensors_dtype(name);
      if (!dtype) return false;
      t.dtype = *dtype;
    } else if (!(which == kShape ? read_shape(field.value(), t.shape) : read_offsets(field.value(), t))) {
      return false;
    }
  }
  return seen == (kDtype | kShape | kOffsets);
}

// "__metadata__": an object of strings, no key twice; null is none (as the
// reference reads it).
bool read_metadata(ondemand::value value, SafetensorsFields &out) {
  bool null = false;
  if (value.is_null().get(null) != simdjson::SUCCESS) return false;
  if (null) return true;
  ondemand::object metadata;
  if (value.get_object().get(metadata) != simdjson::SUCCESS) return false;
  out.has_metadata = true;
  for (auto member : metadata) {
    ondemand::field entry;
    std::string_view key;
    std::string_view text;
    if (out.metadata.size() >= kMaxTensorsPerFile || std::move(member).get(entry) != simdjson::SUCCESS ||
        entry.unescaped_key().get(key) != simdjson::SUCCESS) {
      return false;
    }
    std::string owned_key(key);  // the map takes strings
    if (entry.value().get_string().get(text) != simdjson::SUCCESS) return false;
    if (!out.metadata.emplace(std::move(owned_key), std::string(text)).second) return false;
  }
  return true;
}

bool names_unique(const std::vector<TensorInfo> &tensors) {
  std::unordered_set<std::string_view> seen;
  seen.reserve(tensors.size());
  for (const TensorInfo &t : tensors) {
    if (!seen.insert(t.name).second) return false;
  }
  return true;
}

static_assert(simdjson::SIMDJSON_PADDING <= kHeaderReadPadding, "the parser reads further past a text's end");

bool read_header(std::string_view header_json, std::size_t readable, SafetensorsFields &out) {
  // The parser reads up to SIMDJSON_PADDING bytes past the text's end: a text
  // without them is copied into a buffer that has them.
  std::optional<simdjson::padded_string> copy;
  simdjson::padded_string_view text(header_json.data(), header_json.size(), readable);
  if (readable < header_json.size() + kHeaderReadPadding) text = copy.emplace(header_json);
  // simdjson 3.0.1 does not check its string buffer's allocation (5/3 of a
  // byte a character). It makes it first, then the structural index (4 bytes
  // a character), which it checks: where the first cannot be had, the larger
  // second cannot either, and iterate() says MEMALLOC.
  ondemand::parser parser;  // a parser of its own: the buffers it frees serve what the load allocates next
  ondemand::document document;
  ondemand::object header;
  // Finds every structural character and checks the text's UTF-8 and
  // quoting; values are checked as they are read below, every one of them.
  if (parser.iterate(text).get(document) != simdjson::SUCCESS ||
      document.get_object().get(header) != simdjson::SUCCESS) {
    return false;
  }
  // The members are counted first, skipping every value: more than a header
  // may hold are refused before any is read, and the tensors are placed once.
  std::size_t members = 0;
  if (header.count_fields().get(members) != simdjson::SUCCESS || members > kMaxTensorsPerFile) return false;
  out.tensors.reserve(members);
  bool seen_metadata = false;
  for (auto member : header) {
    ondemand::field entry;
    std::string_view name;
    if (std::move(member).get(entry) != simdjson::SUCCESS || entry.unescaped_key().get(name) != simdjson::SUCCESS) {
      return false;  // a syntax error, a bad escape
    }
    if (name == "__metadata__") {
      if (seen_metadata) return false;
      seen_metadata = true;
      if (!read_metadata(entry.value(), out)) return false;
      continue;
    }
    if (name.find('\0') != std::string_view::npos) return false;  // refused, with its offset, by the strict reader
    TensorInfo &t = out.tensors.emplace_back();
    t.name = name;
    if (!read_entry(entry.value(), t)) return false;
  }
  // Nothing may follow the header's object: iteration stops at its end, and
  // only there, past the last structural character, is there no location.
  return document.current_location().error() == simdjson::OUT_OF_BOUNDS && names_unique(out.tensors);
}

}  // namespace

std::optional<SafetensorsFields> read_safetensors_fields_fast(std::string_view header_json, std::size_t readable) {
  SafetensorsFields fields;
  try {
    if (!read_header(header_json, readable, fields)) return std::nullopt;
  } catch (const std::exception &) {
    return std::nullopt;  // out of memory, or anything else: the strict parser says what
  }
  return fields;
}

}  // namespace rootspan::weights
