// `rootspan providers`: the discovery report (docs/loader-policies.md).
#include <cstdio>

#include "command.hpp"
#include "terminal_text.hpp"

namespace rootspan::cli {

namespace {

const char *origin_name(rootspan_provider_origin origin) {
  switch (origin) {
    case ROOTSPAN_ORIGIN_STATIC:
      return "static";
    case ROOTSPAN_ORIGIN_MANIFEST:
      return "manifest";
    default:
      return "embedded";
  }
}

const char *state_name(rootspan_provider_state state) {
  switch (state) {
    case ROOTSPAN_PROVIDER_LOADED:
      return "loaded";
    case ROOTSPAN_PROVIDER_SKIPPED:
      return "skipped";
    case ROOTSPAN_PROVIDER_NO_DEVICE:
      return "no device";
    default:
      return "failed";
  }
}

nlohmann::json string_or_null(const char *s) { return s == nullptr ? nlohmann::json(nullptr) : nlohmann::json(s); }

nlohmann::json devices_of(rootspan_context *context, const rootspan_provider_report &report) {
  nlohmann::json devices = nlohmann::json::array();
  if (report.state != ROOTSPAN_PROVIDER_LOADED) return devices;
  for (std::uint32_t ordinal = 0; ordinal < report.device_count; ++ordinal) {
    rootspan_device_info info{};
    info.struct_size = sizeof info;
    if (rootspan_provider_device_info(context, report.name, ordinal, &info, nullptr) != ROOTSPAN_OK) continue;
    devices.push_back(
        {{"ordinal", info.ordinal},
         {"name", info.name},
         {"memory_bytes", info.total_memory_bytes},
         {"free_memory_bytes", info.free_memory_bytes},
         {"pci_bus_id", info.pci_bus_id[0] == '\0' ? nlohmann::json(nullptr) : nlohmann::json(info.pci_bus_id)}});
  }
  return devices;
}

}  // namespace

int run_providers(std::vector<std::string> args) {
  CommonOptions options;
  if (!take_common_options(args, options)) return kUsage;
  if (!args.empty()) return print_usage_error(options, "providers takes no argument: " + args.front());
  ContextPtr context;
  ErrorPtr error;
  if (open_context(options.providers, context, error) != ROOTSPAN_OK) return print_error(options, error.get());

  nlohmann::json manifests = nlohmann::json::array();
  std::size_t manifest_count = 0;
  rootspan_manifest_count(context.get(), &manifest_count);
  for (std::size_t i = 0; i < manifest_count; ++i) manifests.push_back(rootspan_manifest_path(context.get(), i));

  nlohmann::json providers = nlohmann::json::array();
  std::size_t count = 0;
  rootspan_provider_report_count(context.get(), &count);
  for (std::size_t i = 0; i < count; ++i) {
    rootspan_provider_report report{};
    report.struct_size = sizeof report;
    rootspan_provider_report_get(context.get(), i, &report);
    providers.push_back({{"name", report.name},
                         {"kind", report.kind},
                         {"origin", origin_name(report.origin)},
                         {"library", string_or_null(report.library)},
                         {"manifest", string_or_null(report.manifest)},
                         {"status", state_name(report.state)},
                         {"abi", {{"major", report.abi_major}, {"minor", report.abi_minor}}},
                         {"priority", report.priority},
                         {"devices", devices_of(context.get(), report)},
                         {"policy", string_or_null(report.policy)},
                         {"code", report.code == ROOTSPAN_OK ? nlohmann::json(nullptr)
                                                             : nlohmann::json(rootspan_status_name(report.code))},
                         {"reason", string_or_null(report.reason)}});
  }
  if (options.json) {
    print_json({{"manifests", manifests}, {"providers", providers}});
    return kDone;
  }
  // Paths, names and reasons come from manifests and plugins: escaped for the terminal.
  const auto shown = [](const nlohmann::json &value) { return terminal_safe(value.get<std::string>()); };
  std::printf("manifests read: %s\n", manifests.empty() ? "none" : "");
  for (const auto &m : manifests) std::printf("  %s\n", shown(m).c_str());
  std::printf("%-12s %-8s %-9s %-9s %-5s %s\n", "PROVIDER", "KIND", "ORIGIN", "STATUS", "ABI", "DEVICES / REASON");
  for (const auto &p : providers) {
    const std::string abi =
        std::to_string(p["abi"]["major"].get<int>()) + "." + std::to_string(p["abi"]["minor"].get<int>());
    std::string detail;
    for (const auto &d : p["devices"]) {
      detail += (detail.empty() ? "" : ", ") + std::to_string(d["ordinal"].get<int>()) + ": " +
                d["name"].get<std::string>() + " (" + std::to_string(d["memory_bytes"].get<std::uint64_t>() >> 20) +
                " MiB)";
    }
    if (!p["reason"].is_null()) {
      // The reason is the whole diagnostic: it names its policy already.
      detail += (detail.empty() ? "" : "; ") + p["reason"].get<std::string>();
    }
    std::printf("%-12s %-8s %-9s %-9s %-5s %s\n", shown(p["name"]).c_str(), shown(p["kind"]).c_str(),
                p["origin"].get<std::string>().c_str(), p["status"].get<std::string>().c_str(), abi.c_str(),
                terminal_safe(detail).c_str());
  }
  return kDone;
}

}  // namespace rootspan::cli
