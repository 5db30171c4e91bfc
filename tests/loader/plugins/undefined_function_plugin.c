/* A provider that calls a function no library defines: it links (a shared
 * module may leave symbols undefined) but must not load, because L5 binds
 * every symbol at dlopen time (RTLD_NOW) instead of at the first call. */
#include <stddef.h>

#include "rootspan/provider.h"

#if defined(__GNUC__)
#define EXPORT __attribute__((visibility("default")))
#else
#define EXPORT
#endif

int rootspan_test_function_nobody_defines(void);

EXPORT const rootspan_provider_table *rootspan_provider_entry(uint32_t core_abi_major, uint32_t core_abi_minor) {
  (void)core_abi_major;
  (void)core_abi_minor;
  /* Never reached: the library does not load. */
  return rootspan_test_function_nobody_defines() == 7 ? NULL : NULL;
}
