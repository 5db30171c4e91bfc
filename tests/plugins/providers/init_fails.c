/* Fails init: the provider's own failure (L7: the others load). */
#include "test_provider.h"

static rootspan_status failing_init(const rootspan_core_services *services, const char *options_json,
                                    rootspan_provider_instance **instance, rootspan_provider_message *message) {
  (void)services;
  (void)options_json;
  (void)instance;
  return test_fail(message, ROOTSPAN_ERR_PROVIDER_FAILURE, "simulated init failure: the device is gone");
}

static const rootspan_provider_table table = {TEST_HOST_TABLE_FIELDS("init-fails"), .init = failing_init};

TEST_PROVIDER_ENTRY(table)
