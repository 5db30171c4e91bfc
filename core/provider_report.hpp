// What a context knows of one provider, loaded or not: the C++ side of
// rootspan_provider_report (rootspan.h). The loader makes one for every
// manifest entry it reads; the context records them, in order.
#pragma once

#include <cstdint>
#include <string>

#include "core/diagnostic.hpp"
#include "rootspan/rootspan.h"

namespace rootspan {

struct ProviderReport {
  std::string name;
  std::string kind;
  rootspan_provider_origin origin = ROOTSPAN_ORIGIN_STATIC;
  rootspan_provider_state state = ROOTSPAN_PROVIDER_LOADED;
  std::string library;   // "" for a static provider
  std::string manifest;  // "" for a static provider
  std::uint32_t abi_major = 0;
  std::uint32_t abi_minor = 0;
  std::uint32_t device_count = 0;
  std::int32_t priority = 0;
  std::string policy;                  // the policy that skipped it, or ""
  std::string reason;                  // why it was skipped or failed, or why it has no device
  rootspan_status code = ROOTSPAN_OK;  // the error that skipped or failed it
  std::string note;                    // what a loaded provider said when it counted its devices, or ""
};

// Marks `report` skipped or failed, for the reason `why` gives.
inline void mark_report(ProviderReport &report, rootspan_provider_state state, const Diagnostic &why) {
  report.state = state;
  report.policy = why.policy;
  report.reason = why.message();
  report.code = why.code;
}

}  // namespace rootspan
