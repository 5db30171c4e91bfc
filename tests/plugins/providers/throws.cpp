// An exception thrown inside the provider: allocate throws. Hooks must not
// throw (provider.h); the core catches it and reports ProviderFailure.
#include <stdexcept>

#include "test_provider.h"

namespace {

rootspan_status throwing_allocate(rootspan_provider_instance *, const rootspan_allocation_request *,
                                  rootspan_provider_allocation *, rootspan_provider_message *) {
  throw std::runtime_error("allocate threw on purpose");
}

const rootspan_provider_table kTable = [] {
  rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("throws")};
  table.allocate = throwing_allocate;
  return table;
}();

}  // namespace

TEST_PROVIDER_ENTRY(kTable)
