// A family of minimal in-process providers, each with its own name
// ("named-0", "named-1", ...), for tests that add many providers to one
// context. Host memory, map hooks, nothing else.
#pragma once

#include <cstddef>

#include "rootspan/provider.h"

namespace rootspan::testing {

inline constexpr std::size_t kNamedProviderCount = 48;

// The entry function of provider "named-<index>", index < kNamedProviderCount.
rootspan_provider_entry_fn named_provider_entry(std::size_t index);

}  // namespace rootspan::testing
