/* The well-behaved hooks of the test providers (see test_provider.h). */
#define _POSIX_C_SOURCE 200112L /* posix_memalign in C99 */

#include "test_provider.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct test_instance {
  uint64_t domain;
  uint64_t next_local; /* atomic */
} test_instance;

/* What release needs: the real buffer, whatever a misbehaving hook reported. */
typedef struct test_block {
  unsigned char *buffer;
  uint64_t length;
  int imported;
  void (*deleter)(void *deleter_context, void *data);
  void *deleter_context;
} test_block;

static int64_t live_allocations; /* atomic */

int64_t rootspan_test_live_allocations(void) { return __atomic_load_n(&live_allocations, __ATOMIC_SEQ_CST); }

rootspan_status test_fail(rootspan_provider_message *message, rootspan_status status, const char *text) {
  snprintf(message->data, message->capacity, "%s", text);
  return status;
}

rootspan_status test_init(const rootspan_core_services *services, const char *options_json,
                          rootspan_provider_instance **instance, rootspan_provider_message *message) {
  test_instance *self;
  (void)options_json;
  if (services->granted_domain_count == 0) return test_fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "no domain");
  self = (test_instance *)calloc(1, sizeof *self);
  if (self == NULL) return test_fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "out of memory");
  self->domain = services->granted_domains[0];
  self->next_local = 1;
  *instance = (rootspan_provider_instance *)self;
  return ROOTSPAN_OK;
}

void test_shutdown(rootspan_provider_instance *instance) { free(instance); }

rootspan_status test_device_count(rootspan_provider_instance *instance, uint32_t *count,
                                  rootspan_provider_message *message) {
  (void)instance;
  (void)message;
  *count = 1;
  return ROOTSPAN_OK;
}

rootspan_status test_device_info(rootspan_provider_instance *instance, uint32_t ordinal, rootspan_device_info *info,
                                 rootspan_provider_message *message) {
  (void)instance;
  if (ordinal != 0) return test_fail(message, ROOTSPAN_ERR_NOT_FOUND, "one device, ordinal 0");
  info->ordinal = 0;
  snprintf(info->name, sizeof info->name, "test device 0");
  info->pci_bus_id[0] = '\0';
  info->total_memory_bytes = (uint64_t)1 << 30;
  info->free_memory_bytes = (uint64_t)1 << 30;
  return ROOTSPAN_OK;
}

/* One block of length bytes at the requested alignment, described honestly. */
static rootspan_status allocate_block(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                                      rootspan_memory_kind kind, int host_visible,
                                      rootspan_provider_allocation *allocation, rootspan_provider_message *message) {
  test_instance *self = (test_instance *)instance;
  test_block *block;
  size_t alignment = request->alignment < sizeof(void *) ? sizeof(void *) : (size_t)request->alignment;
  void *buffer = NULL;
  if (request->memory_kind != kind) return test_fail(message, ROOTSPAN_ERR_UNSUPPORTED, "unsupported memory kind");
  if (request->device != 0) return test_fail(message, ROOTSPAN_ERR_NOT_FOUND, "one device, ordinal 0");
  if (posix_memalign(&buffer, alignment, request->byte_length == 0 ? 1 : (size_t)request->byte_length) != 0) {
    return test_fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "posix_memalign failed");
  }
  block = (test_block *)calloc(1, sizeof *block);
  if (block == NULL) {
    free(buffer);
    return test_fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "out of memory");
  }
  block->buffer = (unsigned char *)buffer;
  block->length = request->byte_length;
  allocation->key.domain = self->domain;
  allocation->key.local = __atomic_fetch_add(&self->next_local, 1, __ATOMIC_RELAXED);
  allocation->byte_offset = 0;
  allocation->byte_length = request->byte_length;
  allocation->alignment = alignment;
  allocation->host_base = host_visible ? buffer : NULL;
  allocation->device = 0;
  allocation->provider_handle = block;
  __atomic_fetch_add(&live_allocations, 1, __ATOMIC_SEQ_CST);
  return ROOTSPAN_OK;
}

rootspan_status test_allocate(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                              rootspan_provider_allocation *allocation, rootspan_provider_message *message) {
  return allocate_block(instance, request, ROOTSPAN_MEMORY_HOST, 1, allocation, message);
}

rootspan_status test_device_allocate(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                                     rootspan_provider_allocation *allocation, rootspan_provider_message *message) {
  return allocate_block(instance, request, ROOTSPAN_MEMORY_DEVICE, 0, allocation, message);
}

rootspan_status test_import_host_memory(rootspan_provider_instance *instance, const rootspan_host_memory *memory,
                                        rootspan_provider_allocation *allocation, rootspan_provider_message *message) {
  test_instance *self = (test_instance *)instance;
  test_block *block = (test_block *)calloc(1, sizeof *block);
  if (block == NULL) return test_fail(message, ROOTSPAN_ERR_OUT_OF_MEMORY, "out of memory");
  block->buffer = (unsigned char *)memory->data;
  block->length = memory->byte_length;
  block->imported = 1;
  block->deleter = memory->deleter;
  block->deleter_context = memory->deleter_context;
  allocation->key.domain = self->domain;
  allocation->key.local = __atomic_fetch_add(&self->next_local, 1, __ATOMIC_RELAXED);
  allocation->byte_offset = 0;
  allocation->byte_length = memory->byte_length;
  allocation->alignment = memory->alignment;
  allocation->host_base = memory->data;
  allocation->device = 0;
  allocation->provider_handle = block;
  __atomic_fetch_add(&live_allocations, 1, __ATOMIC_SEQ_CST);
  return ROOTSPAN_OK;
}

void test_release(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation) {
  test_block *block = (test_block *)allocation->provider_handle;
  (void)instance;
  if (block->imported) {
    if (block->deleter != NULL) block->deleter(block->deleter_context, block->buffer);
  } else {
    free(block->buffer);
  }
  free(block);
  __atomic_fetch_sub(&live_allocations, 1, __ATOMIC_SEQ_CST);
}

/* The block's bytes [offset, offset + length), or NULL when they leave it. */
static unsigned char *block_range(const rootspan_provider_allocation *allocation, uint64_t offset, uint64_t length) {
  const test_block *block = (const test_block *)allocation->provider_handle;
  if (offset > block->length || length > block->length - offset) return NULL;
  return block->buffer + offset;
}

rootspan_status test_map(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                         uint64_t offset, uint64_t length, rootspan_provider_mapping *mapping,
                         rootspan_provider_message *message) {
  unsigned char *data = block_range(allocation, offset, length);
  (void)instance;
  if (data == NULL) return test_fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "range outside the block");
  mapping->data = data;
  mapping->byte_length = length;
  mapping->provider_token = NULL;
  return ROOTSPAN_OK;
}

void test_unmap(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                const rootspan_provider_mapping *mapping) {
  (void)instance;
  (void)allocation;
  (void)mapping;
}

rootspan_status test_prepare_device_access(rootspan_provider_instance *instance,
                                           const rootspan_provider_allocation *allocation, uint64_t byte_offset,
                                           const rootspan_device_access_request *request,
                                           rootspan_device_access *access, rootspan_provider_message *message) {
  unsigned char *data = block_range(allocation, byte_offset, request->byte_length);
  (void)instance;
  if (data == NULL) return test_fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "range outside the block");
  access->device_ptr = data + request->element_offset * request->element_size;
  access->device_ordinal = allocation->device;
  access->stream = TEST_DEVICE_STREAM;
  access->provider_token = NULL;
  return ROOTSPAN_OK;
}

void test_release_device_access(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                                const rootspan_device_access *access) {
  (void)instance;
  (void)allocation;
  (void)access;
}

rootspan_status test_copy_from_host(rootspan_provider_instance *instance,
                                    const rootspan_provider_allocation *allocation, uint64_t offset, const void *source,
                                    uint64_t length, rootspan_provider_event **event,
                                    rootspan_provider_message *message) {
  unsigned char *data = block_range(allocation, offset, length);
  (void)instance;
  if (event != NULL) *event = NULL; /* synchronous: complete on return */
  if (data == NULL) return test_fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "range outside the block");
  if (length != 0) memcpy(data, source, (size_t)length);
  return ROOTSPAN_OK;
}

rootspan_status test_copy_to_host(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                                  uint64_t offset, void *destination, uint64_t length, rootspan_provider_event **event,
                                  rootspan_provider_message *message) {
  unsigned char *data = block_range(allocation, offset, length);
  (void)instance;
  if (event != NULL) *event = NULL;
  if (data == NULL) return test_fail(message, ROOTSPAN_ERR_INVALID_ARGUMENT, "range outside the block");
  if (length != 0) memcpy(destination, data, (size_t)length);
  return ROOTSPAN_OK;
}
