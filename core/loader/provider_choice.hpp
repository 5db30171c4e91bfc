// Which provider and device a request lands on (docs/writing-a-provider.md): the one home of
// the "auto" rule, and where a named provider and a device ordinal are first
// checked to exist, before any file is opened. The CLI reaches it through
// rootspan_provider_choose, loads through it directly, so both always agree.
// load_components (weights/placement/materialize.cpp) checks both again when
// placement starts, since it is also called on its own (by tests), not only
// through the load pipeline.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/diagnostic.hpp"
#include "core/provider_report.hpp"

namespace rootspan {

struct ProviderChoice {
  std::string provider;  // the chosen provider's name
  // Why: for "auto", which provider was chosen and why each other one was
  // passed over; for a named provider, that it was named.
  std::string explanation;
};

// requested: a provider name, or "auto" (also when empty): the highest
// priority among started providers that have a device, the first listed
// winning a tie. device: the ordinal the caller will use; it must exist.
//
// Errors: a name no provider has, or a device ordinal the provider does not
// have: NOT_FOUND, listing what exists. A named provider that was skipped or
// failed: the error that stopped it. "auto" with no provider that has a
// device: NO_PROVIDER, with every provider's reason.
Result<ProviderChoice> choose_provider(const std::vector<ProviderReport> &reports, std::string_view requested,
                                       std::uint32_t device);

// One provider as the choice sees it: 'loaded, priority 100, 2 devices' or
// 'no device (the runtime's reason)'; for listing what exists.
std::string describe_provider_state(const ProviderReport &report);

}  // namespace rootspan
