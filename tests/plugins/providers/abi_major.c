/* Breaks L6: an ABI major the core does not speak. */
#include "test_provider.h"

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("abi-major"),
                                              .abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR + 1};

TEST_PROVIDER_ENTRY(table)
