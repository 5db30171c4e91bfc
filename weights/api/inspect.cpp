#include "weights/api/inspect.hpp"

#include <algorithm>
#include <string_view>

#include "weights/api/gguf_describe.hpp"

namespace rootspan::weights {

nlohmann::json describe_checkpoint(const std::filesystem::path &path, const Checkpoint &checkpoint) {
  if (checkpoint.is_gguf()) {
    nlohmann::json document = describe_gguf_checkpoint(path, checkpoint);
    document["folder"] = checkpoint.folder().string();
    return document;
  }
  nlohmann::json shards = nlohmann::json::array();
  nlohmann::json metadata = nlohmann::json::object();
  nlohmann::json tensors = nlohmann::json::array();
  for (const Shard &shard : checkpoint.shards()) {
    // The shard's own __metadata__, or null when it has none.
    nlohmann::json own = nullptr;
    if (shard.safetensors_metadata) {
      own = *shard.safetensors_metadata;
      for (const auto &[key, value] : *shard.safetensors_metadata) metadata[key] = value;
    }
    shards.push_back({{"file", shard.file},
                      {"bytes", shard.file_size},
                      {"header_bytes", shard.data_offset - kSafetensorsPrefix},
                      {"metadata", own}});
    for (const TensorInfo &tensor : shard.tensors.tensors()) {
      tensors.push_back({{"name", tensor.name},
                         {"dtype", tensor.dtype.name},
                         {"shape", tensor.shape},
                         {"file", shard.file},
                         {"offset", shard.data_offset + tensor.begin},
                         {"bytes", tensor.byte_length()}});
    }
  }
  nlohmann::json document = {{"path", path.string()}, {"format", "safetensors"}, {"shards", shards},
                             {"metadata", metadata},  {"tensors", tensors},      {"notes", checkpoint.notes()},
                             {"valid", true}};
  // The folder the shards are named from: for a cache repository, the snapshot.
  document["folder"] = checkpoint.folder().string();
  return document;
}

namespace {

// `text` as a JSON string: as it is between quotes where no byte needs an
// escape (the usual tensor name), else escaped by nlohmann::json. Valid
// UTF-8 (a header's names are checked) is written as it is either way.
void append_json_string(std::string &out, std::string_view text) {
  const bool plain =
      std::none_of(text.begin(), text.end(), [](char c) { return c == '"' || c == '\\' || (c >= 0 && c < 0x20); });
  if (!plain) {
    out += nlohmann::json(text).dump();
    return;
  }
  out += '"';
  out += text;
  out += '"';
}

}  // namespace

std::string safetensors_metadata_json(const SafetensorsHeader &header) {
  return header.has_metadata() ? nlohmann::json(header.metadata()).dump() : "null";
}

std::string describe_safetensors_file(const SafetensorsFile &file) {
  std::string out = R"({"format":"safetensors","bytes":)" + std::to_string(file.file_size) + R"(,"header_bytes":)" +
                    std::to_string(file.header_size) + R"(,"metadata":)" + safetensors_metadata_json(file.header) +
                    R"(,"tensors":[)";
  out.reserve(out.size() + file.header.tensors().size() * 64);
  bool first = true;
  for (const TensorInfo &tensor : file.header.tensors()) {
    out += first ? "[" : ",[";
    first = false;
    append_json_string(out, tensor.name);
    out += ",\"";
    out += tensor.dtype.name;  // a table name: nothing to escape
    out += "\",[";
    for (std::size_t i = 0; i < tensor.shape.size(); ++i) {
      if (i != 0) out += ',';
      out += std::to_string(tensor.shape[i]);
    }
    out += "],";
    out += std::to_string(file.data_offset() + tensor.begin);
    out += ',';
    out += std::to_string(tensor.byte_length());
    out += ']';
  }
  out += "]}";
  return out;
}

nlohmann::json describe_resolved_schema(const std::filesystem::path &schema_path, const ResolvedSchema &schema) {
  nlohmann::json components = nlohmann::json::array();
  for (const ComponentPayload &payload : schema.payloads) {
    components.push_back({{"id", payload.component_id()},
                          {"role", role_name(payload.component().role)},
                          {"sources", payload.external_names()},
                          {"bytes", payload.total_bytes()},
                          {"segments", payload.segments().size()}});
  }
  nlohmann::json skipped = nlohmann::json::array();
  for (const SkippedComponent &component : schema.skipped) {
    skipped.push_back({{"id", component.id}, {"reason", component.reason}});
  }
  return {{"path", schema_path.string()}, {"components", components}, {"skipped", skipped}};
}

}  // namespace rootspan::weights
