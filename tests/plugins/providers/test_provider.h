/* The well-behaved parts shared by the test providers of tests/plugins/
 * (docs/writing-a-provider.md). Each test provider is one small library that takes one of the
 * two tables below and changes one field or wraps one hook, so that it breaks
 * exactly one rule:
 *
 *   TEST_HOST_TABLE_FIELDS    a host-memory provider: aligned malloc'ed
 *                             blocks, map read/write, host imports;
 *   TEST_DEVICE_TABLE_FIELDS  the simulated device provider: the same blocks,
 *                             hidden from the core (host_base is NULL, no map
 *                             hooks), reached through device access and copies.
 *
 * A C provider overrides a field after the macro (designated initializers,
 * built with -Wno-override-init):
 *
 *   static const rootspan_provider_table table = {
 *       TEST_HOST_TABLE_FIELDS("abi-major"), .abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR + 1};
 *   TEST_PROVIDER_ENTRY(table)
 *
 * Every library also exports rootspan_test_live_allocations(), the number of
 * its allocations not yet released, so that a test can see that the core
 * released a rejected allocation exactly once.
 */
#ifndef ROOTSPAN_TEST_PROVIDER_H
#define ROOTSPAN_TEST_PROVIDER_H

#include "rootspan/provider.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TEST_PROVIDER_EXPORT __attribute__((visibility("default")))
#ifdef __cplusplus
#define TEST_PROVIDER_EXTERN_C extern "C"
#else
#define TEST_PROVIDER_EXTERN_C
#endif

/* Host memory (memory kind HOST, device 0). */
rootspan_status test_init(const rootspan_core_services *services, const char *options_json,
                          rootspan_provider_instance **instance, rootspan_provider_message *message);
void test_shutdown(rootspan_provider_instance *instance);
rootspan_status test_device_count(rootspan_provider_instance *instance, uint32_t *count,
                                  rootspan_provider_message *message);
rootspan_status test_device_info(rootspan_provider_instance *instance, uint32_t ordinal, rootspan_device_info *info,
                                 rootspan_provider_message *message);
rootspan_status test_allocate(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                              rootspan_provider_allocation *allocation, rootspan_provider_message *message);
void test_release(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation);
rootspan_status test_map(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                         uint64_t offset, uint64_t length, rootspan_provider_mapping *mapping,
                         rootspan_provider_message *message);
void test_unmap(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                const rootspan_provider_mapping *mapping);
rootspan_status test_import_host_memory(rootspan_provider_instance *instance, const rootspan_host_memory *memory,
                                        rootspan_provider_allocation *allocation, rootspan_provider_message *message);

/* Simulated device memory (memory kind DEVICE, device 0): a hidden host buffer. */
rootspan_status test_device_allocate(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                                     rootspan_provider_allocation *allocation, rootspan_provider_message *message);
rootspan_status test_prepare_device_access(rootspan_provider_instance *instance,
                                           const rootspan_provider_allocation *allocation, uint64_t byte_offset,
                                           const rootspan_device_access_request *request,
                                           rootspan_device_access *access, rootspan_provider_message *message);
void test_release_device_access(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                                const rootspan_device_access *access);
rootspan_status test_copy_from_host(rootspan_provider_instance *instance,
                                    const rootspan_provider_allocation *allocation, uint64_t offset, const void *source,
                                    uint64_t length, rootspan_provider_event **event,
                                    rootspan_provider_message *message);
rootspan_status test_copy_to_host(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                                  uint64_t offset, void *destination, uint64_t length, rootspan_provider_event **event,
                                  rootspan_provider_message *message);

/* The stream handle the simulated device reports with every device access. */
#define TEST_DEVICE_STREAM ((void *)0x5157)

/* Writes a message and returns status (for hooks that fail on purpose). */
rootspan_status test_fail(rootspan_provider_message *message, rootspan_status status, const char *text);

/* Allocations of this library not yet released (exported for the tests). */
TEST_PROVIDER_EXPORT int64_t rootspan_test_live_allocations(void);

/* Field lists, in declaration order (C++20 designated initializers need it). */
#define TEST_TABLE_HEADER(provider_name, provider_kind)                                                          \
  .struct_size = sizeof(rootspan_provider_table), .abi_major = ROOTSPAN_PROVIDER_ABI_MAJOR,                      \
  .abi_minor = ROOTSPAN_PROVIDER_ABI_MINOR, .name = (provider_name), .kind = (provider_kind), .init = test_init, \
  .shutdown = test_shutdown, .device_count = test_device_count, .device_info = test_device_info

#define TEST_HOST_TABLE_FIELDS(provider_name)                                                                    \
  TEST_TABLE_HEADER(provider_name, "test"),                                                                      \
      .allocate = test_allocate, .release = test_release, .map_read = test_map, .map_write = test_map,           \
      .unmap = test_unmap, .prepare_device_access = NULL, .release_device_access = NULL, .copy_from_host = NULL, \
      .copy_to_host = NULL, .event_wait = NULL, .import_host_memory = test_import_host_memory

/* No map hooks: the core must answer Unsupported for host views. */
#define TEST_DEVICE_TABLE_FIELDS(provider_name)                                                                      \
  TEST_TABLE_HEADER(provider_name, "simulated"),                                                                     \
      .allocate = test_device_allocate, .release = test_release, .map_read = NULL, .map_write = NULL, .unmap = NULL, \
      .prepare_device_access = test_prepare_device_access, .release_device_access = test_release_device_access,      \
      .copy_from_host = test_copy_from_host, .copy_to_host = test_copy_to_host, .event_wait = NULL,                  \
      .import_host_memory = NULL

/* Defines the library's entry symbol, returning &table for every core. */
#define TEST_PROVIDER_ENTRY(table)                                                                    \
  TEST_PROVIDER_EXTERN_C TEST_PROVIDER_EXPORT const rootspan_provider_table *rootspan_provider_entry( \
      uint32_t core_abi_major, uint32_t core_abi_minor) {                                             \
    (void)core_abi_major;                                                                             \
    (void)core_abi_minor;                                                                             \
    return &(table);                                                                                  \
  }

#ifdef __cplusplus
}
#endif

#endif /* ROOTSPAN_TEST_PROVIDER_H */
