#include "core/manifest_discovery.hpp"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <system_error>

// The build passes the install directories; these are the usual ones for a
// build that does not (a scratch build, a test).
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

// A caller or ROOTSPAN_MANIFEST path: a directory stands for its files.
void add_given(std::vector<fs::path> &out, const fs::path &path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    auto files = json_files(path);
    out.insert(out.end(), files.begin(), files.end());
  } else {
    out.push_back(path);
  }
}

}  // namespace

std::optional<std::string> secure_environment(const char *name) {
  const char *value = ::secure_getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

fs::path default_sysconfdir() { return ROOTSPAN_SYSCONFDIR; }
fs::path default_datadir() { return ROOTSPAN_DATADIR; }

std::vector<fs::path> manifest_folders(const DiscoveryInputs &inputs) {
  const fs::path suffix = fs::path("rootspan") / "manifest.d";
  std::vector<fs::path> bases;

  // XDG: a relative value is invalid and ignored, as the spec says.
  auto config_home = non_empty(inputs, "XDG_CONFIG_HOME");
  if (config_home && fs::path(*config_home).is_absolute()) {
    bases.emplace_back(*config_home);
  } else if (auto home = non_empty(inputs, "HOME"); home && fs::path(*home).is_absolute()) {
    bases.push_back(fs::path(*home) / ".config");
  }
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

std::vector<fs::path> discover_manifests(const DiscoveryInputs &inputs) {
  std::vector<fs::path> out;
  if (!inputs.explicit_paths.empty()) {
    for (const auto &p : inputs.explicit_paths) add_given(out, p);
    return out;
  }
  if (auto list = non_empty(inputs, "ROOTSPAN_MANIFEST")) {
    for (const auto &p : split_list(*list)) add_given(out, p);
    return out;
  }
  for (const auto &folder : manifest_folders(inputs)) {
    auto files = json_files(folder);
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

}  // namespace rootspan
