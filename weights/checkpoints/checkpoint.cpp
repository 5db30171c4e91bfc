#include "weights/checkpoints/checkpoint.hpp"

#include <algorithm>
#include <iterator>
#include <system_error>

#include "core/sha256.hpp"
#include "core/text/quoting.hpp"
#include "weights/checkpoints/checkpoint_file.hpp"
#include "weights/checkpoints/gguf_checkpoint.hpp"
#include "weights/checkpoints/hf_cache.hpp"
#include "weights/files/input_file.hpp"
#include "weights/formats/limits.hpp"
#include "weights/formats/safetensors.hpp"

namespace rootspan::weights {

namespace {

namespace fs = std::filesystem;

constexpr const char *kOperation = "open_checkpoint";

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

// How many of a folder's names an error lists before "and N more".
constexpr std::size_t kNamesShown = 8;

// Why a folder holds no checkpoint rootspan reads: what it does hold, and
// what would do.
std::string nothing_loadable(const fs::path &folder) {
  std::vector<std::string> names, repositories;
  bool pickles = false;
  std::error_code error;
  for (fs::directory_iterator it(folder, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    names.push_back(name);
    if (name.starts_with("models--") && is_cache_repository(it->path())) repositories.push_back(name);
    const std::string extension = it->path().extension().string();
    pickles = pickles || extension == ".bin" || extension == ".pt" || extension == ".pth" || extension == ".ckpt";
  }
  std::sort(names.begin(), names.end());
  std::sort(repositories.begin(), repositories.end());
  const auto listed = [](const std::vector<std::string> &all) { return quoted_list(all, kNamesShown); };
  const std::string where = quoted_text(folder.string());
  if (!repositories.empty()) {
    return where + " is a Hugging Face cache folder holding " + std::to_string(repositories.size()) +
           " repositories (" + listed(repositories) + "): pass one of them, a models--org--name folder";
  }
  std::string cause = where + ": no checkpoint rootspan reads: no " + std::string(kShardIndexName) +
                      ", no *.safetensors file and no *.gguf file; " +
                      (names.empty() ? std::string("the folder is empty")
                                     : "it holds " + std::to_string(names.size()) + " entries: " + listed(names));
  if (pickles)
    cause +=
        "; *.bin, *.pt, *.pth and *.ckpt files are PyTorch pickles, which rootspan does not read: "
        "convert them to safetensors";
  return cause;
}

// A safetensors file as a shard: its table moved out of the header it came in.
Shard safetensors_shard(std::string file, fs::path path, SafetensorsFile safetensors,
                        std::shared_ptr<const InputFile> input) {
  std::optional<std::map<std::string, std::string>> metadata;
  if (safetensors.header.has_metadata()) metadata = safetensors.header.metadata();
  const std::uint64_t data_offset = safetensors.data_offset();
  return Shard{std::move(file),
               std::move(path),
               safetensors.file_size,
               data_offset,
               std::move(safetensors.header).table(),
               std::move(metadata),
               nullptr,
               std::move(input),
               std::move(safetensors.header_sha256)};
}

}  // namespace

Result<Checkpoint> Checkpoint::open(const fs::path &path, const std::optional<std::string> &revision,
                                    ParsedDigests digests) {
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (!fs::exists(status)) {
    // Said once: "no such file or folder", not again in the system's words.
    return make_error(ROOTSPAN_ERR_IO, kOperation, quoted_text(path.string()) + ": no such file or folder");
  }
  if (error) {
    return make_error(ROOTSPAN_ERR_IO, kOperation,
                      quoted_text(path.string()) + ": cannot look at it: " + error.message());
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
    return open_folder(snapshot.value(), std::span(&repository, 1), digests);
  }
  if (fs::is_directory(status)) return open_folder(path, {}, digests);
  // A file named by the user is opened beneath its own folder too: a link
  // there leading elsewhere is refused, as it would be in a folder.
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  auto trusted = trusted_folders_of(folder, {});
  if (!trusted) return trusted.error();
  const std::string name = path.filename().string();
  auto input = open_checkpoint_file(folder, name, trusted.value(), path.string());
  if (!input) return input.error();
  return open_file(folder, name, std::move(trusted).value(), std::move(input).value(), digests);
}

Result<Checkpoint> Checkpoint::open_folder(const fs::path &path, std::span<const fs::path> named,
                                           ParsedDigests digests) {
  auto trusted = trusted_folders_of(path, named);
  if (!trusted) return trusted.error();
  if (is_gguf_folder(path)) {
    auto file = gguf_file_in(path);
    if (!file) return file.error();
    return open_gguf(path, file.value(), nullptr, std::move(trusted).value());
  }
  std::error_code error;
  // A link to an index that is missing (a download cut short) is still the
  // index: opening it says so, rather than looking for other files.
  if (fs::exists(fs::symlink_status(path / kShardIndexName, error))) {
    return open_file(path, std::string(kShardIndexName), std::move(trusted).value(), nullptr, digests);
  }
  if (is_regular(path / "model.safetensors")) {
    return open_file(path, "model.safetensors", std::move(trusted).value(), nullptr, digests);
  }

  std::vector<fs::path> candidates;
  for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() == ".safetensors" && is_regular(it->path())) candidates.push_back(it->path());
  }
  if (error) {
    return make_error(ROOTSPAN_ERR_IO, kOperation,
                      quoted_text(path.string()) + ": cannot list the folder: " + error.message());
  }
  if (candidates.size() == 1) {
    return open_file(path, candidates.front().filename().string(), std::move(trusted).value(), nullptr, digests);
  }
  if (candidates.empty()) return invalid(nothing_loadable(path));
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

Result<Checkpoint> Checkpoint::open_file(const fs::path &folder, const std::string &name, std::vector<fs::path> trusted,
                                         std::shared_ptr<const InputFile> input, ParsedDigests digests) {
  if (!input) {
    auto opened = open_checkpoint_file(folder, name, trusted, (folder / name).string());
    if (!opened) return opened.error();
    input = std::move(opened).value();
  }
  if (name.ends_with(kIndexSuffix)) return open_sharded(folder, name, *input, std::move(trusted), digests);
  if (is_gguf_file(name, *input)) return open_gguf(folder, name, std::move(input), std::move(trusted));
  auto checkpoint = open_single(folder, name, std::move(input), digests);
  if (checkpoint) checkpoint.value().trusted_ = std::move(trusted);
  return checkpoint;
}

Result<Checkpoint> Checkpoint::open_single(const fs::path &folder, const std::string &name,
                                           std::shared_ptr<const InputFile> input, ParsedDigests digests) {
  auto safetensors = open_safetensors(*input, digests);
  if (!safetensors) return safetensors.error();
  Checkpoint checkpoint;
  checkpoint.folder_ = folder;
  checkpoint.shards_.push_back(
      safetensors_shard(name, folder / name, std::move(safetensors).value(), std::move(input)));
  if (auto indexed = checkpoint.index_tensors(); !indexed) return indexed.error();
  return checkpoint;
}

Result<Checkpoint> Checkpoint::open_sharded(const fs::path &folder, const std::string &index_file_name,
                                            const InputFile &index_file, std::vector<fs::path> trusted,
                                            ParsedDigests digests) {
  const std::string index_name = (folder / index_file_name).string();
  auto text = read_whole_file(index_file, kMaxIndexBytes, ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation);
  if (!text) return text.error();
  auto index = parse_shard_index(text.value(), index_name);
  if (!index) return index.error();

  Checkpoint checkpoint;
  checkpoint.folder_ = folder;
  checkpoint.trusted_ = trusted;
  for (const std::string &file : index.value().files) {
    auto input = open_checkpoint_file(folder, file, trusted, index_name);
    if (!input) {
      Diagnostic failed = input.error();
      if (!failed.cause.starts_with(quoted_text(index_name))) {
        failed.cause = quoted_text(index_name) + ": shard " + quoted_text(file) + ": " + failed.cause;
      }
      return failed;
    }
    auto safetensors = open_safetensors(*input.value(), digests);
    if (!safetensors) {
      // The cause names the real path; say which index entry led there.
      Diagnostic failed = safetensors.error();
      failed.cause = quoted_text(index_name) + ": shard " + quoted_text(file) + ": " + failed.cause;
      return failed;
    }
    const fs::path real = input.value()->real_path();
    checkpoint.shards_.push_back(
        safetensors_shard(file, real, std::move(safetensors).value(), std::move(input).value()));
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
    for (const TensorInfo &tensor : shard.tensors.tensors()) {
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
  std::string index_sha256;
  if (digests == ParsedDigests::kTake) {
    Sha256 index_digest;
    index_digest.update(std::as_bytes(std::span(text.value())));
    index_sha256 = index_digest.hex_digest();
  }
  checkpoint.index_file_ =
      IndexFile{index_file_name, index_file.real_path(), std::move(index_sha256), text.value().size()};
  return checkpoint;
}

Result<Checkpoint> Checkpoint::open_gguf(const fs::path &folder, const std::string &name,
                                         std::shared_ptr<const InputFile> input, std::vector<fs::path> trusted) {
  auto shards = open_gguf_parts(folder, name, std::move(input), trusted);
  if (!shards) return shards.error();
  Checkpoint checkpoint;
  checkpoint.folder_ = folder;
  checkpoint.trusted_ = std::move(trusted);
  checkpoint.shards_ = std::move(shards).value();
  if (auto indexed = checkpoint.index_tensors(); !indexed) return indexed.error();
  return checkpoint;
}

Result<void> check_tensor_count(std::size_t tensors, std::size_t shards, std::size_t limit) {
  if (tensors <= limit) return BOOST_OUTCOME_V2_NAMESPACE::success();
  return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation,
                    "the checkpoint's " + std::to_string(shards) + " files hold " + std::to_string(tensors) +
                        " tensors in all, more than the " + std::to_string(limit) + " a checkpoint may hold",
                    limit, tensors);
}

Result<void> Checkpoint::index_tensors() {
  std::size_t count = 0;
  for (const Shard &shard : shards_) count += shard.tensors.tensors().size();
  BOOST_OUTCOME_TRY(check_tensor_count(count, shards_.size(), kMaxTensorsPerCheckpoint));
  by_name_.clear();
  by_name_.reserve(count);
  for (const Shard &shard : shards_) {
    for (const TensorInfo &tensor : shard.tensors.tensors()) by_name_.push_back({&shard, &tensor});
  }
  sort_in_name_order(by_name_);  // stable: a name twice keeps its shards' order
  const auto twice = std::adjacent_find(by_name_.begin(), by_name_.end(), [](const TensorRef &a, const TensorRef &b) {
    return a.tensor->name == b.tensor->name;
  });
  if (twice != by_name_.end()) {
    return invalid("tensor " + quoted_text(twice->tensor->name) + " appears in two shards: " +
                   quoted_text(twice->shard->file) + " and " + quoted_text(std::next(twice)->shard->file));
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

TensorRef Checkpoint::find(std::string_view tensor_name) const {
  const auto found = std::lower_bound(by_name_.begin(), by_name_.end(), tensor_name,
                                      [](const TensorRef &t, std::string_view name) { return t.tensor->name < name; });
  if (found == by_name_.end() || found->tensor->name != tensor_name) return {};
  return *found;
}

std::vector<std::string> Checkpoint::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(by_name_.size());
  for (const TensorRef &tensor : by_name_) names.push_back(tensor.tensor->name);
  return names;
}

std::uint64_t Checkpoint::tensor_bytes() const {
  // Each shard's tensors tile its data section, so their sum is its size; the
  // sum over shards cannot overflow what the file system holds.
  std::uint64_t total = 0;
  for (const Shard &shard : shards_) total += shard.tensors.data_bytes();
  return total;
}

}  // namespace rootspan::weights
