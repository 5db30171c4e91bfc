#include "weights/api/gguf_describe.hpp"

#include <cmath>
#include <cstdio>

#include "core/text/utf8.hpp"
#include "weights/checkpoints/gguf_checkpoint.hpp"
#include "weights/schema/gguf_component.hpp"

namespace rootspan::weights {

namespace {

using nlohmann::json;

// Valid UTF-8 for JSON: bytes that are not UTF-8 are written as \xHH, and a
// string longer than kGgufShownStringBytes is cut at a character boundary.
std::string shown_text(std::string_view text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size() && out.size() < kGgufShownStringBytes) {
    if (const std::size_t n = utf8_sequence_length(text, i); n != 0) {
      out.append(text.substr(i, n));
      i += n;
    } else {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02X", static_cast<unsigned char>(text[i]));
      out += buffer;
      ++i;
    }
  }
  if (i < text.size()) out += "...";
  return out;
}

json element(const GgufValue &value, std::uint64_t i) {
  if (const std::string *text = value.string(i)) return shown_text(*text);
  if (value.element_type == GgufValueType::kBool) return value.number(i).value_or(0) != 0;
  if (value.element_type == GgufValueType::kF32 || value.element_type == GgufValueType::kF64) {
    const double number = value.number(i).value_or(0);
    return std::isfinite(number) ? json(number) : json(std::to_string(number));
  }
  if (const auto unsigned_value = value.unsigned_integer(i)) return *unsigned_value;
  return static_cast<std::int64_t>(value.number(i).value_or(0));
}

}  // namespace

json describe_gguf_value(const GgufValue &value) {
  if (!value.is_array()) {
    json out = {{"type", gguf_value_type_name(value.type)}, {"value", element(value, 0)}};
    if (const std::string *text = value.string()) out["length"] = text->size();
    return out;
  }
  json first = json::array();
  for (std::uint64_t i = 0; i < value.count && i < kGgufShownElements; ++i) first.push_back(element(value, i));
  return {{"type", "array"},
          {"element_type", gguf_value_type_name(value.element_type)},
          {"length", value.count},
          {"first", first}};
}

json describe_gguf_checkpoint(const std::filesystem::path &path, const Checkpoint &checkpoint) {
  json shards = json::array();
  json metadata = json::object();
  json tensors = json::array();
  for (const Shard &shard : checkpoint.shards()) {
    const GgufFile &gguf = *shard.gguf;
    shards.push_back({{"file", shard.file},
                      {"bytes", gguf.file_size},
                      {"header_bytes", gguf.data_offset},
                      {"version", gguf.version},
                      {"alignment", gguf.alignment},
                      {"tensor_count", gguf.tensors.size()},
                      {"metadata_count", gguf.metadata.size()}});
    // The first part carries the model's metadata; later parts add keys
    // only where the first lacks them (their split.* keys differ per part).
    for (const auto &[key, value] : gguf.metadata) {
      if (!metadata.contains(key)) metadata[key] = describe_gguf_value(value);
    }
    for (const GgufTensor &tensor : gguf.tensors) {
      json entry = {{"name", tensor.name},
                    {"type", tensor.type->name},
                    {"shape", tensor.shape()},
                    {"file", shard.file},
                    {"offset", gguf.data_offset + tensor.offset},
                    {"bytes", tensor.bytes}};
      const Encoding encoding = gguf_encoding(*tensor.type);
      if (const auto *dense = std::get_if<DenseEncoding>(&encoding)) {
        entry["encoding"] = "dense";
        entry["dtype"] = dense->element_type.name;
      } else {
        const auto &block = std::get<BlockQuantizedEncoding>(encoding);
        entry["encoding"] = "block_quantized";
        entry["dtype"] = "U8";
        entry["format_id"] = block.format_id;
        entry["values_per_block"] = block.values_per_block;
        entry["bytes_per_block"] = block.bytes_per_block;
        entry["block_grid"] = tensor.block_grid();
      }
      tensors.push_back(std::move(entry));
    }
  }
  return {{"path", path.string()}, {"format", "gguf"},   {"shards", shards},
          {"metadata", metadata},  {"tensors", tensors}, {"notes", checkpoint.notes()},
          {"valid", true}};
}

}  // namespace rootspan::weights
