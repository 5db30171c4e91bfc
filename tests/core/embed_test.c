/* embed_test.c - the whole embedding API as a C99 program sees it, linked
 * with the shared librootspan.so: context options, provider reports, device
 * info, allocation, import with a deleter, root info, spans, claims, split,
 * mappings, copies, device access (Unsupported on host; a small simulated
 * device provider written here in C, added with rootspan_context_add_provider),
 * every error accessor, error free, release, and context destroy with the
 * live count. Exits non-zero, after printing each failed expectation. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rootspan/rootspan.h"

static int failures = 0;

#define CHECK(cond, message)                                                           \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "%s:%d: expected %s: %s\n", __FILE__, __LINE__, #cond, message); \
      ++failures;                                                                      \
    }                                                                                  \
  } while (0)

/* Checks a status; on a mismatch prints the error's message. Frees *error. */
static void expect_status(int line, rootspan_status got, rootspan_status want, rootspan_error **error) {
  if (got != want) {
    fprintf(stderr, "%s:%d: status %s (%d), expected %s (%d): %s\n", __FILE__, line, rootspan_status_name(got),
            (int)got, rootspan_status_name(want), (int)want,
            error != NULL && *error != NULL ? rootspan_error_message(*error) : "(no error object)");
    ++failures;
  }
  if (error != NULL) {
    rootspan_error_free(*error);
    *error = NULL;
  }
}
#define EXPECT_STATUS(call, want) expect_status(__LINE__, (call), (want), &error)

static void expect_string(int line, const char *got, const char *want) {
  if (got == NULL || strcmp(got, want) != 0) {
    fprintf(stderr, "%s:%d: got \"%s\", expected \"%s\"\n", __FILE__, line, got == NULL ? "(null)" : got, want);
    ++failures;
  }
}
#define EXPECT_STRING(got, want) expect_string(__LINE__, (got), (want))

/* ---- caller memory with a deleter ------------------------------------- */

static int deleted = 0;
static void free_and_count(void *context, void *data) {
  int *count = (int *)context;
  ++*count;
  free(data);
}

/* ---- a simulated device provider, in C -------------------------------- */

typedef struct sim_instance {
  uint64_t domain;
  uint64_t next_local;
} sim_instance;

static int sim_releases = 0;
static int sim_access_releases = 0;

static rootspan_status sim_init(const rootspan_core_services *services, const char *options_json,
                                rootspan_provider_instance **instance, rootspan_provider_message *message) {
  sim_instance *sim;
  (void)options_json;
  if (services->granted_domain_count == 0) {
    snprintf(message->data, message->capacity, "no domain");
    return ROOTSPAN_ERR_INVALID_ARGUMENT;
  }
  sim = (sim_instance *)malloc(sizeof *sim);
  if (sim == NULL) return ROOTSPAN_ERR_OUT_OF_MEMORY;
  sim->domain = services->granted_domains[0];
  sim->next_local = 1;
  *instance = (rootspan_provider_instance *)sim;
  return ROOTSPAN_OK;
}

static void sim_shutdown(rootspan_provider_instance *instance) { free(instance); }

static rootspan_status sim_device_count(rootspan_provider_instance *instance, uint32_t *count,
                                        rootspan_provider_message *message) {
  (void)instance;
  (void)message;
  *count = 1;
  return ROOTSPAN_OK;
}

static rootspan_status sim_device_info(rootspan_provider_instance *instance, uint32_t ordinal,
                                       rootspan_device_info *info, rootspan_provider_message *message) {
  (void)instance;
  (void)message;
  info->ordinal = ordinal;
  snprintf(info->name, sizeof info->name, "simulated device");
  snprintf(info->pci_bus_id, sizeof info->pci_bus_id, "0000:65:00.0");
  info->total_memory_bytes = 1024u * 1024u;
  info->free_memory_bytes = 512u * 1024u;
  return ROOTSPAN_OK;
}

static rootspan_status sim_allocate(rootspan_provider_instance *instance, const rootspan_allocation_request *request,
                                    rootspan_provider_allocation *allocation, rootspan_provider_message *message) {
  sim_instance *sim = (sim_instance *)instance;
  void *memory = calloc(1, request->byte_length == 0 ? 1 : (size_t)request->byte_length);
  if (memory == NULL) {
    snprintf(message->data, message->capacity, "calloc failed");
    return ROOTSPAN_ERR_OUT_OF_MEMORY;
  }
  allocation->key.domain = sim->domain;
  allocation->key.local = sim->next_local++;
  allocation->byte_offset = 0;
  allocation->byte_length = request->byte_length;
  allocation->alignment = request->alignment;
  allocation->host_base = NULL; /* device memory: no host access */
  allocation->device = request->device;
  allocation->provider_handle = memory;
  return ROOTSPAN_OK;
}

static void sim_release(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation) {
  (void)instance;
  ++sim_releases;
  free(allocation->provider_handle);
}

static rootspan_status sim_prepare(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                                   uint64_t byte_offset, const rootspan_device_access_request *request,
                                   rootspan_device_access *access, rootspan_provider_message *message) {
  (void)instance;
  (void)message;
  access->device_ptr =
      (char *)allocation->provider_handle + byte_offset + request->element_offset * request->element_size;
  access->device_ordinal = allocation->device;
  access->stream = (void *)&sim_releases; /* any recognizable handle */
  access->provider_token = NULL;
  return ROOTSPAN_OK;
}

static void sim_release_access(rootspan_provider_instance *instance, const rootspan_provider_allocation *allocation,
                               const rootspan_device_access *access) {
  (void)instance;
  (void)allocation;
  (void)access;
  ++sim_access_releases;
}

static rootspan_status sim_copy_from_host(rootspan_provider_instance *instance,
                                          const rootspan_provider_allocation *allocation, uint64_t offset,
                                          const void *source, uint64_t length, rootspan_provider_event **event,
                                          rootspan_provider_message *message) {
  (void)instance;
  (void)message;
  if (event != NULL) *event = NULL;
  memcpy((char *)allocation->provider_handle + offset, source, (size_t)length);
  return ROOTSPAN_OK;
}

static rootspan_status sim_copy_to_host(rootspan_provider_instance *instance,
                                        const rootspan_provider_allocation *allocation, uint64_t offset,
                                        void *destination, uint64_t length, rootspan_provider_event **event,
                                        rootspan_provider_message *message) {
  (void)instance;
  (void)message;
  if (event != NULL) *event = NULL;
  memcpy(destination, (const char *)allocation->provider_handle + offset, (size_t)length);
  return ROOTSPAN_OK;
}

static const rootspan_provider_table sim_table = {
    sizeof(rootspan_provider_table),
    ROOTSPAN_PROVIDER_ABI_MAJOR,
    ROOTSPAN_PROVIDER_ABI_MINOR,
    "c-sim",
    "sim",
    sim_init,
    sim_shutdown,
    sim_device_count,
    sim_device_info,
    sim_allocate,
    sim_release,
    NULL, /* map_read: no host access */
    NULL, /* map_write */
    NULL, /* unmap */
    sim_prepare,
    sim_release_access,
    sim_copy_from_host,
    sim_copy_to_host,
    NULL, /* event_wait */
    NULL  /* import_host_memory */
};

static const rootspan_provider_table *sim_entry(uint32_t core_major, uint32_t core_minor) {
  (void)core_minor;
  return core_major == ROOTSPAN_PROVIDER_ABI_MAJOR ? &sim_table : NULL;
}

/* ---- the program ---------------------------------------------------------- */

int main(void) {
  rootspan_error *error = NULL;
  rootspan_context *context = NULL;
  rootspan_context_options options;
  rootspan_provider_report report;
  rootspan_device_info device;
  rootspan_allocate_options allocate;
  rootspan_host_import import;
  rootspan_root *root = NULL, *typed = NULL, *scratch = NULL, *sim_root = NULL;
  rootspan_root_info info, typed_info, sim_info;
  rootspan_span span;
  rootspan_requested requested;
  rootspan_claim *exclusive = NULL, *shared = NULL, *other = NULL;
  rootspan_claim *children[2] = {NULL, NULL};
  rootspan_range ranges[2];
  rootspan_mapping *mapping = NULL;
  rootspan_claim_mode mode;
  rootspan_device_access_request request;
  rootspan_device_access access;
  uint64_t shape[1] = {16};
  int64_t strides[1] = {1};
  uint64_t expected = 0, actual = 0, live = 0;
  size_t count = 0;
  char text[256];
  unsigned char bytes[64];
  float *floats;
  const float *read;
  unsigned i;

  /* versions and names */
  EXPECT_STRING(rootspan_version(), "0.7.0");
  EXPECT_STRING(rootspan_status_name(ROOTSPAN_ERR_CONFLICT), "Conflict");
  EXPECT_STRING(rootspan_dtype_name(ROOTSPAN_DTYPE_BF16), "BF16");
  CHECK(rootspan_dtype_size(ROOTSPAN_DTYPE_C64) == 16, "C64 is two F64");

  /* context with options */
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.no_static_providers = 0;
  options.manifests = NULL;
  options.manifest_count = 0;
  options.discover_manifests = 0;
  EXPECT_STATUS(rootspan_context_create(&options, &context, &error), ROOTSPAN_OK);
  if (context == NULL) {
    fprintf(stderr, "no context, giving up\n");
    return 1;
  }

  /* provider reports, manifests, device info */
  EXPECT_STATUS(rootspan_provider_report_count(context, &count), ROOTSPAN_OK);
  CHECK(count == 1, "the static host provider only");
  memset(&report, 0, sizeof report);
  report.struct_size = sizeof report;
  EXPECT_STATUS(rootspan_provider_report_get(context, 0, &report), ROOTSPAN_OK);
  EXPECT_STRING(report.name, "host");
  EXPECT_STRING(report.kind, "host");
  CHECK(report.origin == ROOTSPAN_ORIGIN_STATIC, "static");
  CHECK(report.state == ROOTSPAN_PROVIDER_LOADED, "loaded");
  CHECK(report.library == NULL, "no library for a static provider");
  CHECK(report.abi_major == ROOTSPAN_PROVIDER_ABI_MAJOR, "ABI major");
  CHECK(report.device_count == 1, "one host device");
  EXPECT_STATUS(rootspan_manifest_count(context, &count), ROOTSPAN_OK);
  CHECK(count == 0, "no manifests read");
  CHECK(rootspan_manifest_path(context, 0) == NULL, "no manifest 0");
  memset(&device, 0, sizeof device);
  device.struct_size = sizeof device;
  EXPECT_STATUS(rootspan_provider_device_info(context, "host", 0, &device, &error), ROOTSPAN_OK);
  EXPECT_STRING(device.name, "host");
  CHECK(device.total_memory_bytes > 0, "host memory size");
  EXPECT_STATUS(rootspan_provider_device_info(context, "host", 3, &device, &error), ROOTSPAN_ERR_NOT_FOUND);

  /* allocate a host root */
  memset(&allocate, 0, sizeof allocate);
  allocate.struct_size = sizeof allocate;
  allocate.provider = "host";
  allocate.device = 0;
  allocate.memory_kind = ROOTSPAN_MEMORY_HOST;
  allocate.byte_length = 256;
  allocate.alignment = 64;
  allocate.dtype = ROOTSPAN_DTYPE_NONE;
  EXPECT_STATUS(rootspan_root_allocate(context, &allocate, &root, &error), ROOTSPAN_OK);
  if (root == NULL) return 1;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  EXPECT_STATUS(rootspan_root_get_info(root, &info), ROOTSPAN_OK);
  CHECK(info.root_id != 0, "non-zero root id");
  CHECK(info.key.domain != 0 && info.key.local != 0, "non-zero key");
  CHECK(info.byte_length == 256 && info.alignment == 64 && info.byte_offset == 0, "extent as asked");
  CHECK(info.dtype == ROOTSPAN_DTYPE_NONE && info.read_only == 0 && info.host_accessible == 1, "untyped host bytes");
  EXPECT_STRING(info.provider, "host");

  /* import caller memory, typed F32, with a deleter */
  floats = (float *)malloc(16 * sizeof(float));
  for (i = 0; i < 16; ++i) floats[i] = (float)i * 0.5f;
  memset(&import, 0, sizeof import);
  import.struct_size = sizeof import;
  import.provider = NULL;
  import.data = floats;
  import.byte_length = 16 * sizeof(float);
  import.alignment = sizeof(float);
  import.dtype = ROOTSPAN_DTYPE_F32;
  import.read_only = 1;
  import.deleter = free_and_count;
  import.deleter_context = &deleted;
  EXPECT_STATUS(rootspan_root_import_host(context, &import, &typed, &error), ROOTSPAN_OK);
  memset(&typed_info, 0, sizeof typed_info);
  typed_info.struct_size = sizeof typed_info;
  EXPECT_STATUS(rootspan_root_get_info(typed, &typed_info), ROOTSPAN_OK);
  CHECK(typed_info.dtype == ROOTSPAN_DTYPE_F32 && typed_info.read_only == 1, "typed, read-only");
  CHECK(typed_info.root_id > info.root_id, "ids increase");
  CHECK(deleted == 0, "deleter not yet called");

  /* a failed import calls the deleter too */
  import.data = malloc(64);
  import.byte_length = 64;
  import.alignment = 3;
  import.dtype = ROOTSPAN_DTYPE_NONE;
  EXPECT_STATUS(rootspan_root_import_host(context, &import, &scratch, &error), ROOTSPAN_ERR_INVALID_ALIGNMENT);
  CHECK(deleted == 1, "the deleter ran once for the failed import");
  CHECK(scratch == NULL, "no root");

  /* spans: derived alignment, and an error with every accessor */
  memset(&span, 0, sizeof span);
  span.struct_size = sizeof span;
  EXPECT_STATUS(rootspan_span_derive(root, 48, 16, &span, &error), ROOTSPAN_OK);
  CHECK(span.root_id == info.root_id && span.offset == 48 && span.length == 16 && span.alignment == 16,
        "span [48,64) with alignment 16");
  if (rootspan_span_derive(root, 250, 14, &span, &error) != ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT || error == NULL) {
    CHECK(0, "OutsideRootExtent with an error object");
  } else {
    CHECK(rootspan_error_code(error) == ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT, "code");
    EXPECT_STRING(rootspan_error_operation(error), "span_derive");
    EXPECT_STRING(rootspan_error_cause(error), "range ends at 264, past the root's length 256");
    EXPECT_STRING(rootspan_error_policy(error), "");
    snprintf(
        text, sizeof text,
        "span_derive for root %llu key (%llu,%llu) range [250,264): unresolved: range ends at 264, past the root's "
        "length 256",
        (unsigned long long)info.root_id, (unsigned long long)info.key.domain, (unsigned long long)info.key.local);
    EXPECT_STRING(rootspan_error_message(error), text);
    memset(&requested, 0, sizeof requested);
    requested.struct_size = sizeof requested;
    CHECK(rootspan_error_requested(error, &requested) == ROOTSPAN_OK, "requested");
    CHECK(requested.kind == ROOTSPAN_REQUESTED_ROOT_KEY_RANGE && requested.root_id == info.root_id &&
              requested.offset == 250 && requested.length == 14,
          "requested root, key and range");
    CHECK(rootspan_error_resolution(error, &span) == 0, "unresolved");
    CHECK(rootspan_error_values(error, &expected, &actual) == 1 && expected == 256 && actual == 264, "values");
    rootspan_error_free(error);
    error = NULL;
  }

  /* claims: a conflict names the other claim */
  EXPECT_STATUS(rootspan_claim_acquire(root, 0, 96, ROOTSPAN_CLAIM_EXCLUSIVE, &exclusive, &error), ROOTSPAN_OK);
  if (rootspan_claim_acquire(root, 64, 64, ROOTSPAN_CLAIM_SHARED, &other, &error) != ROOTSPAN_ERR_CONFLICT ||
      error == NULL) {
    CHECK(0, "Conflict with an error object");
  } else {
    snprintf(
        text, sizeof text,
        "claim_acquire for root %llu key (%llu,%llu) range [64,128): unresolved: conflict with exclusive claim [0,96)",
        (unsigned long long)info.root_id, (unsigned long long)info.key.domain, (unsigned long long)info.key.local);
    EXPECT_STRING(rootspan_error_message(error), text);
    rootspan_error_free(error);
    error = NULL;
  }
  CHECK(other == NULL, "no claim on conflict");
  EXPECT_STATUS(rootspan_claim_acquire(root, 96, 32, ROOTSPAN_CLAIM_SHARED, &shared, &error), ROOTSPAN_OK);
  memset(&span, 0, sizeof span);
  span.struct_size = sizeof span;
  EXPECT_STATUS(rootspan_claim_get_span(shared, &span, &mode), ROOTSPAN_OK);
  CHECK(span.offset == 96 && span.length == 32 && mode == ROOTSPAN_CLAIM_SHARED, "claim span and mode");

  /* release while claims live: Busy, nothing changes */
  if (rootspan_root_release(root, &error) != ROOTSPAN_ERR_BUSY || error == NULL) {
    CHECK(0, "Busy with an error object");
  } else {
    CHECK(rootspan_error_values(error, &expected, &actual) == 1 && actual == 2, "two live claims");
    rootspan_error_free(error);
    error = NULL;
  }
  EXPECT_STATUS(rootspan_claim_release(shared, &error), ROOTSPAN_OK);

  /* split the exclusive claim; write a child through a mapping */
  ranges[0].offset = 0;
  ranges[0].length = 48;
  ranges[1].offset = 48;
  ranges[1].length = 48;
  EXPECT_STATUS(rootspan_claim_split(exclusive, ranges, 2, children, &error), ROOTSPAN_OK);
  EXPECT_STATUS(rootspan_claim_release(exclusive, &error), ROOTSPAN_ERR_BUSY);
  EXPECT_STATUS(rootspan_map_write(children[1], ROOTSPAN_DTYPE_U32, 0, 48, &mapping, &error), ROOTSPAN_OK);
  if (mapping != NULL) {
    CHECK(rootspan_mapping_length(mapping) == 48, "mapped length");
    memset(rootspan_mapping_data(mapping), 0xAB, 48);
    EXPECT_STATUS(rootspan_unmap(mapping), ROOTSPAN_OK);
    mapping = NULL;
  }
  EXPECT_STATUS(rootspan_claim_release(children[0], &error), ROOTSPAN_OK);
  EXPECT_STATUS(rootspan_claim_release(children[1], &error), ROOTSPAN_OK);

  /* copies through the host provider's mapping */
  for (i = 0; i < sizeof bytes; ++i) bytes[i] = (unsigned char)i;
  EXPECT_STATUS(rootspan_copy_from_host(exclusive, 0, bytes, 32, &error), ROOTSPAN_OK);
  memset(bytes, 0, sizeof bytes);
  EXPECT_STATUS(rootspan_copy_to_host(exclusive, 0, bytes, 64, &error), ROOTSPAN_OK);
  CHECK(bytes[31] == 31 && bytes[48] == 0xAB && bytes[63] == 0xAB, "copied bytes and the child's writes");

  /* device access on a host root: Unsupported */
  memset(&request, 0, sizeof request);
  request.struct_size = sizeof request;
  request.key = info.key;
  request.byte_length = 64;
  request.element_size = 4;
  request.element_offset = 0;
  request.rank = 1;
  request.shape = shape;
  request.strides = strides;
  memset(&access, 0, sizeof access);
  access.struct_size = sizeof access;
  if (rootspan_device_access_prepare(exclusive, &request, &access, &error) != ROOTSPAN_ERR_UNSUPPORTED ||
      error == NULL) {
    CHECK(0, "Unsupported with an error object");
  } else {
    EXPECT_STRING(rootspan_error_cause(error), "provider 'host' has no device access");
    EXPECT_STRING(rootspan_error_operation(error), "device_access_prepare");
    memset(&span, 0, sizeof span);
    span.struct_size = sizeof span;
    CHECK(rootspan_error_resolution(error, &span) == 1 && span.offset == 0 && span.length == 96,
          "resolved to the claim");
    rootspan_error_free(error);
    error = NULL;
  }
  EXPECT_STATUS(rootspan_claim_release(exclusive, &error), ROOTSPAN_OK);

  /* typed read-only root: map_read as F32 and as its complex partner; no writes */
  EXPECT_STATUS(rootspan_claim_acquire(typed, 0, 64, ROOTSPAN_CLAIM_EXCLUSIVE, &other, &error), ROOTSPAN_ERR_READ_ONLY);
  EXPECT_STATUS(rootspan_claim_acquire(typed, 16, 32, ROOTSPAN_CLAIM_SHARED, &shared, &error), ROOTSPAN_OK);
  EXPECT_STATUS(rootspan_map_read(shared, ROOTSPAN_DTYPE_F32, 0, 32, &mapping, &error), ROOTSPAN_OK);
  if (mapping != NULL) {
    read = (const float *)rootspan_mapping_data(mapping);
    CHECK(read[0] == 2.0f && read[7] == 5.5f, "the caller's floats, zero copy");
    EXPECT_STATUS(rootspan_unmap(mapping), ROOTSPAN_OK);
    mapping = NULL;
  }
  EXPECT_STATUS(rootspan_map_read(shared, ROOTSPAN_DTYPE_C32, 0, 32, &mapping, &error), ROOTSPAN_OK);
  if (mapping != NULL) {
    EXPECT_STATUS(rootspan_claim_release(shared, &error), ROOTSPAN_ERR_BUSY); /* mapped */
    EXPECT_STATUS(rootspan_unmap(mapping), ROOTSPAN_OK);
    mapping = NULL;
  }
  EXPECT_STATUS(rootspan_map_read(shared, ROOTSPAN_DTYPE_I32, 0, 32, &mapping, &error), ROOTSPAN_ERR_DTYPE_MISMATCH);
  EXPECT_STATUS(rootspan_map_write(shared, ROOTSPAN_DTYPE_F32, 0, 32, &mapping, &error), ROOTSPAN_ERR_READ_ONLY);
  EXPECT_STATUS(rootspan_claim_release(shared, &error), ROOTSPAN_OK);
  EXPECT_STATUS(rootspan_root_release(typed, &error), ROOTSPAN_OK);
  CHECK(deleted == 2, "the deleter ran once at release");

  /* an embedded provider written in C: simulated device memory */
  EXPECT_STATUS(rootspan_context_add_provider(context, sim_entry, "{}", &error), ROOTSPAN_OK);
  EXPECT_STATUS(rootspan_context_add_provider(context, sim_entry, NULL, &error), ROOTSPAN_ERR_PLUGIN_REJECTED);
  EXPECT_STATUS(rootspan_provider_report_count(context, &count), ROOTSPAN_OK);
  CHECK(count == 2, "host and c-sim");
  memset(&report, 0, sizeof report);
  report.struct_size = sizeof report;
  EXPECT_STATUS(rootspan_provider_report_get(context, 1, &report), ROOTSPAN_OK);
  EXPECT_STRING(report.name, "c-sim");
  CHECK(report.origin == ROOTSPAN_ORIGIN_EMBEDDED, "embedded");
  memset(&device, 0, sizeof device);
  device.struct_size = sizeof device;
  EXPECT_STATUS(rootspan_provider_device_info(context, "c-sim", 0, &device, &error), ROOTSPAN_OK);
  EXPECT_STRING(device.pci_bus_id, "0000:65:00.0");

  allocate.provider = "c-sim";
  allocate.memory_kind = ROOTSPAN_MEMORY_DEVICE;
  allocate.byte_length = 128;
  EXPECT_STATUS(rootspan_root_allocate(context, &allocate, &sim_root, &error), ROOTSPAN_OK);
  if (sim_root != NULL) {
    memset(&sim_info, 0, sizeof sim_info);
    sim_info.struct_size = sizeof sim_info;
    EXPECT_STATUS(rootspan_root_get_info(sim_root, &sim_info), ROOTSPAN_OK);
    CHECK(sim_info.host_accessible == 0, "device memory");
    EXPECT_STATUS(rootspan_claim_acquire(sim_root, 64, 64, ROOTSPAN_CLAIM_EXCLUSIVE, &exclusive, &error), ROOTSPAN_OK);
    EXPECT_STATUS(rootspan_map_read(exclusive, ROOTSPAN_DTYPE_NONE, 0, 64, &mapping, &error), ROOTSPAN_ERR_UNSUPPORTED);
    for (i = 0; i < sizeof bytes; ++i) bytes[i] = (unsigned char)(200 - i);
    EXPECT_STATUS(rootspan_copy_from_host(exclusive, 0, bytes, 64, &error), ROOTSPAN_OK);
    request.key = sim_info.key;
    request.byte_length = 64;
    memset(&access, 0, sizeof access);
    access.struct_size = sizeof access;
    EXPECT_STATUS(rootspan_device_access_prepare(exclusive, &request, &access, &error), ROOTSPAN_OK);
    CHECK(access.device_ptr != NULL && ((unsigned char *)access.device_ptr)[0] == 200, "device pointer at the claim");
    CHECK(access.device_ordinal == 0, "ordinal");
    CHECK(access.stream == (void *)&sim_releases, "stream");
    EXPECT_STATUS(rootspan_claim_release(exclusive, &error), ROOTSPAN_ERR_BUSY); /* access live */
    /* Aliasing strides under an exclusive claim: InvalidRequest. */
    strides[0] = 0;
    EXPECT_STATUS(rootspan_device_access_prepare(exclusive, &request, &access, &error), ROOTSPAN_ERR_INVALID_REQUEST);
    strides[0] = 1;
    EXPECT_STATUS(rootspan_device_access_release(exclusive, &access), ROOTSPAN_OK);
    CHECK(sim_access_releases == 1, "the provider released the access");
    memset(bytes, 0, sizeof bytes);
    EXPECT_STATUS(rootspan_copy_to_host(exclusive, 0, bytes, 64, &error), ROOTSPAN_OK);
    CHECK(bytes[63] == 137, "copied back through the hook");
    EXPECT_STATUS(rootspan_claim_release(exclusive, &error), ROOTSPAN_OK);
  }

  /* a few argument errors, with a NULL error pointer and with one */
  CHECK(rootspan_claim_acquire(NULL, 0, 1, ROOTSPAN_CLAIM_SHARED, &other, NULL) == ROOTSPAN_ERR_INVALID_ARGUMENT,
        "NULL root");
  EXPECT_STATUS(rootspan_claim_release(NULL, &error), ROOTSPAN_ERR_INVALID_ARGUMENT);
  CHECK(rootspan_error_code(NULL) == ROOTSPAN_ERR_OUT_OF_MEMORY, "NULL error reads as out of memory");
  EXPECT_STRING(rootspan_error_operation(NULL), "");
  EXPECT_STRING(rootspan_error_cause(NULL), "");
  EXPECT_STRING(rootspan_error_policy(NULL), "");
  CHECK(rootspan_error_message(NULL) != NULL, "a message even without an error");
  CHECK(rootspan_error_values(NULL, &expected, &actual) == 0, "no values");
  CHECK(rootspan_error_resolution(NULL, NULL) == 0, "no resolution");
  rootspan_error_free(NULL);

  /* a root left with a live import for the context to release */
  import.data = malloc(32);
  import.byte_length = 32;
  import.alignment = 1;
  import.read_only = 0;
  EXPECT_STATUS(rootspan_root_import_host(context, &import, &scratch, &error), ROOTSPAN_OK);

  /* destroy: root, sim_root and scratch are still live */
  EXPECT_STATUS(rootspan_context_destroy(context, &live), ROOTSPAN_OK);
  CHECK(live == 3, "three live roots released by the context");
  CHECK(deleted == 3, "the remaining import's deleter ran once");
  CHECK(sim_releases == 1, "the simulated root released once");

  if (failures != 0) {
    fprintf(stderr, "embed_c99: %d failed expectations\n", failures);
    return 1;
  }
  printf("embed_c99: all expectations met\n");
  return 0;
}
