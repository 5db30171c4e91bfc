// `rootspan providers`: the discovery report (docs/loader-policies.md).
#include <cstdio>

#include <CLI/CLI.hpp>

#include "byte_size.hpp"
#include "command.hpp"
#include "terminal_text.hpp"
#include "text_table.hpp"

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

int run_providers(const CommonOptions &options) {
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
                         {"reason", string_or_null(report.reason)},
                         {"note", string_or_null(report.note)}});
  }
  if (options.json) {
    print_json({{"manifests", manifests}, {"providers", providers}});
    return kDone;
  }
  // Paths, names and reasons come from manifests and plugins: escaped for the terminal.
  const auto shown = [](const nlohmann::json &value) { return terminal_safe(value.get<std::string>()); };
  std::printf("manifests read:%s\n", manifests.empty() ? " none" : "");
  for (const auto &m : manifests) print_wrapped("  " + shown(m), output_width());
  TextTable table({{"PROVIDER"}, {"KIND"}, {"ORIGIN"}, {"STATUS"}, {"ABI"}, {"DEVICES / REASON", false, true}});
  for (const auto &p : providers) {
    const std::string abi =
        std::to_string(p["abi"]["major"].get<int>()) + "." + std::to_string(p["abi"]["minor"].get<int>());
    std::string detail;
    for (const auto &d : p["devices"]) {
      detail += (detail.empty() ? "" : ", ") + std::to_string(d["ordinal"].get<int>()) + ": " +
                d["name"].get<std::string>() + " (" + byte_size(d["memory_bytes"].get<std::uint64_t>()) + ")";
    }
    if (!p["reason"].is_null()) {
      // The reason is the whole diagnostic: it names its policy already.
      detail += (detail.empty() ? "" : "; ") + p["reason"].get<std::string>();
    }
    if (!p["note"].is_null()) detail += (detail.empty() ? "" : "; ") + p["note"].get<std::string>();
    table.add_row({shown(p["name"]), shown(p["kind"]), p["origin"].get<std::string>(), p["status"].get<std::string>(),
                   abi, terminal_safe(detail)});
  }
  table.print(stdout, output_width());
  return kDone;
}

}  // namespace

Runner add_providers_command(CLI::App &rootspan, CommonOptions &common) {
  CLI::App *app = rootspan.add_subcommand("providers", "the providers found, loaded or skipped, and why");
  add_common_options(*app, common);
  return [&common] { return run_providers(common); };
}

}  // namespace rootspan::cli
