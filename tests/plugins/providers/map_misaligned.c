/* Breaks docs/concepts.md (L9): a mapping pointer one byte past the right one, so
 * it fails the element type's alignment. */
#include "test_provider.h"

static rootspan_status map_one_byte_off(rootspan_provider_instance *instance,
                                        const rootspan_provider_allocation *allocation, uint64_t offset,
                                        uint64_t length, rootspan_provider_mapping *mapping,
                                        rootspan_provider_message *message) {
  rootspan_status status = test_map(instance, allocation, offset, length, mapping, message);
  if (status == ROOTSPAN_OK) mapping->data = (unsigned char *)mapping->data + 1;
  return status;
}

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("map-misaligned"), .map_read = map_one_byte_off,
                                              .map_write = map_one_byte_off};

TEST_PROVIDER_ENTRY(table)
