/* Breaks L6: a required entry (release) is NULL. */
#include "test_provider.h"

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("null-required"), .release = NULL};

TEST_PROVIDER_ENTRY(table)
