// A Hugging Face cache repository folder, `models--org--name` (docs/weight-schema.md):
// `snapshots/<commit>/` holds one folder per downloaded revision, its files
// symbolic links into `blobs/`, and `refs/<branch>` holds the commit a branch
// or tag stands for. Here a repository folder and a revision become the
// snapshot folder to open as the checkpoint.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "core/diagnostic.hpp"

namespace rootspan::weights {

// `folder` has a `snapshots` folder beside a `blobs` or `refs` folder.
bool is_cache_repository(const std::filesystem::path &folder);

// The snapshot folder of `revision` (default "main") in the repository
// folder `repository`: refs/<revision> names the commit when it exists;
// otherwise an explicit revision is taken as the commit (the snapshot
// folder's own name). The revision and the commit a ref names are single
// names: not empty, no '/', '\', "..", control character, and not ".".
// Errors: ROOTSPAN_ERR_INVALID_CHECKPOINT (operation "open_checkpoint") for a
// bad name, a missing refs/main, or a snapshot that is not there, each
// listing the snapshots that are.
Result<std::filesystem::path> cache_snapshot(const std::filesystem::path &repository,
                                             const std::optional<std::string> &revision);

}  // namespace rootspan::weights
