#include "weights/formats/safetensors_fast_reader.hpp"

#include <cstdint>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "weights/formats/limits.hpp"

namespace rootspan::weights {

namespace {

using json = nlohmann::json;

// Where the reader stands in the header. Every event not listed for the
// current place makes it give up (returns false).
class HeaderEvents {
 public:
  explicit HeaderEvents(SafetensorsFields &out) : out_(out) {}

  // A duplicate tensor name is only known once every name has been read.
  bool names_unique() const {
    std::unordered_set<std::string_view> seen;
    seen.reserve(out_.tensors.size());
    for (const TensorInfo &t : out_.tensors) {
      if (!seen.insert(t.name).second) return false;
    }
    return true;
  }

  bool start_object(std::size_t) {
    switch (place_) {
      case Place::document:
        place_ = Place::header;
        return true;
      case Place::header_value:
        if (in_metadata_) {
          if (seen_metadata_) return false;
          seen_metadata_ = true;
          out_.has_metadata = true;
          place_ = Place::metadata;
        } else {
          place_ = Place::entry;
          fields_ = 0;
        }
        return true;
      default:
        return false;
    }
  }
  bool key(json::string_t &key) {
    switch (place_) {
      case Place::header:
        if (out_.tensors.size() + (seen_metadata_ ? 1 : 0) >= kMaxTensorsPerFile) return false;
        in_metadata_ = key == "__metadata__";
        if (!in_metadata_) {
          if (key.find('\0') != json::string_t::npos) return false;  // refused, with its offset, by the strict reader
          out_.tensors.emplace_back();
          out_.tensors.back().name = std::move(key);
        }
        place_ = Place::header_value;
        return true;
      case Place::metadata:
        if (out_.metadata.size() >= kMaxTensorsPerFile) return false;
        metadata_key_ = std::move(key);
        place_ = Place::metadata_value;
        return true;
      case Place::entry: {
        const Field field = key == "dtype" ? kDtype : key == "shape" ? kShape : key == "data_offsets" ? kOffsets : 0;
        if (field == 0 || (fields_ & field) != 0) return false;  // unknown or repeated
        fields_ |= field;
        field_ = field;
        place_ = Place::entry_value;
        return true;
      }
      default:
        return false;
    }
  }
  bool end_object() {
    switch (place_) {
      case Place::header:
        place_ = Place::done;
        return true;
      case Place::metadata:
        place_ = Place::header;
        return true;
      case Place::entry: {
        const TensorInfo &t = out_.tensors.back();
        if (fields_ != (kDtype | kShape | kOffsets) || offsets_ != 2 || t.end < t.begin) return false;
        place_ = Place::header;
        return true;
      }
      default:
        return false;
    }
  }

  bool string(json::string_t &value) {
    if (place_ == Place::metadata_value) {
      if (!out_.metadata.emplace(std::move(metadata_key_), std::move(value)).second) return false;
      place_ = Place::metadata;
      return true;
    }
    if (place_ != Place::entry_value || field_ != kDtype) return false;
    const auto dtype = safetensors_dtype(std::string_view(value));
    if (!dtype) return false;
    out_.tensors.back().dtype = *dtype;
    place_ = Place::entry;
    return true;
  }
  bool start_array(std::size_t) {
    if (place_ != Place::entry_value || field_ == kDtype) return false;
    place_ = Place::numbers;
    offsets_ = field_ == kOffsets ? 0 : offsets_;
    return true;
  }
  bool number_unsigned(json::number_unsigned_t value) {
    if (place_ != Place::numbers) return false;
    TensorInfo &t = out_.tensors.back();
    if (field_ == kShape) {
      if (t.shape.size() >= kMaxTensorRank) return false;
      t.shape.push_back(value);
    } else {
      if (offsets_ >= 2) return false;
      (offsets_ == 0 ? t.begin : t.end) = value;
      ++offsets_;
    }
    return true;
  }
  bool end_array() {
    if (place_ != Place::numbers) return false;
    place_ = Place::entry;
    return true;
  }

  // Anything else a valid header never holds.
  bool null() { return false; }
  bool boolean(bool) { return false; }
  bool number_integer(json::number_integer_t) { return false; }
  bool number_float(json::number_float_t, const json::string_t &) { return false; }
  bool binary(json::binary_t &) { return false; }
  bool parse_error(std::size_t, const std::string &, const json::exception &) { return false; }

  bool done() const { return place_ == Place::done; }

 private:
  enum class Place { document, header, header_value, metadata, metadata_value, entry, entry_value, numbers, done };
  using Field = unsigned;
  static constexpr Field kDtype = 1, kShape = 2, kOffsets = 4;

  SafetensorsFields &out_;
  Place place_ = Place::document;
  bool in_metadata_ = false;    // the header key just read is "__metadata__"
  bool seen_metadata_ = false;  // "__metadata__" was read once already
  std::string metadata_key_;
  Field fields_ = 0;  // the fields of the current entry read so far
  Field field_ = 0;   // the field whose value comes next
  unsigned offsets_ = 0;
};

}  // namespace

std::optional<SafetensorsFields> read_safetensors_fields_fast(std::string_view header_json) {
  SafetensorsFields fields;
  HeaderEvents events(fields);
  try {
    if (!json::sax_parse(header_json.begin(), header_json.end(), &events, json::input_format_t::json,
                         /*strict=*/true, /*ignore_comments=*/false)) {
      return std::nullopt;
    }
  } catch (const std::exception &) {
    return std::nullopt;  // out of memory, or anything else: the strict parser says what
  }
  if (!events.done() || !events.names_unique()) return std::nullopt;
  return fields;
}

}  // namespace rootspan::weights
