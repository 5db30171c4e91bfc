#include "weights/checkpoints/checkpoint_file.hpp"

#include <sys/stat.h>

#include <system_error>

#include "core/text/quoting.hpp"
#include "weights/checkpoints/hf_cache.hpp"
#include "weights/files/open_beneath.hpp"
#include "weights/files/portable_path.hpp"

namespace rootspan::weights {

namespace {

namespace fs = std::filesystem;

constexpr const char *kOperation = "open_checkpoint";

Diagnostic invalid(const std::string &cause) { return make_error(ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, cause); }

}  // namespace

Result<std::vector<fs::path>> trusted_folders_of(const fs::path &folder, std::span<const fs::path> named) {
  std::error_code error;
  const fs::path real = fs::canonical(folder, error);
  if (error) {
    return make_error(ROOTSPAN_ERR_IO, kOperation,
                      quoted_text(folder.string()) + ": cannot resolve the folder: " + error.message());
  }
  if (real == real.root_path()) {
    return invalid(quoted_text(folder.string()) +
                   ": the checkpoint lies in the root folder, which is never trusted to hold checkpoint files; "
                   "move it into a folder of its own");
  }
  std::vector<fs::path> trusted;
  for (const fs::path &outer : named) {
    if (!lies_inside(real, outer)) {
      return invalid(quoted_text(folder.string()) + " leads out of " + quoted_text(outer.string()) + ", to " +
                     quoted_text(real.string()) + ": a snapshot must be a folder of the repository named");
    }
    trusted.push_back(outer);
  }
  if (trusted.empty()) {
    trusted.push_back(real);
    // A snapshot named by itself: its files are links into the repository's blobs/.
    const fs::path repository = real.parent_path().parent_path();
    if (real.parent_path().filename() == "snapshots" && is_cache_repository(repository) &&
        fs::is_directory(fs::symlink_status(repository / "blobs", error))) {
      trusted.push_back(repository / "blobs");
    }
  }
  return trusted;
}

Result<std::shared_ptr<const InputFile>> open_checkpoint_file(const fs::path &folder, std::string_view name,
                                                              std::span<const fs::path> trusted,
                                                              std::string_view subject) {
  // The check by name gives the clear error; the open beneath the trusted
  // folders is what makes a link swapped in since then unable to lead out.
  auto resolved = resolve_inside(folder, name, trusted, ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, subject);
  if (!resolved) return resolved.error();
  auto input = open_beneath(folder, name, trusted, ROOTSPAN_ERR_INVALID_CHECKPOINT, kOperation, subject);
  if (!input) return input.error();
  // Messages, digest plans and cache-blob names go by the real path, so it
  // must lead back to the file that was opened.
  const fs::path real = input.value()->real_path();
  struct stat opened {
  }, again{};
  if (::fstat(input.value()->fd(), &opened) != 0 || ::stat(real.c_str(), &again) != 0 ||
      opened.st_dev != again.st_dev || opened.st_ino != again.st_ino) {
    return invalid(quoted_text(subject) + ": file name " + quoted_text(name) + " was opened as " +
                   quoted_text(real.string()) +
                   ", which does not lead back to it (a deleted file, a memfd or a pipe): a checkpoint file must be "
                   "a file in a folder");
  }
  return input;
}

}  // namespace rootspan::weights
