// Manifest discovery, policy L3 (docs/loader-policies.md): which manifest files a context
// reads, in which order.
//   1. the paths the caller passes, if any;
//   2. else ROOTSPAN_MANIFEST, a ':'-separated list, if set and not empty;
//   3. else the manifest.d folders, in this order:
//        $XDG_CONFIG_HOME/rootspan/manifest.d  (default ~/.config)
//        each $XDG_CONFIG_DIRS entry /rootspan/manifest.d  (default /etc/xdg)
//        <sysconfdir>/rootspan/manifest.d
//        <datadir>/rootspan/manifest.d
//      taking the *.json files of each folder sorted by name.
// A directory given in 1 or 2 stands for its *.json files, sorted by name.
// Environment variables are read with secure_getenv, so a set-uid or set-gid
// process ignores them; empty and relative entries of the XDG lists are
// ignored (the XDG spec calls them invalid), so the current directory is never
// searched.
// Every folder searched must pass the trust rule (core/loader/trusted_path.hpp): a
// folder that fails it (world-writable, owned by another user, below such a
// folder; running as root, any user's own configuration folder not owned by
// root) is not searched, and the refusal is reported under L3.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"

namespace rootspan {

// Looks up one environment variable; nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(const char *name)>;

// The process environment, through secure_getenv.
std::optional<std::string> secure_environment(const char *name);

// The build's install directories (meson's sysconfdir and datadir, absolute).
std::filesystem::path default_sysconfdir();
std::filesystem::path default_datadir();

struct DiscoveryInputs {
  std::vector<std::filesystem::path> explicit_paths;   // non-empty: used alone (step 1)
  EnvironmentLookup environment = secure_environment;  // injectable for tests
  std::filesystem::path sysconfdir = default_sysconfdir();
  std::filesystem::path datadir = default_datadir();
};

// The manifest.d folders of step 3, in search order, without duplicates.
// Folders are listed whether or not they exist.
std::vector<std::filesystem::path> manifest_folders(const DiscoveryInputs &inputs);

// The manifest files to read, in order (L3). Never fails: a folder that does
// not exist or cannot be listed contributes nothing, and an explicit or
// ROOTSPAN_MANIFEST path is returned as given, so that reading it reports what
// is wrong with it. A folder that fails the trust rule contributes nothing; when
// refused is given, each such folder adds an error there
// (ROOTSPAN_ERR_INVALID_MANIFEST, policy L3, naming the folder, the offending
// path, its owner and its mode).
std::vector<std::filesystem::path> discover_manifests(const DiscoveryInputs &inputs,
                                                      std::vector<Diagnostic> *refused = nullptr);

}  // namespace rootspan
