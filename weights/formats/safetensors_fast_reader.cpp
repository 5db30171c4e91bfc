#include "weights/formats/safetensors_fast_reader.hpp"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <unordered_set>

#include <simdjson.h>

#include "weights/formats/limits.hpp"

namespace rootspan::weights {

namespace {

// Whether the quote at text[at] is escaped: an odd run of backslashes before it.
bool escaped(std::string_view text, std::size_t at) {
  std::size_t backslashes = 0;
  while (backslashes < at && text[at - 1 - backslashes] == '\\') ++backslashes;
  return backslashes % 2 == 1;
}

}  // namespace

bool safetensors_outline_plausible(std::string_view text) {
  constexpr std::size_t kLevels = 3;
  char open[kLevels] = {};          // the containers entered: '{' or '['
  std::size_t items[kLevels] = {};  // the members or elements of each, counted by their commas
  std::size_t depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    switch (text[i]) {
      case '"':  // on to the string's closing quote: the next one with an even run of backslashes before it
        do {
          i = text.find('"', i + 1);
          if (i == std::string_view::npos) return true;  // unterminated: simdjson refuses it
        } while (escaped(text, i));
        break;
      case '-':
        return false;
      case '{':
      case '[':
        if (depth == kLevels) return false;
        open[depth] = text[i];
        items[depth++] = 1;
        break;
      case '}':
      case ']':
        if (depth == 0) return false;
        --depth;
        break;
      case ',': {
        if (depth == 0) break;  // after the header: simdjson refuses the text
        const std::size_t limit = open[depth - 1] == '[' ? kMaxTensorRank : kMaxTensorsPerFile;
        if (++items[depth - 1] > limit) return false;
        break;
      }
      default:
        break;
    }
  }
  return true;
}

namespace {

namespace dom = simdjson::dom;

constexpr unsigned kDtype = 1, kShape = 2, kOffsets = 4;

// A JSON integer of at least 0: simdjson types those up to 2^63 - 1 as int64
// and the rest up to 2^64 - 1 as uint64.
bool read_unsigned(dom::element value, std::uint64_t &out) {
  switch (value.type()) {
    case dom::element_type::INT64: {
      const std::int64_t n = value.get_int64().value_unsafe();
      if (n < 0) return false;
      out = static_cast<std::uint64_t>(n);
      return true;
    }
    case dom::element_type::UINT64:
      out = value.get_uint64().value_unsafe();
      return true;
    default:
      return false;  // a fraction, an exponent, or not a number
  }
}

bool read_shape(dom::element value, std::vector<std::uint64_t> &shape) {
  dom::array dims;
  if (value.get_array().get(dims) != simdjson::SUCCESS || dims.size() > kMaxTensorRank) return false;
  shape.reserve(dims.size());
  for (dom::element dim : dims) {
    std::uint64_t n = 0;
    if (!read_unsigned(dim, n)) return false;
    shape.push_back(n);
  }
  return true;
}

bool read_offsets(dom::element value, TensorInfo &t) {
  dom::array offsets;
  if (value.get_array().get(offsets) != simdjson::SUCCESS || offsets.size() != 2) return false;
  return read_unsigned(offsets.at(0).value_unsafe(), t.begin) && read_unsigned(offsets.at(1).value_unsafe(), t.end) &&
         t.begin <= t.end;
}

// One tensor's entry: exactly the three fields, each once.
bool read_entry(dom::element value, TensorInfo &t) {
  dom::object entry;
  if (value.get_object().get(entry) != simdjson::SUCCESS) return false;
  unsigned seen = 0;
  for (dom::key_value_pair field : entry) {
    const unsigned which = field.key == "dtype"          ? kDtype
                           : field.key == "shape"        ? kShape
                           : field.key == "data_offsets" ? kOffsets
                                                         : 0;
    if (which == 0 || (seen & which) != 0) return false;  // unknown or repeated
    seen |= which;
    if (which == kDtype) {
      std::string_view name;
      if (field.value.get_string().get(name) != simdjson::SUCCESS) return false;
      const auto dtype = safetensors_dtype(name);
      if (!dtype) return false;
      t.dtype = *dtype;
    } else if (!(which == kShape ? read_shape(field.value, t.shape) : read_offsets(field.value, t))) {
      return false;
    }
  }
  return seen == (kDtype | kShape | kOffsets);
}

// "__metadata__": an object of strings, no key twice; null is none (as the
// reference reads it).
bool read_metadata(dom::element value, SafetensorsFields &out) {
  if (value.is_null()) return true;
  dom::object metadata;
  if (value.get_object().get(metadata) != simdjson::SUCCESS) return false;
  out.has_metadata = true;
  for (dom::key_value_pair entry : metadata) {
    std::string_view text;
    if (out.metadata.size() >= kMaxTensorsPerFile || entry.value.get_string().get(text) != simdjson::SUCCESS) {
      return false;
    }
    if (!out.metadata.emplace(std::string(entry.key), std::string(text)).second) return false;
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

bool read_header(std::string_view header_json, SafetensorsFields &out) {
  if (!safetensors_outline_plausible(header_json)) return false;
  dom::parser parser;  // parse() copies the text into its own padded buffer
  dom::object header;
  if (parser.parse(header_json.data(), header_json.size()).get_object().get(header) != simdjson::SUCCESS) {
    return false;  // a syntax error, text after the end, bad escapes, a number out of range, not an object
  }
  bool seen_metadata = false;
  out.tensors.reserve(std::min<std::size_t>(header.size(), kMaxTensorsPerFile));
  for (dom::key_value_pair entry : header) {
    if (out.tensors.size() + (seen_metadata ? 1 : 0) >= kMaxTensorsPerFile) return false;
    if (entry.key == "__metadata__") {
      if (seen_metadata) return false;
      seen_metadata = true;
      if (!read_metadata(entry.value, out)) return false;
      continue;
    }
    if (entry.key.find('\0') != std::string_view::npos) return false;  // refused, with its offset, by the strict reader
    TensorInfo &t = out.tensors.emplace_back();
    t.name = entry.key;
    if (!read_entry(entry.value, t)) return false;
  }
  return names_unique(out.tensors);
}

}  // namespace

std::optional<SafetensorsFields> read_safetensors_fields_fast(std::string_view header_json) {
  SafetensorsFields fields;
  try {
    if (!read_header(header_json, fields)) return std::nullopt;
  } catch (const std::exception &) {
    return std::nullopt;  // out of memory, or anything else: the strict parser says what
  }
  return fields;
}

}  // namespace rootspan::weights
