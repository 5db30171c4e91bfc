/* Breaks docs/concepts.md (L9): byte_offset is not a multiple of the alignment. */
#include "test_provider.h"

static rootspan_status allocate_off_by_8(rootspan_provider_instance *instance,
                                         const rootspan_allocation_request *request,
                                         rootspan_provider_allocation *allocation, rootspan_provider_message *message) {
  rootspan_status status = test_allocate(instance, request, allocation, message);
  if (status == ROOTSPAN_OK) allocation->byte_offset = 8;
  return status;
}

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("misaligned-offset"),
                                              .allocate = allocate_off_by_8};

TEST_PROVIDER_ENTRY(table)
