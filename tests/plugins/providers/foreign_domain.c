/* Breaks docs/concepts.md (L9): reports a domain it was not granted. */
#include "test_provider.h"

static rootspan_status allocate_in_foreign_domain(rootspan_provider_instance *instance,
                                                  const rootspan_allocation_request *request,
                                                  rootspan_provider_allocation *allocation,
                                                  rootspan_provider_message *message) {
  rootspan_status status = test_allocate(instance, request, allocation, message);
  /* The core grants small domains counting up from 1: never this one. */
  if (status == ROOTSPAN_OK) allocation->key.domain = UINT64_MAX;
  return status;
}

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("foreign-domain"),
                                              .allocate = allocate_in_foreign_domain};

TEST_PROVIDER_ENTRY(table)
