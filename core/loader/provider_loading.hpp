// Loading providers from manifests (docs/loader-policies.md): discovery (L3),
// reading (L1, L2), the file checks (L4), loading (L5) and negotiation (L6),
// with skip-and-continue (L7). The loader starts nothing and records
// nothing: it returns what it found, one finding per manifest entry in
// manifest order, and the context starts the plugins and records every
// report (Context::start_manifest_providers).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/provider_report.hpp"
#include "rootspan/provider.h"

namespace rootspan {

// A plugin checked (L4), loaded (L5) and negotiated (L6), not yet started.
struct PluginToStart {
  rootspan_provider_table table{};  // negotiated; its strings and hooks live in `library`
  std::shared_ptr<void> library;    // L8: the provider and its roots keep it loaded
  std::string options_json;         // the entry's "options", serialized
  std::string description;          // the entry, for messages (ManifestEntry::describe)
};

// One thing a manifest led to: a report of a folder, manifest or entry that
// was skipped (an error: report.code is not ROOTSPAN_OK) or disabled, or,
// with `plugin` set, a plugin ready to start and what its report says so far.
struct ManifestFinding {
  ProviderReport report;
  std::optional<PluginToStart> plugin;
};

struct ManifestFindings {
  std::vector<std::string> manifests;     // the manifest files read, in order
  std::vector<ManifestFinding> findings;  // in the order they were found
};

// Marks the report of an entry that could not be used: an error a policy
// names (L4-L6, a name already taken) skipped it; any other is the
// provider's own failure (its init), FAILED under L7 with `description`,
// the entry, in front of the cause.
void mark_entry_failure(ProviderReport &report, Diagnostic why, const std::string &description);

// Reads the manifests `paths` names (files or folders), and with `discover`
// the default manifest folders too. What the caller named must be right: a
// named folder that fails the trust rule (L3) or a named manifest that
// cannot be read (L1, L2) is the error returned, nothing found. Anything
// discovered that fails, and every bad entry, is a finding.
Result<ManifestFindings> find_manifest_providers(const std::vector<std::string> &paths, bool discover);

}  // namespace rootspan
