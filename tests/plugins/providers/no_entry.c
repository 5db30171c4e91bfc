/* Breaks L6: a complete table, exported under the wrong symbol name. */
#include "test_provider.h"

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("no-entry")};

TEST_PROVIDER_EXPORT const rootspan_provider_table *rootspan_provider_entry_v0(uint32_t core_abi_major,
                                                                               uint32_t core_abi_minor) {
  (void)core_abi_major;
  (void)core_abi_minor;
  return &table;
}
