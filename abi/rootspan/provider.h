/* rootspan/provider.h — the plugin ABI: what a memory provider implements.
 *
 * A provider is one table of function pointers (rootspan_provider_table),
 * returned by one exported entry symbol. The core validates everything a
 * provider returns (loader policy L9): a provider is trusted to be code, never
 * to be right.
 *
 * Versioning: every struct but rootspan_provider_message starts with
 * struct_size, which whoever fills it sets to sizeof(struct) as its header
 * defines it (the core for the structs it hands a hook, the provider for its
 * table). The other side uses only the fields that lie inside that size; new
 * fields go at the end. A function pointer past the table's struct_size is
 * treated as NULL. rootspan_struct_read and rootspan_struct_write below do
 * this for a provider (docs/c-api.md).
 *
 * Errors: a hook returns a rootspan_status and may write a NUL-terminated
 * message into the core-owned rootspan_provider_message buffer it is given.
 * Hooks must not throw; the core catches what a C++ provider throws anyway and
 * reports it as ROOTSPAN_ERR_PROVIDER_FAILURE.
 *
 * Threads: the core calls hooks of one instance from any thread, concurrently
 * for different allocations; a provider protects its own shared state.
 */
#ifndef ROOTSPAN_PROVIDER_H
#define ROOTSPAN_PROVIDER_H

#include <string.h>

#include "rootspan/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The provider ABI this core speaks. A provider's major must equal
 * ROOTSPAN_PROVIDER_ABI_MAJOR and its minor be at least
 * ROOTSPAN_PROVIDER_ABI_MINOR_MIN (policy L6). Minor 0 was the draft table
 * without struct_size checks and is refused. */
#define ROOTSPAN_PROVIDER_ABI_MAJOR 1
#define ROOTSPAN_PROVIDER_ABI_MINOR 1
#define ROOTSPAN_PROVIDER_ABI_MINOR_MIN 1

/* The name of the one symbol a plugin library exports. */
#define ROOTSPAN_PROVIDER_ENTRY_SYMBOL "rootspan_provider_entry"

/* How many allocation domains the core grants each provider instance. A
 * device provider uses granted_domains[ordinal] for device ordinal's memory. */
#define ROOTSPAN_DOMAINS_PER_PROVIDER 16

/* Opaque per-instance state, owned by the provider from init to shutdown. */
typedef struct rootspan_provider_instance rootspan_provider_instance;

/* A core-owned buffer for a provider's error message. The provider writes at
 * most capacity bytes, NUL included (snprintf(data, capacity, ...)). */
typedef struct rootspan_provider_message {
  char *data;
  size_t capacity;
} rootspan_provider_message;

/* Log levels for rootspan_core_services.log. */
typedef int32_t rootspan_log_level;
enum { ROOTSPAN_LOG_DEBUG = 0, ROOTSPAN_LOG_INFO = 1, ROOTSPAN_LOG_WARN = 2, ROOTSPAN_LOG_ERROR = 3 };

/* What the core gives a provider at init. Valid until shutdown returns. */
typedef struct rootspan_core_services {
  size_t struct_size;
  uint32_t core_abi_major;
  uint32_t core_abi_minor;
  const uint64_t *granted_domains; /* granted_domain_count non-zero domains */
  size_t granted_domain_count;
  /* Logs one line; message is borrowed for the call. Safe from any thread. */
  void (*log)(void *log_context, rootspan_log_level level, const char *message);
  void *log_context;
} rootspan_core_services;
#define ROOTSPAN_CORE_SERVICES_LAST_FIELD log_context
#define ROOTSPAN_CORE_SERVICES_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_core_services, ROOTSPAN_CORE_SERVICES_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_core_services, ROOTSPAN_CORE_SERVICES_STRUCT_SIZE);

typedef struct rootspan_allocation_request {
  size_t struct_size;
  uint32_t device; /* device ordinal */
  rootspan_memory_kind memory_kind;
  uint64_t byte_length; /* may be 0 */
  uint64_t alignment;   /* a power of two */
} rootspan_allocation_request;
#define ROOTSPAN_ALLOCATION_REQUEST_LAST_FIELD alignment
#define ROOTSPAN_ALLOCATION_REQUEST_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_allocation_request, ROOTSPAN_ALLOCATION_REQUEST_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_allocation_request, ROOTSPAN_ALLOCATION_REQUEST_STRUCT_SIZE);

/* One allocation, as a provider reports it. The core validates the extent
 * (key, byte_offset, byte_length, alignment) and, when host_base is set, that
 * host_base + byte_offset meets alignment. The struct is stored by the core and
 * handed back, unchanged, to every later hook for this allocation. */
typedef struct rootspan_provider_allocation {
  size_t struct_size;
  rootspan_key key;      /* out: domain must be one the core granted */
  uint64_t byte_offset;  /* out: where the root's bytes start inside the allocation */
  uint64_t byte_length;  /* out */
  uint64_t alignment;    /* out: alignment guaranteed at byte_offset */
  void *host_base;       /* out: host address of byte 0, or NULL: no host access */
  uint32_t device;       /* out: device ordinal */
  void *provider_handle; /* out: opaque to the core */
} rootspan_provider_allocation;
#define ROOTSPAN_PROVIDER_ALLOCATION_LAST_FIELD provider_handle
#define ROOTSPAN_PROVIDER_ALLOCATION_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_provider_allocation, ROOTSPAN_PROVIDER_ALLOCATION_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_provider_allocation, ROOTSPAN_PROVIDER_ALLOCATION_STRUCT_SIZE);

/* Caller memory handed to a provider (host import, or registration of host
 * memory with a device runtime). If the hook fails, the provider has taken
 * nothing and the core calls the deleter; if it succeeds, the provider calls
 * the deleter exactly once, from its release hook. */
typedef struct rootspan_host_memory {
  size_t struct_size;
  void *data; /* first byte */
  uint64_t byte_length;
  uint64_t alignment;                                 /* alignment the caller guarantees for data */
  void (*deleter)(void *deleter_context, void *data); /* may be NULL: borrowed memory */
  void *deleter_context;
} rootspan_host_memory;
#define ROOTSPAN_HOST_MEMORY_LAST_FIELD deleter_context
#define ROOTSPAN_HOST_MEMORY_STRUCT_SIZE ROOTSPAN_STRUCT_END(rootspan_host_memory, ROOTSPAN_HOST_MEMORY_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_host_memory, ROOTSPAN_HOST_MEMORY_STRUCT_SIZE);

/* A host view of part of an allocation, returned by map_read / map_write. */
typedef struct rootspan_provider_mapping {
  size_t struct_size;
  void *data;           /* out: host address of the mapped range */
  uint64_t byte_length; /* out: must equal the requested length */
  void *provider_token; /* out: opaque, handed back to unmap */
} rootspan_provider_mapping;
#define ROOTSPAN_PROVIDER_MAPPING_LAST_FIELD provider_token
#define ROOTSPAN_PROVIDER_MAPPING_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_provider_mapping, ROOTSPAN_PROVIDER_MAPPING_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_provider_mapping, ROOTSPAN_PROVIDER_MAPPING_STRUCT_SIZE);

/* A provider's completion event for an asynchronous copy. */
typedef struct rootspan_provider_event rootspan_provider_event;

/* The provider table. Required entries are never NULL; optional ones may be
 * NULL, meaning "not supported", and the core checks before every call. */
typedef struct rootspan_provider_table {
  size_t struct_size; /* sizeof(rootspan_provider_table) of the provider */
  uint32_t abi_major; /* the provider's ABI major */
  uint32_t abi_minor; /* the provider's ABI minor */
  const char *name;   /* instance name, e.g. "host"; static storage; a name token (1-64 of [A-Za-z0-9_.-], a letter
                         or digit first, not "auto"), or the provider is refused */
  const char *kind;   /* "host", "cuda", "rocm", ...; static storage; a name token too */

  /* Required. options_json is the manifest entry's "options" (or "{}"),
   * borrowed for the call. *instance may stay NULL for a stateless provider. */
  rootspan_status (*init)(const rootspan_core_services *services, const char *options_json,
                          rootspan_provider_instance **instance, rootspan_provider_message *message);
  /* Required. Called once, after every allocation has been released. */
  void (*shutdown)(rootspan_provider_instance *instance);
  /* Required. Zero devices is a valid answer; message then says why. With
   * devices, anything written to message is kept as the provider's note
   * (rootspan_provider_report.note), e.g. a mode it runs in. */
  rootspan_status (*device_count)(rootspan_provider_instance *instance, uint32_t *count,
                                  rootspan_provider_message *message);
  /* Required. */
  rootspan_status (*device_info)(rootspan_provider_instance *instance, uint32_t ordinal, rootspan_device_info *info,
                                 rootspan_provider_message *message);
  /* Required. Fills *allocation (its struct_size is set by the core). */
  rootspan_status (*allocate)(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                              rootspan_provider_allocation *allocation, rootspan_provider_message *message);
  /* Required. Called exactly once per successful allocate or import_host_memory;
   * waits for outstanding work on the allocation. */
  void (*release)(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation);

  /* Optional. Host views of [offset, offset + length) of an allocation. */
  rootspan_status (*map_read)(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                              uint64_t offset, uint64_t length, rootspan_provider_mapping *mapping,
                              rootspan_provider_message *message);
  rootspan_status (*map_write)(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                               uint64_t offset, uint64_t length, rootspan_provider_mapping *mapping,
                               rootspan_provider_message *message);
  /* Optional; required when map_read or map_write is present. */
  void (*unmap)(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                const rootspan_provider_mapping *mapping);

  /* Optional. The request was validated by the core. byte_offset is where the
   * claim starts in the allocation; the request's element_offset counts from
   * there. device_ptr must point at that element. */
  rootspan_status (*prepare_device_access)(rootspan_provider_instance *instance,
                                           const rootspan_provider_allocation *allocation, uint64_t byte_offset,
                                           const rootspan_device_access_request *request,
                                           rootspan_device_access *access, rootspan_provider_message *message);
  void (*release_device_access)(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                                const rootspan_device_access *access);

  /* Optional. Copies between host memory and [offset, offset + length) of an
   * allocation. With event == NULL the copy is complete on return; otherwise
   * *event receives a completion event to wait on and destroy, or NULL when
   * the copy is already complete. The core asks for an event only when
   * event_wait is present; it then keeps `source` unchanged (and
   * `destination` allocated) and the allocation alive until event_wait has
   * returned for that event. A copy that fails hands back no event. */
  rootspan_status (*copy_from_host)(rootspan_provider_instance *instance,
                                    const rootspan_provider_allocation *allocation, uint64_t offset, const void *source,
                                    uint64_t length, rootspan_provider_event **event,
                                    rootspan_provider_message *message);
  rootspan_status (*copy_to_host)(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                                  uint64_t offset, void *destination, uint64_t length, rootspan_provider_event **event,
                                  rootspan_provider_message *message);
  /* Optional; required when an asynchronous copy can return an event. Waits,
   * then destroys the event, whatever status it returns; called once per
   * event. */
  rootspan_status (*event_wait)(rootspan_provider_instance *instance, rootspan_provider_event *event,
                                rootspan_provider_message *message);

  /* Optional. Makes caller host memory an allocation (see rootspan_host_memory). */
  rootspan_status (*import_host_memory)(rootspan_provider_instance *instance, const rootspan_host_memory *memory,
                                        rootspan_provider_allocation *allocation, rootspan_provider_message *message);
} rootspan_provider_table;
#define ROOTSPAN_PROVIDER_TABLE_LAST_FIELD import_host_memory
#define ROOTSPAN_PROVIDER_TABLE_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_provider_table, ROOTSPAN_PROVIDER_TABLE_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_provider_table, ROOTSPAN_PROVIDER_TABLE_STRUCT_SIZE);

/* ---- reading and writing versioned structs ------------------------------
 *
 * What a provider needs to honour struct_size without the core's internals.
 * `size` is how much of its own local copy the provider reads or writes:
 * pass ROOTSPAN_<NAME>_STRUCT_SIZE, which ends at the last field, so trailing
 * padding is never read or written. It is not a struct_size the provider
 * sets: write_struct keeps the core's. */

/* The struct_size a writer set; 0 when `in` is NULL. */
static inline size_t rootspan_struct_size_of(const void *in) {
  size_t size = 0;
  if (in != NULL) memcpy(&size, in, sizeof size);
  return size;
}

/* Reads a struct the other side wrote into `out` (a full struct of `size`
 * published bytes): the fields inside the writer's struct_size are copied,
 * the rest read as zero, and out's struct_size becomes `size`. Returns 0 (and
 * leaves `out` zeroed) when `in` is NULL or its struct_size is below
 * `min_size`, the end of the oldest version the reader accepts. */
static inline int rootspan_struct_read(void *out, size_t size, const void *in, size_t min_size) {
  const size_t in_size = rootspan_struct_size_of(in);
  memset(out, 0, size);
  if (in == NULL || in_size < min_size || in_size < sizeof(size_t)) return 0;
  memcpy(out, in, in_size < size ? in_size : size);
  memcpy(out, &size, sizeof size);
  return 1;
}

/* Writes `value` (a full struct of `size` published bytes) into a struct
 * whose struct_size the other side set: only the fields inside that size are
 * written and out's struct_size is kept. */
static inline void rootspan_struct_write(void *out, const void *value, size_t size) {
  const size_t out_size = rootspan_struct_size_of(out);
  const size_t n = out_size < size ? out_size : size;
  if (n > sizeof(size_t)) {
    memcpy((char *)out + sizeof(size_t), (const char *)value + sizeof(size_t), n - sizeof(size_t));
  }
}

/* The entry symbol's type. The core offers its ABI version; the provider
 * returns its table (static storage, valid while the library is loaded), or
 * NULL if it cannot serve that core. */
typedef const rootspan_provider_table *(*rootspan_provider_entry_fn)(uint32_t core_abi_major, uint32_t core_abi_minor);

#ifdef __cplusplus
}
#endif

#endif /* ROOTSPAN_PROVIDER_H */
