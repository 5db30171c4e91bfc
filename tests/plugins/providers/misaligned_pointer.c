/* Breaks docs/concepts.md (L9): the host pointer does not meet the alignment the
 * allocation claims. */
#include "test_provider.h"

static rootspan_status allocate_unaligned(rootspan_provider_instance *instance,
                                          const rootspan_allocation_request *request,
                                          rootspan_provider_allocation *allocation,
                                          rootspan_provider_message *message) {
  rootspan_status status = test_allocate(instance, request, allocation, message);
  if (status == ROOTSPAN_OK) allocation->host_base = (unsigned char *)allocation->host_base + 16;
  return status;
}

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("misaligned-pointer"),
                                              .allocate = allocate_unaligned};

TEST_PROVIDER_ENTRY(table)
