// Manifest: the reader for manifest format v1 (docs/loader-policies.md) and the policies that
// judge a manifest by its text alone:
//   L1  the file as a whole: it is JSON, its file_format_version is checked
//       first (unknown major refused, newer minor read with a note), and
//       "providers" is an array. A whole-file failure fails the manifest.
//   L2  where each entry's library is, through resolve_library
//       (library_location.hpp), the rule's one home.
//   L7  (per entry) a bad entry is skipped with its reason and policy, and the
//       other entries still load.
// An entry that declares an ABI this core cannot speak is skipped here too,
// citing L6 (refuse_declared_abi in abi_negotiation.hpp), so that no code of
// it is ever loaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"

namespace rootspan {

// The one format major this reader understands, and the newest minor it knows.
inline constexpr std::uint32_t kManifestFormatMajor = 1;
inline constexpr std::uint32_t kManifestFormatMinor = 0;

struct ManifestVersion {
  std::uint32_t major = 0;
  std::uint32_t minor = 0;
  std::uint32_t patch = 0;
  std::string text;  // as written, e.g. "1.0.0"
};

// One usable provider entry. Strings are as written in the manifest.
struct ManifestEntry {
  std::filesystem::path manifest;  // the manifest that named it (absolute when read from a file)
  std::size_t index = 0;           // position in "providers", from 0
  std::string name;
  std::string kind;
  std::string library;                 // as written
  std::filesystem::path library_path;  // resolved per L2; a bare name when system_search
  bool system_search = false;          // true: library is a bare file name for the system search (L2)
  std::uint32_t abi_major = 0;
  std::uint32_t abi_minor = 0;
  bool enabled = true;
  std::int32_t priority = 0;
  std::optional<std::string> sha256;  // 64 lowercase hex digits
  // "dependencies_sha256": a dependency's DT_NEEDED name -> its digest. When
  // present, every dependency found in the plugin's own RUNPATH/RPATH folders
  // must be pinned here and match, and each named one must be found.
  std::map<std::string, std::string> dependencies_sha256;
  std::string options_json = "{}";  // the "options" object, serialized

  // "manifest /etc/rootspan/manifest.d/10-cuda.json entry 2 \"cuda\"", for messages.
  std::string describe() const;
};

// An entry that was skipped, with what could still be read of it.
struct SkippedEntry {
  std::size_t index = 0;
  std::string name;     // "" when missing or not a string
  std::string kind;     // "" when missing or not a string
  std::string library;  // "" when missing or not a string
  Diagnostic error;     // code, policy ("L7", "L2" or "L6") and the reason
};

struct Manifest {
  std::filesystem::path path;
  ManifestVersion version;
  std::vector<std::string> notes;      // not errors: a newer minor, unknown keys, disabled entries, ...
  std::vector<ManifestEntry> entries;  // the good entries, in file order
  std::vector<SkippedEntry> skipped;   // the bad ones, in file order
};

// Reads and checks the manifest at path. A relative path is made absolute first,
// so resolved library paths do not depend on a later change of directory; L2
// resolves against the directory of the file itself, symlinks resolved (a
// manifest.d link to a package's manifest finds the package's libraries), while
// Manifest::path and messages keep the path as named. Fails
// with ROOTSPAN_ERR_IO when the file cannot be read and ROOTSPAN_ERR_INVALID_MANIFEST
// for a whole-file error (L1); bad entries are returned in Manifest::skipped.
Result<Manifest> read_manifest(const std::filesystem::path &path);

// Parses manifest text as if it were read from origin (used for messages and as
// the base directory of relative library paths). A relative origin is made
// absolute against the current directory now; with an empty origin, entries
// with a relative library path are skipped under L2. Never throws.
Result<Manifest> parse_manifest(std::string_view text, const std::filesystem::path &origin);

}  // namespace rootspan
