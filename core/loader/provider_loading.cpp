// Loading providers from manifests (docs/loader-policies.md): discovery (L3), reading (L1,
// L2), the file checks (L4), loading (L5), negotiation (L6), skip-and-continue
// (L7) and library lifetime (L8, through the Provider's library reference).
// Every entry ends as one ProviderReport: loaded, skipped (with the policy and
// the reason) or failed.
#include "core/context.hpp"
#include "core/loader/abi_negotiation.hpp"
#include "core/loader/manifest.hpp"
#include "core/loader/manifest_discovery.hpp"
#include "core/loader/plugin_file_check.hpp"
#include "core/loader/plugin_library.hpp"

namespace rootspan {

namespace {

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

void mark(ProviderReport &report, rootspan_provider_state state, const Diagnostic &why) {
  report.state = state;
  report.policy = why.policy;
  report.reason = why.message();
  report.code = why.code;
}

}  // namespace

Result<void> Context::load_manifest_entry(const ManifestEntry &entry, ProviderReport &report) {
  auto checked = check_plugin_file(entry);  // L4
  if (!checked) return checked.error();
  auto loaded = load_plugin_library(std::move(checked).value());  // L5
  if (!loaded) return loaded.error();
  auto negotiated = negotiate(loaded.value().entry, entry);  // L6
  if (!negotiated) return negotiated.error();
  BOOST_OUTCOME_TRY(check_unique_name(negotiated.value().name));
  std::shared_ptr<void> library = loaded.value().library;  // L8: roots keep it loaded
  std::lock_guard adding(add_mutex_);
  return start_provider(negotiated.value().table, std::move(library), entry.options_json, report);
}

Result<void> Context::load_manifests(const std::vector<std::string> &paths, bool discover) {
  DiscoveryInputs inputs;
  for (const std::string &p : paths) inputs.explicit_paths.emplace_back(p);
  std::vector<Diagnostic> refused_folders;  // L3: folders that failed the trust rule
  const std::vector<std::filesystem::path> found =
      discover || !paths.empty() ? discover_manifests(inputs, &refused_folders) : std::vector<std::filesystem::path>{};
  std::vector<std::string> reasons;
  for (const Diagnostic &why : refused_folders) {
    if (!paths.empty()) return why;  // a folder the caller named: the caller must fix it
    ProviderReport report;
    report.origin = ROOTSPAN_ORIGIN_MANIFEST;
    mark(report, ROOTSPAN_PROVIDER_SKIPPED, why);
    reasons.push_back(report.reason);
    reports_.push_back(std::move(report));
  }
  for (const std::filesystem::path &path : found) {
    auto manifest = read_manifest(path);  // L1, L2
    if (!manifest) {
      // A manifest the caller named is input the caller must fix: fail. A
      // discovered one is reported and skipped, like a bad entry (L7).
      if (!paths.empty()) return manifest.error();
      ProviderReport report;
      report.origin = ROOTSPAN_ORIGIN_MANIFEST;
      report.manifest = path.string();
      mark(report, ROOTSPAN_PROVIDER_SKIPPED, manifest.error());
      reasons.push_back(report.reason);
      record(std::move(report));
      continue;
    }
    manifests_.push_back(manifest.value().path.string());
    for (const SkippedEntry &skipped : manifest.value().skipped) {
      ProviderReport report;
      report.name = skipped.name;
      report.kind = skipped.kind;
      report.library = skipped.library;
      report.origin = ROOTSPAN_ORIGIN_MANIFEST;
      report.manifest = manifest.value().path.string();
      mark(report, ROOTSPAN_PROVIDER_SKIPPED, skipped.error);
      reasons.push_back(report.reason);
      record(std::move(report));
    }
    for (const ManifestEntry &entry : manifest.value().entries) {
      ProviderReport report = report_for(entry);
      if (!entry.enabled) {
        report.policy = "L7";
        report.reason = "L7: " + entry.describe() + " is disabled";
        record(std::move(report));
        continue;
      }
      auto loaded = load_manifest_entry(entry, report);  // L7: a failure skips this entry only
      if (!loaded) {
        // Init failing is the provider's failure; everything before it is a skip.
        Diagnostic why = loaded.error();
        const bool failed = why.policy.empty();
        if (failed) {
          why.policy = "L7";
          why.cause = entry.describe() + ": " + why.cause;
        }
        mark(report, failed ? ROOTSPAN_PROVIDER_FAILED : ROOTSPAN_PROVIDER_SKIPPED, why);
        reasons.push_back(report.reason);
        record(std::move(report));
      }
    }
  }
  if (providers().empty() && !reasons.empty()) {
    std::string all;
    for (const std::string &r : reasons) all += "\n  " + r;
    Diagnostic d = make_error(ROOTSPAN_ERR_NO_PROVIDER, "load_manifest",
                              "no provider could be used; " + std::to_string(reasons.size()) + " reasons:" + all);
    d.policy = "L7";
    return d;
  }
  return BOOST_OUTCOME_V2_NAMESPACE::success();
}

}  // namespace rootspan
