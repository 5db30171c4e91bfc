// Portable relative file names inside a checkpoint folder (docs/weight-schema.md). Shard
// names come from the index file, which is data, not something the user
// typed: a name must not reach outside the checkpoint, neither by its text
// ("/etc/passwd", "../x", "C:x", "a\\b") nor through a symbolic link that
// points out of the checkpoint's trusted folders.
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "core/diagnostic.hpp"

namespace rootspan::weights {

// The textual rules: not empty; no leading '/'; no '\'; no ':' (so no drive
// letter); no control character (below 0x20, or 0x7F); no empty, "." or ".."
// segment between '/'. Fails with `code`/`operation`, the cause naming the
// file name, what `subject` it came from, and the rule it broke.
Result<void> check_portable_name(std::string_view name, rootspan_status code, std::string operation,
                                 std::string_view subject);
// Whether `name` keeps those rules (check_portable_name without the error).
bool is_portable_name(std::string_view name);

// check_portable_name, then resolves `folder / name` through every symbolic
// link, a chain included (weakly_canonical), and requires the result to lie
// in or below one of `trusted` (canonical folders; `folder` itself need not
// be one of them). Returns the resolved path: the one to open. A name that
// leads elsewhere, or through a loop of links, fails with `code`, naming the
// file, where it leads, the trusted folders and what to do about it; one that
// cannot be resolved for another reason (permissions) with ROOTSPAN_ERR_IO.
Result<std::filesystem::path> resolve_inside(const std::filesystem::path &folder, std::string_view name,
                                             std::span<const std::filesystem::path> trusted, rootspan_status code,
                                             std::string operation, std::string_view subject);

// `inner` lies in or below `outer`, both canonical; compared segment by
// segment, so "/ckpt-evil" is not inside "/ckpt".
bool lies_inside(const std::filesystem::path &inner, const std::filesystem::path &outer);

}  // namespace rootspan::weights
