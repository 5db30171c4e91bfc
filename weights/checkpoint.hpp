// Checkpoint: one safetensors file, or a folder of shards tied together by
// model.safetensors.index.json (DESIGN 6.2). Opening reads headers only and
// cross-checks the index against the shards both ways, so that afterwards
// every tensor name resolves to exactly one (shard, tensor) pair.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/gguf.hpp"
#include "weights/safetensors.hpp"
#include "weights/shard_index.hpp"

namespace rootspan::weights {

struct Shard {
  std::string file;            // name relative to the checkpoint folder, as the index spells it
  std::filesystem::path path;  // the resolved path that was opened
  // The shard's tensor table. For a GGUF file it is a view of `gguf`'s
  // tensors: dense ones with their element type, block-quantized ones as U8
  // bytes whose last axis counts blocks × bytes_per_block.
  SafetensorsFile safetensors;
  std::shared_ptr<const GgufFile> gguf;  // set when the shard is a GGUF file

  // Absolute file offset of the data section the tensors' offsets count from.
  std::uint64_t data_offset() const { return gguf ? gguf->data_offset : safetensors.data_offset(); }
};

// Where one tensor lies. Both pointers are null when there is no such tensor.
struct TensorRef {
  const Shard *shard = nullptr;
  const TensorInfo *tensor = nullptr;
  explicit operator bool() const { return tensor != nullptr; }
  // Absolute offset of the tensor's first byte in its shard file.
  std::uint64_t file_offset() const { return shard->data_offset() + tensor->begin; }
};

class Checkpoint {
 public:
  // `path` is a .safetensors file, or a folder holding
  //   model.safetensors.index.json (sharded), else model.safetensors, else
  //   exactly one *.safetensors file; or a GGUF checkpoint (see open_gguf).
  // Sharded rules: every shard name is portable and stays inside the folder
  // through symbolic links; every mapped tensor lies in the file the index
  // names; every tensor of every shard is in the index; no tensor name lies
  // in two shards; total_size only adds a note.
  // Errors: ROOTSPAN_ERR_INVALID_CHECKPOINT or ROOTSPAN_ERR_IO, operation
  // "open_checkpoint", naming the files and tensors involved.
  static Result<Checkpoint> open(const std::filesystem::path &path);

  const std::filesystem::path &folder() const { return folder_; }
  bool sharded() const { return index_.has_value(); }
  const std::optional<ShardIndex> &index() const { return index_; }
  const std::vector<Shard> &shards() const { return shards_; }
  // True for a GGUF checkpoint (one file, or the parts of a split one).
  bool is_gguf() const { return !shards_.empty() && shards_.front().gguf != nullptr; }

  TensorRef find(std::string_view tensor_name) const;
  // Every tensor name, sorted.
  std::vector<std::string> tensor_names() const;
  // Sum of all tensors' bytes.
  std::uint64_t tensor_bytes() const;
  // Things worth saying that break no rule ("index total_size 10 differs from
  // the tensors' 12 bytes").
  const std::vector<std::string> &notes() const { return notes_; }

 private:
  Checkpoint() = default;
  static Result<Checkpoint> open_single(const std::filesystem::path &file);
  static Result<Checkpoint> open_sharded(const std::filesystem::path &folder);
  // A GGUF file, a split GGUF (its first part, any part, or its folder), or
  // a folder holding one GGUF file. Defined in gguf_checkpoint.cpp.
  static Result<Checkpoint> open_gguf(const std::filesystem::path &path);
  // Builds by_name_; fails when a name lies in two shards.
  Result<void> index_tensors();

  std::filesystem::path folder_;
  std::optional<ShardIndex> index_;
  std::vector<Shard> shards_;
  std::map<std::string, std::pair<std::size_t, std::size_t>, std::less<>> by_name_;  // shard, tensor
  std::vector<std::string> notes_;
};

}  // namespace rootspan::weights
