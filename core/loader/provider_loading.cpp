#include "core/loader/provider_loading.hpp"

#include <filesystem>
#include <utility>

#include "core/loader/abi_negotiation.hpp"
#include "core/loader/manifest.hpp"
#include "core/loader/manifest_discovery.hpp"
#include "core/loader/plugin_file_check.hpp"
#include "core/loader/plugin_library.hpp"

namespace rootspan {

namespace {

// What an entry's report says before anything is tried.
ProviderReport report_for(const ManifestEntry &entry) {
  ProviderReport report;
  report.name = entry.name;
  report.kind = entry.kind;
  report.origin = ROOTSPAN_ORIGIN_MANIFEST;
  report.state = ROOTSPAN_PROVIDER_SKIPPED;
  report.library = entry.library_path.string();
  report.manifest = entry.manifest.string();
  report.abi_major = entry.abi_major;
  report.abi_minor = entry.abi_minor;
  report.priority = entry.priority;
  return report;
}

// A report of something skipped for the reason `why`.
ProviderReport skipped_report(const Diagnostic &why, std::string manifest = {}) {
  ProviderReport report;
  report.origin = ROOTSPAN_ORIGIN_MANIFEST;
  report.manifest = std::move(manifest);
  mark_report(report, ROOTSPAN_PROVIDER_SKIPPED, why);
  return report;
}

// L4, L5, L6: every check before the plugin's own code runs (its entry
// function, in the negotiation, is the first).
Result<PluginToStart> load_entry(const ManifestEntry &entry) {
  auto checked = check_plugin_file(entry);  // L4
  if (!checked) return checked.error();
  auto loaded = load_plugin_library(std::move(checked).value());  // L5
  if (!loaded) return loaded.error();
  auto negotiated = negotiate(loaded.value().entry, entry);  // L6
  if (!negotiated) return negotiated.error();
  return PluginToStart{negotiated.value().table, loaded.value().library, entry.options_json, entry.describe()};
}

}  // namespace

void mark_entry_failure(ProviderReport &report, Diagnostic why, const std::string &description) {
  const bool failed = why.policy.empty();
  if (failed) {
    why.policy = "L7";
    why.cause = description + ": " + why.cause;
  }
  mark_report(report, failed ? ROOTSPAN_PROVIDER_FAILED : ROOTSPAN_PROVIDER_SKIPPED, why);
}

Result<ManifestFindings> find_manifest_providers(const std::vector<std::string> &paths, bool discover) {
  DiscoveryInputs inputs;
  for (const std::string &p : paths) inputs.explicit_paths.emplace_back(p);
  std::vector<Diagnostic> refused_folders;  // L3: folders that failed the trust rule
  const std::vector<std::filesystem::path> found =
      discover || !paths.empty() ? discover_manifests(inputs, &refused_folders) : std::vector<std::filesystem::path>{};
  ManifestFindings out;
  for (const Diagnostic &why : refused_folders) {
    if (!paths.empty()) return why;  // a folder the caller named: the caller must fix it
    out.findings.push_back({skipped_report(why), std::nullopt});
  }
  for (const std::filesystem::path &path : found) {
    auto manifest = read_manifest(path);  // L1, L2
    if (!manifest) {
      // A manifest the caller named is input the caller must fix: fail. A
      // discovered one is reported and skipped, like a bad entry (L7).
      if (!paths.empty()) return manifest.error();
      out.findings.push_back({skipped_report(manifest.error(), path.string()), std::nullopt});
      continue;
    }
    const std::string manifest_path = manifest.value().path.string();
    out.manifests.push_back(manifest_path);
    for (const SkippedEntry &skipped : manifest.value().skipped) {
      ProviderReport report = skipped_report(skipped.error, manifest_path);
      report.name = skipped.name;
      report.kind = skipped.kind;
      report.library = skipped.library;
      out.findings.push_back({std::move(report), std::nullopt});
    }
    for (const ManifestEntry &entry : manifest.value().entries) {
      ProviderReport report = report_for(entry);
      if (!entry.enabled) {
        report.policy = "L7";
        report.reason = "L7: " + entry.describe() + " is disabled";
        out.findings.push_back({std::move(report), std::nullopt});
        continue;
      }
      auto loaded = load_entry(entry);  // L7: a failure skips this entry only
      if (!loaded) {
        mark_entry_failure(report, loaded.error(), entry.describe());
        out.findings.push_back({std::move(report), std::nullopt});
        continue;
      }
      out.findings.push_back({std::move(report), std::move(loaded).value()});
    }
  }
  return out;
}

}  // namespace rootspan
