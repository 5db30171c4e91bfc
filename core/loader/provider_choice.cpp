#include "core/loader/provider_choice.hpp"

namespace rootspan {

namespace {

bool started(const ProviderReport &r) {
  return r.state == ROOTSPAN_PROVIDER_LOADED || r.state == ROOTSPAN_PROVIDER_NO_DEVICE;
}

std::string quoted(const std::string &name) { return "\"" + name + "\""; }

std::string devices(std::uint32_t count) { return std::to_string(count) + (count == 1 ? " device" : " devices"); }

std::string with_reason(const char *state, const ProviderReport &r) {
  if (r.reason.empty()) return state;
  // A skip's reason usually cites its policy already ("load_plugin: L6: ..."); add it only when missing.
  const bool cites_policy = !r.policy.empty() && r.reason.find(r.policy + ": ") != std::string::npos;
  return std::string(state) + " (" + (r.policy.empty() || cites_policy ? "" : r.policy + ": ") + r.reason + ")";
}

// Every provider the context knows of, with its state: what exists.
std::string list_providers(const std::vector<ProviderReport> &reports) {
  if (reports.empty()) return "no provider at all";
  std::string list;
  for (const ProviderReport &r : reports) {
    list +=
        (list.empty() ? "" : "; ") + quoted(r.name.empty() ? "(unnamed)" : r.name) + ": " + describe_provider_state(r);
  }
  return list;
}

std::string ordinals(std::uint32_t count) {
  if (count == 0) return "none";
  if (count == 1) return "0";
  return "0-" + std::to_string(count - 1);
}

const ProviderReport *find(const std::vector<ProviderReport> &reports, std::string_view name) {
  // The started provider of a name wins over entries of that name that were
  // skipped (a manifest's host beside the static one, L6).
  const ProviderReport *any = nullptr;
  for (const ProviderReport &r : reports) {
    if (r.name != name) continue;
    if (started(r)) return &r;
    if (any == nullptr) any = &r;
  }
  return any;
}

Result<ProviderChoice> check_device(const ProviderReport &chosen, std::uint32_t device, std::string explanation) {
  if (device < chosen.device_count) return ProviderChoice{chosen.name, std::move(explanation)};
  std::string has = chosen.device_count == 0
                        ? "has no device" + (chosen.reason.empty() ? std::string() : " (" + chosen.reason + ")")
                        : "has " + devices(chosen.device_count) + ", ordinals " + ordinals(chosen.device_count);
  return make_error(ROOTSPAN_ERR_NOT_FOUND, "provider_choose",
                    "device " + std::to_string(device) + " does not exist: provider " + quoted(chosen.name) + " " + has,
                    chosen.device_count, device);
}

// Why "auto" passed over `other` in favour of `chosen` (nullptr: none chosen).
std::string passed_over(const ProviderReport &other, const ProviderReport *chosen) {
  if (!started(other)) return describe_provider_state(other);
  if (other.device_count == 0) return describe_provider_state(other);
  if (chosen == nullptr) return "";  // not reached: a provider with a device is chosen
  if (other.priority < chosen->priority) return "lower priority " + std::to_string(other.priority);
  return "same priority " + std::to_string(other.priority) + ", listed after " + quoted(chosen->name);
}

}  // namespace

std::string describe_provider_state(const ProviderReport &r) {
  switch (r.state) {
    case ROOTSPAN_PROVIDER_LOADED:
      return "loaded, priority " + std::to_string(r.priority) + ", " + devices(r.device_count);
    case ROOTSPAN_PROVIDER_NO_DEVICE:
      return with_reason("no device", r);
    case ROOTSPAN_PROVIDER_SKIPPED:
      return with_reason("skipped", r);
    default:
      return with_reason("failed", r);
  }
}

Result<ProviderChoice> choose_provider(const std::vector<ProviderReport> &reports, std::string_view requested,
                                       std::uint32_t device) {
  if (!requested.empty() && requested != "auto") {
    const ProviderReport *named = find(reports, requested);
    if (named == nullptr) {
      return make_error(
          ROOTSPAN_ERR_NOT_FOUND, "provider_choose",
          "no provider is named " + quoted(std::string(requested)) + "; the providers are: " + list_providers(reports));
    }
    if (!started(*named)) {
      // The provider exists but could not be started: its own error, so a
      // failed provider stays a failure and a broken manifest stays bad input.
      Diagnostic d =
          make_error(named->code == ROOTSPAN_OK ? ROOTSPAN_ERR_NO_PROVIDER : named->code, "provider_choose",
                     "provider " + quoted(named->name) + " was not started: " + describe_provider_state(*named));
      d.policy = named->policy;
      return d;
    }
    return check_device(*named, device, "provider " + quoted(named->name) + " was named");
  }

  // "auto": the highest priority among started providers with a device; the
  // strict comparison keeps the first listed on a tie.
  const ProviderReport *best = nullptr;
  for (const ProviderReport &r : reports) {
    if (!started(r) || r.device_count == 0) continue;
    if (best == nullptr || r.priority > best->priority) best = &r;
  }
  if (best == nullptr) {
    return make_error(ROOTSPAN_ERR_NO_PROVIDER, "provider_choose",
                      "auto: no provider has a device; the providers are: " + list_providers(reports));
  }
  std::string explanation = "chose " + quoted(best->name) + " (priority " + std::to_string(best->priority) + ", " +
                            devices(best->device_count) + ")";
  std::string others;
  for (const ProviderReport &r : reports) {
    if (&r == best) continue;
    others += (others.empty() ? "; passed over " : "; ") + quoted(r.name.empty() ? "(unnamed)" : r.name) + ": " +
              passed_over(r, best);
  }
  return check_device(*best, device, explanation + others);
}

}  // namespace rootspan
