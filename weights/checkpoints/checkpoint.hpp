// Checkpoint: one safetensors file, or a folder of shards tied together by
// model.safetensors.index.json (docs/weight-schema.md), wherever users keep them: a
// file, a folder, the index file itself, or a Hugging Face cache repository.
// Opening reads headers only and cross-checks the index against the shards
// both ways, so that afterwards every tensor name resolves to exactly one
// (shard, tensor) pair.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/checkpoints/shard.hpp"
#include "weights/files/input_file.hpp"
#include "weights/formats/safetensors.hpp"
#include "weights/formats/shard_index.hpp"

namespace rootspan::weights {

// The index file of a sharded checkpoint, as it was read: its text is
// parsed once and not kept, so its digest is taken then.
struct IndexFile {
  std::string file;                 // its name in the checkpoint folder
  std::filesystem::path real_path;  // where the descriptor it was read from lies
  std::string sha256;               // of the bytes read (empty when opened with ParsedDigests::kSkip)
  std::uint64_t bytes = 0;
};

// Refuses a checkpoint whose shards hold more than `limit` tensors in all
// (kMaxTensorsPerCheckpoint): ROOTSPAN_ERR_INVALID_CHECKPOINT, operation
// "open_checkpoint", naming both counts.
Result<void> check_tensor_count(std::size_t tensors, std::size_t shards, std::size_t limit);

class Checkpoint {
 public:
  Checkpoint(Checkpoint &&) = default;
  Checkpoint &operator=(Checkpoint &&) = default;
  Checkpoint(const Checkpoint &) = delete;
  Checkpoint &operator=(const Checkpoint &) = delete;
  // `path` is one of
  //   - a .safetensors file;
  //   - an index file (a name ending in ".index.json"): its folder is the
  //     checkpoint folder;
  //   - a folder holding model.safetensors.index.json (sharded; files the
  //     index does not name are ignored), else model.safetensors, else
  //     exactly one *.safetensors file;
  //   - a Hugging Face cache repository folder (is_cache_repository): the
  //     snapshot of `revision` (default: what refs/main names) is the folder.
  // `revision` applies to a cache repository only; anything else with a
  // revision is refused. A GGUF file, split or not, or a folder of one, opens
  // through open_gguf.
  // Every file, the one named included, is opened once beneath the trusted
  // folders (checkpoint_file.hpp: the checkpoint folder's real form, a cache
  // repository's blobs/ or the repository the user named; never "/"), with
  // no link leading out, checked to be a regular file, and its descriptor
  // kept in its Shard.
  // Sharded rules: every shard name is portable; every shard is a regular file; every
  // mapped tensor lies in the file the index names; every tensor of every
  // shard is in the index; no tensor name lies in two shards; total_size
  // only adds a note.
  // Errors: ROOTSPAN_ERR_INVALID_CHECKPOINT or ROOTSPAN_ERR_IO, operation
  // "open_checkpoint", naming the files and tensors involved.
  // `digests`: whether each header (Shard::header_sha256) and the index
  // (IndexFile::sha256) are hashed as parsed; skipped, both are empty.
  static Result<Checkpoint> open(const std::filesystem::path &path,
                                 const std::optional<std::string> &revision = std::nullopt,
                                 ParsedDigests digests = ParsedDigests::kTake);

  // The checkpoint folder: shard names are relative to it.
  const std::filesystem::path &folder() const { return folder_; }
  // Canonical folders every file of the checkpoint lies in (checkpoint_file.hpp).
  const std::vector<std::filesystem::path> &trusted_folders() const { return trusted_; }
  bool sharded() const { return index_.has_value(); }
  const std::optional<ShardIndex> &index() const { return index_; }
  const std::optional<IndexFile> &index_file() const { return index_file_; }
  const std::vector<Shard> &shards() const { return shards_; }
  // True for a GGUF checkpoint (one file, or the parts of a split one).
  bool is_gguf() const { return !shards_.empty() && shards_.front().gguf != nullptr; }

  // The tensor of that name, or an empty TensorRef (a search of the name order).
  TensorRef find(std::string_view tensor_name) const;
  // Every tensor, sorted by name (views into this checkpoint).
  std::span<const TensorRef> tensors_by_name() const { return by_name_; }
  // Every tensor name, sorted.
  std::vector<std::string> tensor_names() const;
  // Sum of all tensors' bytes.
  std::uint64_t tensor_bytes() const;
  // Things worth saying that break no rule ("index total_size 10 differs from
  // the tensors' 12 bytes").
  const std::vector<std::string> &notes() const { return notes_; }

 private:
  Checkpoint() = default;
  // A folder's checkpoint: its index, model.safetensors, its one
  // *.safetensors file, or its GGUF file. `named` is a cache repository the
  // user named, the folder being one of its snapshots (checkpoint_file.hpp).
  static Result<Checkpoint> open_folder(const std::filesystem::path &folder,
                                        std::span<const std::filesystem::path> named, ParsedDigests digests);
  // The checkpoint file `name` in `folder`, by what it is: an index, a GGUF
  // file (by its name or its magic) or a safetensors file. `input` is the
  // file already opened, or null to open it beneath `trusted`.
  static Result<Checkpoint> open_file(const std::filesystem::path &folder, const std::string &name,
                                      std::vector<std::filesystem::path> trusted,
                                      std::shared_ptr<const InputFile> input, ParsedDigests digests);
  static Result<Checkpoint> open_single(const std::filesystem::path &folder, const std::string &name,
                                        std::shared_ptr<const InputFile> input, ParsedDigests digests);
  // The index `index` (read from `input`) names the shards relative to
  // `folder`; each opens beneath `trusted`.
  static Result<Checkpoint> open_sharded(const std::filesystem::path &folder, const std::string &index,
                                         const InputFile &input, std::vector<std::filesystem::path> trusted,
                                         ParsedDigests digests);
  // A GGUF file `name` in `folder`, or a split GGUF named by any of its
  // parts, each part opened beneath `trusted` (open_gguf_parts in
  // gguf_checkpoint.hpp); `input` is `name` opened.
  static Result<Checkpoint> open_gguf(const std::filesystem::path &folder, const std::string &name,
                                      std::shared_ptr<const InputFile> input,
                                      std::vector<std::filesystem::path> trusted);
  // Builds by_name_; fails when the shards hold more tensors than a checkpoint
  // may, or a name lies in two shards.
  Result<void> index_tensors();

  std::filesystem::path folder_;
  std::vector<std::filesystem::path> trusted_;
  std::optional<ShardIndex> index_;
  std::optional<IndexFile> index_file_;
  std::vector<Shard> shards_;
  // Every tensor in name order (sort_in_name_order), one sorted array rather
  // than a hash table: a load of 10,000 tensors made 10,000 nodes of one, and
  // a default schema wants the name order anyway. Pointers into shards_,
  // whose elements neither a move nor anything after index_tensors()
  // relocates (a Checkpoint is never copied: they would be the original's).
  std::vector<TensorRef> by_name_;
  std::vector<std::string> notes_;
};

}  // namespace rootspan::weights
