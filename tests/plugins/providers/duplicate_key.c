/* Breaks docs/concepts.md (L9): every allocation has the same key. */
#include "test_provider.h"

static rootspan_status allocate_with_one_key(rootspan_provider_instance *instance,
                                             const rootspan_allocation_request *request,
                                             rootspan_provider_allocation *allocation,
                                             rootspan_provider_message *message) {
  rootspan_status status = test_allocate(instance, request, allocation, message);
  if (status == ROOTSPAN_OK) allocation->key.local = 1;
  return status;
}

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("duplicate-key"),
                                              .allocate = allocate_with_one_key};

TEST_PROVIDER_ENTRY(table)
