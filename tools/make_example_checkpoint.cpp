// Writes the example checkpoint the Quick start loads: two safetensors shards
// tied by model.safetensors.index.json, and a component schema with a packed
// component whose sources lie in different shards and a block-quantized one.
// Usage: make-example-checkpoint OUTPUT_FOLDER
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Tensor {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t element_bytes;
};

std::uint64_t bytes_of(const Tensor &t) {
  std::uint64_t n = t.element_bytes;
  for (std::uint64_t d : t.shape) n *= d;
  return n;
}

// A safetensors file: 8-byte little-endian header length, JSON header, data.
// Tensor bytes are a fixed pseudo-random sequence, so every build writes the
// same files.
void write_shard(const std::filesystem::path &path, const std::vector<Tensor> &tensors, std::uint32_t &seed) {
  nlohmann::json header = {{"__metadata__", {{"format", "pt"}, {"producer", "rootspan example"}}}};
  std::uint64_t offset = 0;
  for (const Tensor &t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes_of(t)}}};
    offset += bytes_of(t);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned
  std::ofstream out(path, std::ios::binary);
  const std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out << text;
  for (std::uint64_t i = 0; i < offset; ++i) {
    seed = seed * 1664525u + 1013904223u;
    out.put(static_cast<char>(seed >> 24));
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make-example-checkpoint OUTPUT_FOLDER\n");
    return 2;
  }
  const std::filesystem::path folder = argv[1];
  std::filesystem::create_directories(folder);
  const std::vector<Tensor> first = {
      {"model.embed_tokens.weight", "F16", {256, 32}, 2},
      {"model.layers.0.mlp.gate_proj.weight", "F32", {64, 32}, 4},
      {"model.layers.0.self_attn.q_proj.q4k", "U8", {64, 144}, 1},
  };
  const std::vector<Tensor> second = {
      {"model.layers.0.mlp.up_proj.weight", "F32", {64, 32}, 4},
      {"model.norm.weight", "F32", {32}, 4},
  };
  std::uint32_t seed = 12345;
  const std::string shard1 = "model-00001-of-00002.safetensors";
  const std::string shard2 = "model-00002-of-00002.safetensors";
  write_shard(folder / shard1, first, seed);
  write_shard(folder / shard2, second, seed);

  nlohmann::json weight_map = nlohmann::json::object();
  std::uint64_t total = 0;
  for (const Tensor &t : first) weight_map[t.name] = shard1, total += bytes_of(t);
  for (const Tensor &t : second) weight_map[t.name] = shard2, total += bytes_of(t);
  std::ofstream(folder / "model.safetensors.index.json")
      << nlohmann::json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}}.dump(2) << '\n';

  const nlohmann::json schema = {
      {"schema_version", "1.0.0"},
      {"components",
       {{{"id", "embed"},
         {"role", "values"},
         {"sources", {"model.embed_tokens.weight"}},
         {"dimensions", {256, 32}},
         {"encoding", {{"dense", {{"element_type", "F16"}}}}},
         {"required", true}},
        {{"id", "layers.0.mlp.gate_up"},
         {"role", "packed_values"},
         {"sources", {"model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"}},
         {"dimensions", {2, 64, 32}},
         {"encoding", {{"dense", {{"element_type", "F32"}}}}},
         {"required", true}},
        {{"id", "layers.0.attn.q.qweight"},
         {"role", "packed_values"},
         {"sources", {"model.layers.0.self_attn.q_proj.q4k"}},
         {"dimensions", {64, 1}},
         {"encoding",
          {{"block_quantized",
            {{"format_id", "quantization.gguf.q4-k"}, {"values_per_block", 256}, {"bytes_per_block", 144}}}}},
         {"required", true}},
        {{"id", "norm"},
         {"role", "values"},
         {"sources", {"model.norm.weight"}},
         {"dimensions", {32}},
         {"encoding", {{"dense", {{"element_type", "F32"}}}}},
         {"required", true}},
        {{"id", "layers.0.attn.q.scales"},
         {"role", "scales"},
         {"sources", {"model.layers.0.self_attn.q_proj.scales"}},
         {"dimensions", {64}},
         {"encoding", {{"dense", {{"element_type", "F16"}}}}},
         {"required", false}}}}};
  std::ofstream(folder / "schema.json") << schema.dump(2) << '\n';
  return 0;
}
