/* Breaks L5: its DT_NEEDED librootspan-test-absent.so exists nowhere (see
 * absent_stub.c), so the dynamic loader refuses it, naming that library. */
#include "test_provider.h"

int rootspan_test_absent_function(void);

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("needs-absent")};

TEST_PROVIDER_EXPORT const rootspan_provider_table *rootspan_provider_entry(uint32_t core_abi_major,
                                                                            uint32_t core_abi_minor) {
  (void)core_abi_major;
  (void)core_abi_minor;
  return rootspan_test_absent_function() == 1 ? &table : NULL; /* keeps the dependency */
}
