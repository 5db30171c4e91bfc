#include "core/loader/plugin_dependencies.hpp"

#include <set>
#include <system_error>
#include <utility>

#include "core/loader/elf_dynamic.hpp"
#include "core/loader/trusted_path.hpp"

namespace rootspan {

namespace {

namespace fs = std::filesystem;

Diagnostic refused(const std::string &who, const std::string &cause) {
  Diagnostic d = make_error(ROOTSPAN_ERR_PLUGIN_REJECTED, "load_plugin", who + ": " + cause);
  d.policy = "L4";
  return d;
}

std::vector<std::string> split_entries(const std::string &list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = list.find(':', start);
    out.push_back(list.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

// $ORIGIN and ${ORIGIN} replaced by origin; nullopt when another
// substitution is left (this loader does not guess $LIB or $PLATFORM).
std::optional<std::string> expand_origin(const std::string &entry, const fs::path &origin) {
  std::string out;
  for (std::size_t i = 0; i < entry.size();) {
    if (entry.compare(i, 7, "$ORIGIN") == 0) {
      out += origin.string();
      i += 7;
    } else if (entry.compare(i, 9, "${ORIGIN}") == 0) {
      out += origin.string();
      i += 9;
    } else if (entry[i] == '$') {
      return std::nullopt;
    } else {
      out += entry[i++];
    }
  }
  return out;
}

// The folders a library asks its dependencies to be searched in, each
// checked: absolute once $ORIGIN is expanded, and trusted.
Result<std::vector<fs::path>> search_folders(const ElfDynamic &dynamic, const fs::path &origin,
                                             const std::string &who) {
  const bool runpath = dynamic.runpath.has_value();
  const std::optional<std::string> &list = runpath ? dynamic.runpath : dynamic.rpath;
  const std::string tag = runpath ? "RUNPATH" : "RPATH";
  std::vector<fs::path> folders;
  if (!list) return folders;
  for (const std::string &entry : split_entries(*list)) {
    const std::string named = tag + " entry \"" + entry + "\"";
    auto expanded = expand_origin(entry, origin);
    if (!expanded) {
      return refused(who, named + ": unsupported substitution (expected an absolute folder or one under $ORIGIN)");
    }
    fs::path folder = fs::path(*expanded).lexically_normal();
    if (!folder.is_absolute()) {
      return refused(who, named +
                              ": relative (expected an absolute folder or one under $ORIGIN; a relative one "
                              "would be searched from the current directory)");
    }
    // A folder that does not exist yet is as safe as the folder that could create it.
    fs::path existing = folder;
    std::error_code ec;
    while (!fs::exists(existing, ec) && existing.has_relative_path()) existing = existing.parent_path();
    if (auto violation = find_trust_violation(existing)) {
      return refused(who, named + " (" + folder.string() + "): not trusted: " + violation->describe());
    }
    folders.push_back(folder);
  }
  return folders;
}

struct Walk {
  const std::map<std::string, std::string> &pins;
  const std::string &who;
  std::set<std::string> pins_used;
  std::set<std::pair<dev_t, ino_t>> seen;
  std::vector<CheckedLibrary> order;
};

Result<void> visit(Walk &walk, const CheckedLibrary &library, const std::string &library_who, int depth) {
  auto dynamic = read_elf_dynamic(library.fd.get(), library_who);
  if (!dynamic) return dynamic.error();
  auto folders = search_folders(dynamic.value(), library.real_path.parent_path(), library_who);
  if (!folders) return folders.error();

  for (const std::string &name : dynamic.value().needed) {
    fs::path found;
    if (name.find('/') != std::string::npos) {
      if (!fs::path(name).is_absolute()) {
        return refused(library_who, "DT_NEEDED \"" + name +
                                        "\" is a relative path (expected a library name or an absolute path; it "
                                        "would be opened from the current directory)");
      }
      found = name;
    } else {
      for (const fs::path &folder : folders.value()) {
        std::error_code ec;
        if (fs::exists(folder / name, ec)) {
          found = folder / name;
          break;
        }
      }
    }
    if (found.empty()) continue;  // not the plugin's own: the system search finds it

    const std::string dependency_who = walk.who + ": dependency " + name + " (" + found.string() + ")";
    if (depth >= kMaxDependencyDepth) {
      return refused(dependency_who,
                     "dependencies nested more than " + std::to_string(kMaxDependencyDepth) + " levels deep");
    }
    CheckedLibrary dependency;
    dependency.path = found;
    dependency.requested = name;
    dependency.needed_as = name;
    dependency.context = library.context;
    BOOST_OUTCOME_TRY(open_library(dependency, dependency_who));
    std::optional<std::string> pin;
    if (!walk.pins.empty()) {
      auto it = walk.pins.find(name);
      if (it == walk.pins.end()) {
        return refused(dependency_who,
                       "not pinned (expected its digest in the entry's dependencies_sha256, which pins the "
                       "plugin's libraries)");
      }
      pin = it->second;
      walk.pins_used.insert(name);
    }
    BOOST_OUTCOME_TRY(check_library_descriptor(dependency, pin, dependency_who));
    // The checked copy is preloaded, and the plugin's DT_NEEDED resolves to it
    // only by its DT_SONAME: a dependency named otherwise (or not at all)
    // would leave ld.so to load the name again from disk, unchecked.
    if (name.find('/') == std::string::npos) {
      auto own = read_elf_dynamic(dependency.fd.get(), dependency_who);
      if (!own) return own.error();
      if (own.value().soname != name) {
        return refused(dependency_who,
                       (own.value().soname ? "has DT_SONAME \"" + *own.value().soname + "\"" : "has no DT_SONAME") +
                           ", but is needed as \"" + name +
                           "\" (expected equal names: the checked copy would not satisfy the DT_NEEDED, and the "
                           "dynamic loader would load the library again from disk, unchecked)");
      }
    }
    if (!walk.seen.insert({dependency.device, dependency.inode}).second) continue;
    BOOST_OUTCOME_TRY(visit(walk, dependency, dependency_who, depth + 1));  // its own first
    walk.order.push_back(std::move(dependency));
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace

Result<std::vector<CheckedLibrary>> check_plugin_dependencies(const CheckedLibrary &plugin,
                                                              const std::map<std::string, std::string> &pins,
                                                              const std::string &who) {
  Walk walk{pins, who, {}, {}, {}};
  walk.seen.insert({plugin.device, plugin.inode});
  BOOST_OUTCOME_TRY(visit(walk, plugin, who, 0));
  for (const auto &[name, digest] : pins) {
    if (walk.pins_used.count(name) == 0) {
      return refused(who, "dependencies_sha256 names " + name +
                              ", which the plugin does not load from its own RUNPATH/RPATH folders (expected a "
                              "DT_NEEDED library found there)");
    }
  }
  return std::move(walk.order);
}

}  // namespace rootspan
