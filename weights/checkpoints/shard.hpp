// One file of a checkpoint as it was opened (a safetensors file, a shard of
// a sharded one, a GGUF file or one part of a split one), and where one
// tensor lies in it. Both checkpoint.hpp and gguf_checkpoint.hpp build on
// these; neither includes the other's header for them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "weights/files/input_file.hpp"
#include "weights/formats/gguf.hpp"
#include "weights/formats/tensor_table.hpp"

namespace rootspan::weights {

struct Shard {
  std::string file;             // name relative to the checkpoint folder, as the index spells it
  std::filesystem::path path;   // the resolved path that was opened
  std::uint64_t file_size = 0;  // fstat at open
  // Absolute file offset of the data section the tensors' offsets count from.
  std::uint64_t data_offset = 0;
  // The shard's tensors, whatever its format. For a GGUF file: dense ones
  // with their element type, block-quantized ones as U8 bytes whose last
  // axis counts blocks × bytes_per_block.
  TensorTable tensors;
  // What the format holds besides the tensors. A safetensors file: its
  // __metadata__ (nullopt when it has none). A GGUF file: the whole file as
  // read, its key-value metadata and quantized types included.
  std::optional<std::map<std::string, std::string>> safetensors_metadata;
  std::shared_ptr<const GgufFile> gguf = nullptr;
  // The one descriptor the shard was opened with: its header was read from
  // it, and the load maps and reads it, never reopening `path` by name.
  std::shared_ptr<const InputFile> input = nullptr;
  // The SHA-256 of bytes [0, data_offset) as they were parsed (empty when
  // not known, or not taken: ParsedDigests): a verified load reads them again
  // and must find the same.
  std::string header_sha256;
};

// Where one tensor lies. Both pointers are null when there is no such tensor.
struct TensorRef {
  const Shard *shard = nullptr;
  const TensorInfo *tensor = nullptr;
  explicit operator bool() const { return tensor != nullptr; }
  // Absolute offset of the tensor's first byte in its shard file.
  std::uint64_t file_offset() const { return shard->data_offset + tensor->begin; }
};

// Name order, the order of a default schema's components (byte-wise).
inline bool in_name_order(const TensorRef &a, const TensorRef &b) { return a.tensor->name < b.tensor->name; }

}  // namespace rootspan::weights
