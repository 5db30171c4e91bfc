/* Breaks L6: minor 0, older than ROOTSPAN_PROVIDER_ABI_MINOR_MIN (1). */
#include "test_provider.h"

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("abi-minor"), .abi_minor = 0};

TEST_PROVIDER_ENTRY(table)
