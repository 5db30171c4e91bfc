// An exception thrown inside the provider before it has a table: the entry
// function throws. The core catches it during negotiation (L6).
#include <stdexcept>

#include "test_provider.h"

extern "C" TEST_PROVIDER_EXPORT const rootspan_provider_table *rootspan_provider_entry(uint32_t, uint32_t) {
  throw std::runtime_error("entry threw on purpose");
}
