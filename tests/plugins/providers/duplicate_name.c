/* Breaks L6: a second provider named "simdev", the well-behaved neighbour's name. */
#include "test_provider.h"

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("simdev")};

TEST_PROVIDER_ENTRY(table)
