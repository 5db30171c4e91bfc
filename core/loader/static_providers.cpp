#include "core/loader/static_providers.hpp"

#include <cstdint>

// Each compiled-in provider's entry, defined in its own plugin folder.
namespace rootspan::plugins {
const rootspan_provider_table *host_provider_entry(std::uint32_t core_abi_major, std::uint32_t core_abi_minor);
}  // namespace rootspan::plugins

namespace rootspan {

std::span<const rootspan_provider_entry_fn> static_provider_entries() {
  static constexpr rootspan_provider_entry_fn kEntries[] = {&plugins::host_provider_entry};
  return kEntries;
}

}  // namespace rootspan
