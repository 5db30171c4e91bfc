/* A provider whose DT_NEEDED librootspan-test-missing-dep.so does not exist at
 * run time (see missing_dep_stub.c): L5 must report the loader's own text,
 * naming that library. */
#include <stddef.h>

#include "rootspan/provider.h"

#if defined(__GNUC__)
#define EXPORT __attribute__((visibility("default")))
#else
#define EXPORT
#endif

int rootspan_test_missing_dep_function(void);

EXPORT const rootspan_provider_table *rootspan_provider_entry(uint32_t core_abi_major, uint32_t core_abi_minor) {
  (void)core_abi_major;
  (void)core_abi_minor;
  /* Never reached: the library does not load. The call keeps the dependency. */
  return rootspan_test_missing_dep_function() == 7 ? NULL : NULL;
}
