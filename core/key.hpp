// An allocation key (docs/concepts.md): the domain a provider was granted and
// the provider's own number within it, the identity of an allocation.
#pragma once

#include <cstdint>

namespace rootspan {

struct Key {
  std::uint64_t domain = 0;
  std::uint64_t local = 0;
  friend bool operator==(const Key &, const Key &) = default;
};

}  // namespace rootspan
