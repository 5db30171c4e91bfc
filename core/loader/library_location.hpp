// L2: where the library a manifest entry names is (docs/loader-policies.md).
#pragma once

#include <filesystem>
#include <string_view>

#include "core/diagnostic.hpp"

namespace rootspan {

struct LibraryLocation {
  std::filesystem::path path;  // absolute and normalized, or the bare name when system_search
  bool system_search = false;  // true: a bare file name for the dynamic loader's search folders
};

// Where the library named `library` in the manifest at `manifest` (an absolute
// path, symlinks resolved) lives; ROOTSPAN_ERR_INVALID_MANIFEST citing L2,
// operation "load_manifest", for an empty name, a NUL, "." or "..", or a
// relative path with no absolute manifest folder to resolve it against.
Result<LibraryLocation> resolve_library(std::string_view library, const std::filesystem::path &manifest);

}  // namespace rootspan
