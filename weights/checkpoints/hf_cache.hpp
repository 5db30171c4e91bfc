// A Hugging Face cache repository folder, `models--org--name` (docs/weight-schema.md):
// `snapshots/<commit>/` holds one folder per downloaded revision, its files
// symbolic links into `blobs/`, and `refs/<branch>` holds the commit a branch
// or tag stands for. Here a repository folder and a revision become the
// snapshot folder to open as the checkpoint.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "core/diagnostic.hpp"

namespace rootspan::weights {

// `folder` has a `snapshots` folder beside a `blobs` or `refs` folder.
bool is_cache_repository(const std::filesystem::path &folder);

// A cache keeps each file's bytes in <repository>/blobs/<name>, linked to
// from snapshots/<revision>/: is `real` (a path with every link followed)
// such a blob? Large (Git LFS) files are named by their SHA-256; small ones,
// kept in git, by their git object id.
bool is_cache_blob(const std::filesystem::path &real);

// 40 lowercase hex digits: a commit, as refs/ name them and snapshots/ are
// named, and a git object id, as small files' blobs are named.
bool is_git_object_id(std::string_view text);

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
