/* Starts, but reports zero devices with a reason, as a GPU plugin on a machine
 * without a GPU does: reported as "no device", never chosen by "auto". */
#include <stdio.h>

#include "test_provider.h"

static rootspan_status no_device_count(rootspan_provider_instance *instance, uint32_t *count,
                                       rootspan_provider_message *message) {
  (void)instance;
  *count = 0;
  snprintf(message->data, message->capacity, "simulated: no device is attached");
  return ROOTSPAN_OK;
}

static const rootspan_provider_table table = {TEST_DEVICE_TABLE_FIELDS("no-device"), .device_count = no_device_count};

TEST_PROVIDER_ENTRY(table)
