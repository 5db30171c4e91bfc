/* Breaks docs/concepts.md (L9): byte_offset + byte_length overflows 64 bits. The
 * offset is also not a multiple of the alignment: overflow is checked first. */
#include "test_provider.h"

static rootspan_status allocate_past_the_end(rootspan_provider_instance *instance,
                                             const rootspan_allocation_request *request,
                                             rootspan_provider_allocation *allocation,
                                             rootspan_provider_message *message) {
  rootspan_status status = test_allocate(instance, request, allocation, message);
  if (status == ROOTSPAN_OK) allocation->byte_offset = UINT64_MAX - 8;
  return status;
}

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("extent-overflow"),
                                              .allocate = allocate_past_the_end};

TEST_PROVIDER_ENTRY(table)
