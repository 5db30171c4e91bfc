// L2: where a manifest entry's library is (docs/loader-policies.md#l2-where-a-library-is).
// The current directory is never consulted: an absolute path is used as it is,
// a relative one with a '/' is resolved against the manifest's own folder, and
// a bare name is left to the dynamic loader's search folders
// (library_search_dirs in plugin_file_check.cpp).
#include "core/loader/library_location.hpp"

#include "core/text/quoting.hpp"

namespace rootspan {

namespace fs = std::filesystem;

Result<LibraryLocation> resolve_library(std::string_view library, const fs::path &manifest) {
  auto refuse = [&](const std::string &why) {
    Diagnostic d =
        make_error(ROOTSPAN_ERR_INVALID_MANIFEST, "load_manifest", "library " + quoted_text(library) + ": " + why);
    d.policy = "L2";
    return d;
  };
  if (library.empty()) return refuse("empty (expected a file name or a path)");
  if (library.find('\0') != std::string_view::npos) return refuse("contains a NUL character");
  fs::path path{std::string(library)};
  if (path.is_absolute()) return LibraryLocation{path.lexically_normal(), false};
  if (library.find('/') == std::string_view::npos) {
    // A bare name goes to the system search; "." and ".." would name directories.
    if (library == "." || library == "..") return refuse("expected a file name, actual a directory name");
    return LibraryLocation{path, true};
  }
  // Relative with a '/': against the manifest's own directory, never the current one.
  fs::path base = manifest.parent_path();
  if (!base.is_absolute()) {
    return refuse("relative path, but the manifest " + quoted_text(manifest.string()) +
                  " has no absolute directory to resolve it against");
  }
  return LibraryLocation{(base / path).lexically_normal(), false};
}

}  // namespace rootspan
