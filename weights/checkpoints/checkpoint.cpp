#include "weights/checkpoints/checkpoint.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <system_error>

#include "core/sha256.hpp"
#include "core/text/quoting.hpp"
#include "weights/checkpoints/gguf_checkpoint.hpp"
#include "weights/checkpoints/hf_cache.hpp"
#include "weights/files/input_file.hpp"
#include "weights/files/open_beneath.hpp"
#include "weights/files/portable_path.hpp"

namespace rootspan::weights {

namespace {

namespace fs = std::filesystem;

constexpr const char *kOperation = "open_checkpoint";
// An index lists names, not data: the header limit is more than generous.
constexpr std::uint64_t kMaxIndexBytes = kMaxSafetensorsHeader;

Diagnostic invalid(const std::string &cause) { return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, cause); }

// A name that ends so is an index file given as the checkpoint.
constexpr std::string_view kIndexSuffix = ".index.json";

Diagnostic cannot_resolve(const fs::path &path, const std::error_code &error) {
  return make_error(ROOTSPAN_ERR_IO, kOperation, quoted_text(path.string()) + ": cannot resolve: " + error.message());
}

bool is_regular(const fs::path &path) {
  std::error_code error;
  return fs::is_regular_file(path, error);  // follows symbolic links
}

}  // namespace

Result<Checkpoint> Checkpoint::open(const fs::path &path, const std::optional<std::string> &revision) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error || !fs::exists(status)) {
    return make_error(
        ROOTSPAN_ERR_IO, kOperation,
        quoted_text(path.string()) + ": no such file or folder" + (error ? ": " + error.message() : std::string()));
  }
  const bool cache = fs::is_directory(status) && is_cache_repository(path);
  if (revision && !cache) {
    return invalid(quoted_text(path.string()) + ": revision " + quoted_text(*revision) +
                   " applies only to a Hugging Face cache repository folder (models--org--name, with snapshots/ "
                   "and refs/), and this is not one");
  }
  if (cache) {
    auto snapshot = cache_snapshot(path, revision);
    if (!snapshot) return snapshot.error();
    // The user named the repository: its blobs/ are as trusted as its snapshot.
    const fs::path repository = fs::canonical(path, error);
    if (error) return cannot_resolve(path, error);
    return open_folder(snapshot.value(), {repository});
  }
  if (fs::is_directory(status)) return open_folder(path, {});
  if (is_gguf_source(path)) return open_gguf(path);
  if (path.filename().string().ends_with(kIndexSuffix)) {
    return open_sharded(path.has_parent_path() ? path.parent_path() : fs::path("."), path, {});
  }
  return open_single(path);
}

Result<Checkpoint> Checkpoint::open_folder(const fs::path &path, std::vector<fs::path> trusted) {
  if (is_gguf_source(path)) return open_gguf(path);
  std::error_code error;
  // A link to an index that is missing (a download cut short) is still the
  // index: opening it says so, rather than looking for other files.
  if (fs::exists(fs::symlink_status(path / kShardIndexName, error))) {
    return open_sharded(path, path / kShardIndexName, std::move(trusted));
  }
  if (is_regular(path / "model.safetensors")) return open_single(path / "model.safetensors");

  std::vector<fs::path> candidates;
  for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() == ".safetensors" && is_regular(it->path())) candidates.push_back(it->path());
  }
  if (error) {
    return make_error(ROOTSPAN_ERR_IO, kOperation,
                      quoted_text(path.string()) + ": cannot list the folder: " + error.message());
  }
  if (candidates.size() == 1) return open_single(candidates.front());
  if (candidates.empty()) {
    return invalid(quoted_text(path.string()) + ": folder has no " + std::string(kShardIndexName) +
                   ", no model.safetensors and no other *.safetensors file");
  }
  std::sort(candidates.begin(), candidates.end());
  std::string names;
  for (const auto &candidate : candidates)
    names += (names.empty() ? "" : ", ") + quoted_text(candidate.filename().string());
  return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation,
                    quoted_text(path.string()) + ": folder has " + std::to_string(candidates.size()) +
                        " *.safetensors files (" + names + ") and no " + std::string(kShardIndexName) +
                        " to say how they fit together",
                    1, candidates.size());
}

Result<Checkpoint> Checkpoint::open_single(const fs::path &file) {
  auto opened = InputFile::open(file, kOperation, ROOTSPAN_ERR_INVALID_CHECKPOINT);
  if (!opened) return opened.error();
  auto input = std::make_shared<const InputFile>(std::move(opened).value());
  auto safetensors = open_safetensors(*input);
  if (!safetensors) return safetensors.error();
  Checkpoint checkpoint;
  checkpoint.folder_ = file.has_parent_path() ? file.parent_path() : fs::path(".");
  checkpoint.shards_.push_back(
      Shard{file.filename().string(), file, std::move(safetensors).value(), nullptr, std::move(input)});
  if (auto indexed = checkpoint.index_tensors(); !indexed) return indexed.error();
  return checkpoint;
}

Result<Checkpoint> Checkpoint::open_sharded(const fs::path &folder, const fs::path &index_path,
                                            std::vector<fs::path> trusted) {
  const std::string index_name = index_path.string();
  // Opened once: the folder that really holds the index is read back from
  // the same descriptor its text came from.
  auto index_file = InputFile::open(index_path, kOperation, ROOTSPAN_ERR_INVALID_CHECKPOINT);
  if (!index_file) return index_file.error();
  auto text = read_whole_file(index_file.value(), kMaxIndexBytes, ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation);
  if (!text) return text.error();
  auto index = parse_shard_index(text.value(), index_name);
  if (!index) return index.error();

  // The folder named, and the folder that really holds the index: in a
  // Hugging Face cache the index is a link into blobs/, where the shards'
  // links lead too.
  std::error_code error;
  const fs::path named = fs::canonical(folder, error);
  if (error) return cannot_resolve(folder, error);
  const fs::path index_real = index_file.value().real_path();
  const fs::path index_folder = index_real.parent_path();
  if (!index_folder.is_absolute()) return cannot_resolve(index_path, std::make_error_code(std::errc::not_supported));
  // The folder the index really lies in becomes trusted, so it must be one:
  // the real path must lead back to the very file read (a memfd reads back
  // as "/memfd:name (deleted)", a deleted file as "... (deleted)"), and never
  // is "/" trusted.
  struct stat opened {
  }, again{};
  if (::fstat(index_file.value().fd(), &opened) != 0 || ::stat(index_real.c_str(), &again) != 0 ||
      opened.st_dev != again.st_dev || opened.st_ino != again.st_ino) {
    return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation,
                      quoted_text(index_name) + ": the index was read from " + quoted_text(index_real.string()) +
                          ", which does not lead back to it (a deleted file, a memfd or a pipe): an index must be a "
                          "file in a folder");
  }
  if (index_folder == index_folder.root_path()) {
    return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation,
                      quoted_text(index_name) + ": the index really lies in " + quoted_text(index_folder.string()) +
                          ", and the root folder is never trusted to hold shards");
  }
  trusted.push_back(named);
  trusted.push_back(index_folder);
  // A folder inside another trusted one adds nothing (the snapshot inside a
  // repository the user named); the error lists what is left.
  std::vector<fs::path> outermost;
  for (std::size_t i = 0; i < trusted.size(); ++i) {
    bool covered = false;
    for (std::size_t j = 0; j < trusted.size() && !covered; ++j) {
      covered = lies_inside(trusted[i], trusted[j]) && (trusted[i] != trusted[j] || j < i);
    }
    if (!covered) outermost.push_back(trusted[i]);
  }
  trusted = std::move(outermost);

  Checkpoint checkpoint;
  checkpoint.folder_ = folder;
  checkpoint.trusted_ = trusted;
  for (const std::string &file : index.value().files) {
    // The check by name gives the clear error; the open beneath the trusted
    // folders is what makes a link swapped in since then unable to lead out.
    auto resolved = resolve_inside(folder, file, trusted, ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, index_name);
    if (!resolved) return resolved.error();
    auto input = open_beneath(folder, file, trusted, ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, index_name);
    if (!input) {
      Diagnostic failed = input.error();
      if (!failed.cause.starts_with(quoted_text(index_name))) {
        failed.cause = quoted_text(index_name) + ": shard " + quoted_text(file) + ": " + failed.cause;
      }
      return failed;
    }
    auto safetensors = open_safetensors(*input.value());
    if (!safetensors) {
      // The cause names the real path; say which index entry led there.
      Diagnostic failed = safetensors.error();
      failed.cause = quoted_text(index_name) + ": shard " + quoted_text(file) + ": " + failed.cause;
      return failed;
    }
    checkpoint.shards_.push_back(
        Shard{file, resolved.value(), std::move(safetensors).value(), nullptr, std::move(input).value()});
  }
  if (auto indexed = checkpoint.index_tensors(); !indexed) return indexed.error();

  // The index and the shards must agree both ways.
  for (const auto &[tensor, file] : index.value().weight_map) {
    const TensorRef found = checkpoint.find(tensor);
    if (!found) {
      return invalid(quoted_text(index_name) + ": maps tensor " + quoted_text(tensor) + " to " + quoted_text(file) +
                     ", but no shard has such a tensor");
    }
    if (found.shard->file != file) {
      return invalid(quoted_text(index_name) + ": maps tensor " + quoted_text(tensor) + " to " + quoted_text(file) +
                     ", but it lies in " + quoted_text(found.shard->file));
    }
  }
  for (const Shard &shard : checkpoint.shards_) {
    for (const TensorInfo &tensor : shard.safetensors.header.tensors()) {
      if (!index.value().weight_map.contains(tensor.name)) {
        return invalid(quoted_text(index_name) + ": tensor " + quoted_text(tensor.name) + " of shard " +
                       quoted_text(shard.file) + " is not in the weight_map");
      }
    }
  }
  if (const auto total = index.value().total_size; total && *total != checkpoint.tensor_bytes()) {
    checkpoint.notes_.push_back(quoted_text(index_name) + ": total_size " + std::to_string(*total) +
                                " differs from the tensors' " + std::to_string(checkpoint.tensor_bytes()) +
                                " bytes (advisory, ignored)");
  }
  checkpoint.index_ = std::move(index).value();
  Sha256 index_digest;
  index_digest.update(std::as_bytes(std::span(text.value())));
  checkpoint.index_file_ = IndexFile{index_path.filename().string(), index_file.value().real_path(),
                                     index_digest.hex_digest(), text.value().size()};
  return checkpoint;
}

Result<void> Checkpoint::index_tensors() {
  std::size_t count = 0;
  for (const Shard &shard : shards_) count += shard.safetensors.header.tensors().size();
  by_name_.reserve(count);
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    const auto &tensors = shards_[s].safetensors.header.tensors();
    for (std::size_t t = 0; t < tensors.size(); ++t) {
      const auto [it, inserted] = by_name_.emplace(tensors[t].name, std::pair{s, t});
      if (!inserted) {
        return invalid("tensor " + quoted_text(tensors[t].name) + " appears in two shards: " +
                       quoted_text(shards_[it->second.first].file) + " and " + quoted_text(shards_[s].file));
      }
    }
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

TensorRef Checkpoint::find(std::string_view tensor_name) const {
  const auto found = by_name_.find(tensor_name);
  if (found == by_name_.end()) return {};
  const Shard &shard = shards_[found->second.first];
  return {&shard, &shard.safetensors.header.tensors()[found->second.second]};
}

std::vector<std::string> Checkpoint::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(by_name_.size());
  for (const auto &[name, _] : by_name_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

std::uint64_t Checkpoint::tensor_bytes() const {
  // Each shard's tensors tile its data section, so their sum is its size; the
  // sum over shards cannot overflow what the file system holds.
  std::uint64_t total = 0;
  for (const Shard &shard : shards_) total += shard.safetensors.header.data_size();
  return total;
}

}  // namespace rootspan::weights
