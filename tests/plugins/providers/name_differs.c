/* Breaks L6: the table's name is not the one its manifest entry gives. */
#include "test_provider.h"

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("renamed-provider")};

TEST_PROVIDER_ENTRY(table)
