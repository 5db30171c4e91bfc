/* A well-behaved host-memory provider linked with -z nodelete: dlclose never
 * unloads it, so the dynamic loader keeps knowing it by the name it was loaded
 * under after the core has released it (the regression test of
 * core/loader/plugin_library.cpp's descriptor names). */
#include "test_provider.h"

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("nodelete")};

TEST_PROVIDER_ENTRY(table)
