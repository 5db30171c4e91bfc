// The one rule for every file a checkpoint opens: the index, each shard, a
// single safetensors file, a GGUF file and each part of a split one, whether
// the user named it or a folder or an index led to it. Each is opened once,
// beneath the folders trusted to hold the checkpoint, with no symbolic link
// leading out of them; the descriptor it returns serves the header, the
// mapping and every read.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "weights/files/input_file.hpp"

namespace rootspan::weights {

// The folders trusted to hold the files of a checkpoint whose folder is
// `folder` (as named), canonical, none inside another:
//   - `folder`'s real form;
//   - when that is a snapshot of a Hugging Face cache repository
//     (<repository>/snapshots/<commit>), the repository's blobs/, where the
//     snapshot's links lead;
//   - `named`: a cache repository the user named, which the real form of
//     `folder` must lie inside.
// "/" is never trusted: a checkpoint in the root folder, or a snapshot that
// leads out of the repository named, is refused. Errors:
// ROOTSPAN_ERR_INVALID_CHECKPOINT (those two), ROOTSPAN_ERR_IO (`folder`
// cannot be resolved); operation "open_checkpoint".
Result<std::vector<std::filesystem::path>> trusted_folders_of(const std::filesystem::path &folder,
                                                              std::span<const std::filesystem::path> named);

// Opens `name` (a portable relative path) in `folder` beneath `trusted`: a
// name that leads out, through too many links or to anything but a regular
// file fails with ROOTSPAN_ERR_INVALID_CHECKPOINT naming where it leads, and
// so does a descriptor whose real path does not lead back to the same file
// (a memfd, a deleted file). A file that cannot be opened fails with
// ROOTSPAN_ERR_IO. Causes start with `subject` (what named the file).
Result<std::shared_ptr<const InputFile>> open_checkpoint_file(const std::filesystem::path &folder,
                                                              std::string_view name,
                                                              std::span<const std::filesystem::path> trusted,
                                                              std::string_view subject);

}  // namespace rootspan::weights
