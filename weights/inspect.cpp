#include "weights/inspect.hpp"

#include "weights/gguf_describe.hpp"

namespace rootspan::weights {

nlohmann::json describe_checkpoint(const std::filesystem::path &path, const Checkpoint &checkpoint) {
  if (checkpoint.is_gguf()) return describe_gguf_checkpoint(path, checkpoint);
  nlohmann::json shards = nlohmann::json::array();
  nlohmann::json metadata = nlohmann::json::object();
  nlohmann::json tensors = nlohmann::json::array();
  for (const Shard &shard : checkpoint.shards()) {
    const SafetensorsFile &file = shard.safetensors;
    shards.push_back({{"file", shard.file}, {"bytes", file.file_size}, {"header_bytes", file.header_size}});
    for (const auto &[key, value] : file.header.metadata()) metadata[key] = value;
    for (const TensorInfo &tensor : file.header.tensors()) {
      tensors.push_back({{"name", tensor.name},
                         {"dtype", tensor.dtype.name},
                         {"shape", tensor.shape},
                         {"file", shard.file},
                         {"offset", file.data_offset() + tensor.begin},
                         {"bytes", tensor.byte_length()}});
    }
  }
  return {{"path", path.string()}, {"format", "safetensors"},     {"shards", shards}, {"metadata", metadata},
          {"tensors", tensors},    {"notes", checkpoint.notes()}, {"valid", true}};
}

}  // namespace rootspan::weights
