/* A plugin that needs a library found through its RUNPATH: "$ORIGIN/" (the
 * folder it lies in) and "$ORIGIN/writable-deps". Its provider name comes
 * from that library, so the name shows which copy was loaded. Only the
 * dependency tests call its entry; the table is not meant to be negotiated. */
#include <string.h>

#include "rootspan/provider.h"

#if defined(__GNUC__)
#define EXPORT __attribute__((visibility("default")))
#else
#define EXPORT
#endif

const char *rootspan_test_origin_dep_name(void);

static rootspan_provider_table table;

EXPORT const rootspan_provider_table *rootspan_provider_entry(uint32_t core_abi_major, uint32_t core_abi_minor) {
  (void)core_abi_minor;
  if (core_abi_major != ROOTSPAN_PROVIDER_ABI_MAJOR) return NULL;
  memset(&table, 0, sizeof table);
  table.struct_size = sizeof table;
  table.abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR;
  table.abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR;
  table.name = rootspan_test_origin_dep_name();
  table.kind = "test";
  return &table;
}
