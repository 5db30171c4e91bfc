/* A well-behaved test provider: a valid table with stub functions, enough for
 * the loader tests (L4-L6). It never allocates; the core model's own tests
 * exercise real providers. */
#include <stdio.h>
#include <string.h>

#include "rootspan/provider.h"

#if defined(__GNUC__)
#define EXPORT __attribute__((visibility("default")))
#else
#define EXPORT
#endif

static rootspan_status good_init(const rootspan_core_services *services, const char *options_json,
                                 rootspan_provider_instance **instance, rootspan_provider_message *message) {
  (void)services;
  (void)options_json;
  (void)message;
  *instance = NULL;
  return ROOTSPAN_OK;
}

static void good_shutdown(rootspan_provider_instance *instance) { (void)instance; }

static rootspan_status good_device_count(rootspan_provider_instance *instance, uint32_t *count,
                                         rootspan_provider_message *message) {
  (void)instance;
  (void)message;
  *count = 0;
  return ROOTSPAN_OK;
}

static rootspan_status good_device_info(rootspan_provider_instance *instance, uint32_t ordinal,
                                        rootspan_device_info *info, rootspan_provider_message *message) {
  (void)instance;
  (void)ordinal;
  (void)info;
  snprintf(message->data, message->capacity, "no devices");
  return ROOTSPAN_ERR_NOT_FOUND;
}

static rootspan_status good_allocate(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                                     rootspan_provider_allocation *allocation, rootspan_provider_message *message) {
  (void)instance;
  (void)request;
  (void)allocation;
  snprintf(message->data, message->capacity, "test provider does not allocate");
  return ROOTSPAN_ERR_UNSUPPORTED;
}

static void good_release(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation) {
  (void)instance;
  (void)allocation;
}

static rootspan_provider_table table;

EXPORT const rootspan_provider_table *rootspan_provider_entry(uint32_t core_abi_major, uint32_t core_abi_minor) {
  (void)core_abi_minor;
  if (core_abi_major != ROOTSPAN_PROVIDER_ABI_MAJOR) return NULL;
  memset(&table, 0, sizeof table);
  table.struct_size = sizeof table;
  table.abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR;
  table.abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR;
  table.name = "test-good";
  table.kind = "test";
  table.init = good_init;
  table.shutdown = good_shutdown;
  table.device_count = good_device_count;
  table.device_info = good_device_info;
  table.allocate = good_allocate;
  table.release = good_release;
  return &table;
}

/* Lets the L8 tests see whether this copy of the library is still mapped. */
EXPORT int rootspan_test_good_marker = 42;
