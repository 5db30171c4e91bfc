/* The well-behaved neighbour: device memory simulated on a hidden host buffer.
 * No map hooks and no host_base, so mappings answer Unsupported; device access
 * and copies work, so the device paths are tested without a GPU. */
#include "test_provider.h"

static const rootspan_provider_table table = {TEST_DEVICE_TABLE_FIELDS("simdev")};

TEST_PROVIDER_ENTRY(table)
