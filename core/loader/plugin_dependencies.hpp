// A plugin's dependencies, policy L4 (docs/loader-policies.md): what the plugin needs from
// the folders it names itself is checked like the plugin, before any of it
// runs, and loaded through its own checked descriptor.
//
// From the checked descriptor (core/loader/elf_dynamic.hpp): DT_NEEDED, and the
// folders of DT_RUNPATH (or, without it, DT_RPATH). Each folder entry
//   - has $ORIGIN / ${ORIGIN} replaced by the folder of the plugin's real file
//     (the dynamic loader would use /proc/self/fd, the name the plugin is
//     loaded under, and find nothing, or the wrong thing);
//   - is refused when relative (it would be searched from the current
//     directory), when it holds another substitution ($LIB, $PLATFORM), and
//     when the folder (or, while it does not exist, the nearest folder above
//     it) fails the trust rule.
// A DT_NEEDED name found in one of those folders is checked as the plugin is
// (regular file, trust rule, ELF header, pin when dependencies_sha256 is
// given), and its own dependencies before it. A name with a '/' is used as a
// path when absolute and refused when relative. Names found in none of the
// plugin's folders are left to the dynamic loader's system search.
//
// The loader (core/loader/plugin_library.cpp) loads the dependencies first, each
// through its descriptor, so that the plugin's DT_NEEDED resolves to them by
// their soname.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/loader/plugin_file_check.hpp"

namespace rootspan {

// How deep dependencies of dependencies are followed.
inline constexpr int kMaxDependencyDepth = 16;

// The checked dependencies of a checked library, in load order. pins: the
// manifest's dependencies_sha256 (empty: not pinned). who starts every message.
Result<std::vector<CheckedLibrary>> check_plugin_dependencies(const CheckedLibrary &plugin,
                                                              const std::map<std::string, std::string> &pins,
                                                              const std::string &who);

}  // namespace rootspan
