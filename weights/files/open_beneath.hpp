// Opening a file named by a shard index exactly once, beneath the folders
// trusted to hold the checkpoint, so that the file checked is the file read:
// a symbolic link swapped in after the check can make the open fail, never
// lead it elsewhere. The returned descriptor serves the header, the mapping
// and every read; nothing reopens the file by name.
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/diagnostic.hpp"
#include "weights/files/input_file.hpp"

namespace rootspan::weights {

// Opens `name` (a portable relative path) in `folder`, whose canonical form
// must be one of `trusted` (canonical folders). The open is made relative to
// a descriptor of `folder` with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_MAGICLINKS); when a link leads out of `folder` (a Hugging Face
// snapshot's link into the repository's blobs/), or openat2 is missing, the
// path is walked one component at a time with O_NOFOLLOW: a link's target is
// resolved here, lexically (".." drops the last component), and the walk
// goes on from the descriptor of the trusted folder that holds the target; a
// target in no trusted folder is refused. The file itself is opened with
// kInputOpenFlags and checked to be a regular file. Whichever way it was
// opened, the descriptor's real location (/proc/self/fd) must lie inside a
// trusted folder and name the same file (device and inode): the folders are
// opened by path, and one swapped for a link since the check is caught here.
// Errors: `code` when the name leads out of the trusted folders, through too
// many links, to something other than a regular file, or to a file whose
// real path does not lead back to it; ROOTSPAN_ERR_IO when a component cannot
// be opened or the file's location cannot be read. Causes start with `subject` and name `name`.
Result<std::shared_ptr<const InputFile>> open_beneath(const std::filesystem::path &folder, std::string_view name,
                                                      std::span<const std::filesystem::path> trusted,
                                                      rootspan_status code, std::string operation,
                                                      std::string_view subject);

}  // namespace rootspan::weights
