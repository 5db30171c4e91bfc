// `rootspan load --verify`: the SHA-256 of each component's bytes as the
// checkpoint's files hold them, read by the program itself (pread on its own
// descriptors, following the load's read plan), to compare with the digest
// the library reads back from provider memory.
#pragma once

#include <map>
#include <string>

#include "command.hpp"

namespace rootspan::cli {

struct SourceDigests {
  std::map<std::string, std::string> by_component;  // component id -> 64 hex digits
};

// The digests of every component a load of `path` with `options` makes
// (its slice with options.world_size > 0, else whole). Fails with the
// library's error when the checkpoint cannot be planned (error set), or with
// a message when a file cannot be read (problem set).
bool digest_sources(const std::string &path, const rootspan_load_options &options, SourceDigests &out, ErrorPtr &error,
                    std::string &problem);

}  // namespace rootspan::cli
