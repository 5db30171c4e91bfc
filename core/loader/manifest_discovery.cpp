#include "core/loader/manifest_discovery.hpp"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <system_error>

#include <dlfcn.h>
#include <unistd.h>

#include "core/loader/trusted_path.hpp"

// The build passes the install directories; these are the usual ones for a
// build that does not (a scratch build, a test). A build for a Python wheel
// defines ROOTSPAN_DATADIR_BESIDE_LIBRARY instead of ROOTSPAN_DATADIR: pip
// may put the package anywhere, so its share/ folder is found beside the
// library itself.
#ifndef ROOTSPAN_SYSCONFDIR
#define ROOTSPAN_SYSCONFDIR "/etc"
#endif
#ifndef ROOTSPAN_DATADIR
#define ROOTSPAN_DATADIR "/usr/share"
#endif

namespace rootspan {

namespace {

namespace fs = std::filesystem;

std::vector<std::string> split_list(std::string_view list) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    std::size_t end = std::min(list.find(':', start), list.size());
    if (end > start) out.emplace_back(list.substr(start, end - start));  // empty entries are dropped
    start = end + 1;
  }
  return out;
}

std::optional<std::string> non_empty(const DiscoveryInputs &inputs, const char *name) {
  if (!inputs.environment) return std::nullopt;
  auto value = inputs.environment(name);
  if (!value || value->empty()) return std::nullopt;
  return value;
}

// The *.json regular files (or links to them) of a folder, sorted by name.
std::vector<fs::path> json_files(const fs::path &folder) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::directory_iterator it(folder, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path &p = it->path();
    std::error_code type_ec;
    if (p.extension() == ".json" && fs::is_regular_file(p, type_ec)) files.push_back(p);
  }
  std::sort(files.begin(), files.end(),
            [](const fs::path &a, const fs::path &b) { return a.filename().native() < b.filename().native(); });
  return files;
}

// A folder's *.json files when the folder passes the trust rule; otherwise
// nothing, and the refusal in refused.
std::vector<fs::path> trusted_json_files(const fs::path &folder, bool user_folder, std::vector<Diagnostic> *refused) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return {};
  if (auto violation = find_trust_violation(folder)) {
    if (refused != nullptr) {
      std::string reason =
          "manifest folder " + folder.string() + " not searched: not trusted: " + violation->describe();
      if (user_folder && ::geteuid() == 0) {
        reason += " (running as root, a user's configuration folder is searched only when root owns it)";
      }
      Diagnostic d = make_error(ROOTSPAN_ERR_INVALID_MANIFEST, "load_manifest", reason);
      d.policy = "L3";
      refused->push_back(std::move(d));
    }
    return {};
  }
  return json_files(folder);
}

// A caller or ROOTSPAN_MANIFEST path: a directory stands for its files.
void add_given(std::vector<fs::path> &out, const fs::path &path, std::vector<Diagnostic> *refused) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    auto files = trusted_json_files(path, false, refused);
    out.insert(out.end(), files.begin(), files.end());
  } else {
    out.push_back(path);
  }
}

// The user's own configuration base: $XDG_CONFIG_HOME, else ~/.config. XDG: a
// relative value is invalid and ignored, as the spec says.
std::optional<fs::path> user_config_base(const DiscoveryInputs &inputs) {
  auto config_home = non_empty(inputs, "XDG_CONFIG_HOME");
  if (config_home && fs::path(*config_home).is_absolute()) return fs::path(*config_home);
  if (auto home = non_empty(inputs, "HOME"); home && fs::path(*home).is_absolute()) {
    return fs::path(*home) / ".config";
  }
  return std::nullopt;
}

const fs::path &manifest_suffix() {
  static const fs::path suffix = fs::path("rootspan") / "manifest.d";
  return suffix;
}

std::optional<fs::path> user_manifest_folder(const DiscoveryInputs &inputs) {
  auto base = user_config_base(inputs);
  if (!base) return std::nullopt;
  return (*base / manifest_suffix()).lexically_normal();
}

}  // namespace

std::optional<std::string> secure_environment(const char *name) {
  const char *value = ::secure_getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

fs::path default_sysconfdir() { return ROOTSPAN_SYSCONFDIR; }

#ifdef ROOTSPAN_DATADIR_BESIDE_LIBRARY
// The folder librootspan.so was loaded from (absolute), or an empty path
// when the loader cannot say: an empty datadir is not searched.
static fs::path library_folder() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void *>(&library_folder), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code error;
  fs::path library = fs::absolute(info.dli_fname, error);
  return error ? fs::path() : library.parent_path();
}
fs::path default_datadir() {
  const fs::path folder = library_folder();
  return folder.empty() ? folder : folder / ROOTSPAN_DATADIR_BESIDE_LIBRARY;
}
#else
fs::path default_datadir() { return ROOTSPAN_DATADIR; }
#endif

std::vector<fs::path> manifest_folders(const DiscoveryInputs &inputs) {
  const fs::path &suffix = manifest_suffix();
  std::vector<fs::path> bases;

  if (auto user = user_config_base(inputs)) bases.push_back(*user);
  auto config_dirs = non_empty(inputs, "XDG_CONFIG_DIRS");
  for (const auto &dir : split_list(config_dirs ? *config_dirs : std::string("/etc/xdg"))) {
    if (fs::path(dir).is_absolute()) bases.emplace_back(dir);
  }
  if (inputs.sysconfdir.is_absolute()) bases.push_back(inputs.sysconfdir);
  if (inputs.datadir.is_absolute()) bases.push_back(inputs.datadir);

  // The same folder twice (XDG_CONFIG_DIRS=/etc and sysconfdir /etc) would
  // load every provider in it twice.
  std::vector<fs::path> folders;
  for (const auto &base : bases) {
    fs::path folder = (base / suffix).lexically_normal();
    if (std::find(folders.begin(), folders.end(), folder) == folders.end()) folders.push_back(folder);
  }
  return folders;
}

std::vector<fs::path> discover_manifests(const DiscoveryInputs &inputs, std::vector<Diagnostic> *refused) {
  std::vector<fs::path> out;
  if (!inputs.explicit_paths.empty()) {
    for (const auto &p : inputs.explicit_paths) add_given(out, p, refused);
    return out;
  }
  if (auto list = non_empty(inputs, "ROOTSPAN_MANIFEST")) {
    for (const auto &p : split_list(*list)) add_given(out, p, refused);
    return out;
  }
  const std::vector<fs::path> folders = manifest_folders(inputs);
  const std::optional<fs::path> user_folder = user_manifest_folder(inputs);
  for (const auto &folder : folders) {
    auto files = trusted_json_files(folder, user_folder && folder == *user_folder, refused);
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

}  // namespace rootspan
