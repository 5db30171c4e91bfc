/* Breaks docs/concepts.md (L9): a mapping longer than the span asked for. */
#include "test_provider.h"

static rootspan_status map_too_long(rootspan_provider_instance *instance,
                                    const rootspan_provider_allocation *allocation, uint64_t offset, uint64_t length,
                                    rootspan_provider_mapping *mapping, rootspan_provider_message *message) {
  rootspan_status status = test_map(instance, allocation, offset, length, mapping, message);
  if (status == ROOTSPAN_OK) mapping->byte_length = length + 8;
  return status;
}

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("map-length"), .map_read = map_too_long,
                                              .map_write = map_too_long};

TEST_PROVIDER_ENTRY(table)
