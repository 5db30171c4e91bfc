/* rootspan/rootspan.h — the embedding API.
 *
 * A context owns providers and the roots made from their allocations. A root is
 * one uniquely owned allocation; every access to its bytes goes through a claim
 * (shared or exclusive, over a checked span) and, on the host, a mapping.
 *
 * Conventions (docs/c-api.md):
 * - Calls that can fail return a rootspan_status (ROOTSPAN_OK on success); the
 *   others (the version, name lookups, an error's fields, the frees) return
 *   their value, or nothing, as each one's comment says. Calls that can fail
 *   in more than one way take a rootspan_error **error as their last argument:
 *   pass NULL to ignore the details, or a pointer to a NULL rootspan_error *;
 *   on failure it receives an error the caller frees with rootspan_error_free.
 * - Every struct starts with struct_size but three: the small values passed
 *   in arrays (rootspan_range, rootspan_key) and the provider's message
 *   buffer (rootspan_provider_message). Whoever fills a struct sets
 *   struct_size to sizeof(struct) as its header defines it; nothing past it
 *   is read or written. A struct grows only by appending fields; every size
 *   it was published at is listed beside it (ROOTSPAN_*_PUBLISHED_SIZES), and
 *   a caller built against an older header is accepted with its sizeof or
 *   the end of its last field (docs/c-api.md).
 * - Whoever allocates frees: errors, claims and mappings go back through the
 *   functions named on them.
 * - Threads: every function is safe from any thread. One claim or mapping
 *   handle is used by one thread at a time. Claims on different roots never
 *   contend for a lock.
 * - Release order: a mapping before its claim, a claim before its root, every
 *   root before its context (or the context releases what is left).
 */
#ifndef ROOTSPAN_ROOTSPAN_H
#define ROOTSPAN_ROOTSPAN_H

#include "rootspan/provider.h"
#include "rootspan/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- versions ---------------------------------------------------------- */

#define ROOTSPAN_VERSION_MAJOR 0
#define ROOTSPAN_VERSION_MINOR 7
#define ROOTSPAN_VERSION_PATCH 0

/* The library's version string, e.g. "0.7.0". Static storage. */
ROOTSPAN_API const char *rootspan_version(void);

/* Static names of codes and element types ("Conflict", "F32"); never NULL. */
ROOTSPAN_API const char *rootspan_status_name(rootspan_status status);
ROOTSPAN_API const char *rootspan_dtype_name(rootspan_dtype dtype);
/* Bytes per element; 0 for NONE and for sub-byte types (F4, F6_*). */
ROOTSPAN_API uint64_t rootspan_dtype_size(rootspan_dtype dtype);

/* ---- errors (docs/concepts.md) ---------------------------------------------- */

typedef struct rootspan_error rootspan_error;

/* What an operation was asked to do. */
typedef int32_t rootspan_requested_kind;
enum {
  ROOTSPAN_REQUESTED_NONE = 0,          /* no range (e.g. a manifest) */
  ROOTSPAN_REQUESTED_RANGE = 1,         /* a raw range: offset, length */
  ROOTSPAN_REQUESTED_KEY_RANGE = 2,     /* a key and range */
  ROOTSPAN_REQUESTED_ROOT_KEY_RANGE = 3 /* a root id, key and range */
};

typedef struct rootspan_requested {
  size_t struct_size;
  rootspan_requested_kind kind; /* out */
  uint64_t root_id;             /* out: when kind is ROOT_KEY_RANGE */
  rootspan_key key;             /* out: when kind is KEY_RANGE or ROOT_KEY_RANGE */
  uint64_t offset;              /* out: relative to the root, or absolute for import */
  uint64_t length;              /* out */
} rootspan_requested;
#define ROOTSPAN_REQUESTED_LAST_FIELD length
#define ROOTSPAN_REQUESTED_STRUCT_SIZE ROOTSPAN_STRUCT_END(rootspan_requested, ROOTSPAN_REQUESTED_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_requested, ROOTSPAN_REQUESTED_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0. */
#define ROOTSPAN_REQUESTED_PUBLISHED_SIZES ROOTSPAN_REQUESTED_STRUCT_SIZE

/* A span: a range bound to one root, with its derived alignment. */
typedef struct rootspan_span {
  size_t struct_size;
  uint64_t root_id;   /* out */
  uint64_t offset;    /* out: absolute byte offset in the allocation */
  uint64_t length;    /* out */
  uint64_t alignment; /* out: alignment guaranteed at offset */
} rootspan_span;
#define ROOTSPAN_SPAN_LAST_FIELD alignment
#define ROOTSPAN_SPAN_STRUCT_SIZE ROOTSPAN_STRUCT_END(rootspan_span, ROOTSPAN_SPAN_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_span, ROOTSPAN_SPAN_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0. */
#define ROOTSPAN_SPAN_PUBLISHED_SIZES ROOTSPAN_SPAN_STRUCT_SIZE

/* The error's status code. A NULL error (one the library could not allocate)
 * reads as ROOTSPAN_ERR_OUT_OF_MEMORY, and every accessor below answers
 * something for it: "" or a fixed message, never a crash. */
ROOTSPAN_API rootspan_status rootspan_error_code(const rootspan_error *error);
/* The operation's name: the C function that failed without its "rootspan_"
 * prefix ("claim_acquire", "map_read", "root_allocate", ...), or for the
 * loader and the weight loader the stage that failed inside it
 * ("load_manifest", "load_plugin", "open_checkpoint", "load_component", ...).
 * The string lives as long as the error. */
ROOTSPAN_API const char *rootspan_error_operation(const rootspan_error *error);
/* The whole message, e.g. "claim_acquire for root 7 key (3,12) range [64,128):
 * unresolved: conflict with exclusive claim [0,96)". Lives as long as the error. */
ROOTSPAN_API const char *rootspan_error_message(const rootspan_error *error);
/* The cause alone, e.g. "conflict with exclusive claim [0,96)". */
ROOTSPAN_API const char *rootspan_error_cause(const rootspan_error *error);
/* The loader policy or rule cited ("L4", "L9"), or "" when none. */
ROOTSPAN_API const char *rootspan_error_policy(const rootspan_error *error);
/* Fills *requested (struct_size set by the caller). */
ROOTSPAN_API rootspan_status rootspan_error_requested(const rootspan_error *error, rootspan_requested *requested);
/* Returns 1 and fills *span when the request was resolved to a span, else 0. */
ROOTSPAN_API int rootspan_error_resolution(const rootspan_error *error, rootspan_span *span);
/* Returns 1 and fills *expected and *actual when the cause has two values. */
ROOTSPAN_API int rootspan_error_values(const rootspan_error *error, uint64_t *expected, uint64_t *actual);
/* Frees an error; NULL is ignored. */
ROOTSPAN_API void rootspan_error_free(rootspan_error *error);

/* ---- contexts and providers (docs/concepts.md) ---------------------------- */

typedef struct rootspan_context rootspan_context;
typedef struct rootspan_root rootspan_root;
typedef struct rootspan_claim rootspan_claim;
typedef struct rootspan_mapping rootspan_mapping;

typedef struct rootspan_context_options {
  size_t struct_size;
  int32_t no_static_providers;  /* non-zero: leave out the compiled-in providers */
  const char *const *manifests; /* manifest_count paths (replaces discovery); borrowed */
  size_t manifest_count;
  int32_t discover_manifests; /* non-zero with manifest_count 0: run discovery (policy L3) */
} rootspan_context_options;
#define ROOTSPAN_CONTEXT_OPTIONS_LAST_FIELD discover_manifests
#define ROOTSPAN_CONTEXT_OPTIONS_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_context_options, ROOTSPAN_CONTEXT_OPTIONS_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_context_options, ROOTSPAN_CONTEXT_OPTIONS_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0. */
#define ROOTSPAN_CONTEXT_OPTIONS_PUBLISHED_SIZES ROOTSPAN_CONTEXT_OPTIONS_STRUCT_SIZE

/* options may be NULL: static providers only. */
ROOTSPAN_API rootspan_status rootspan_context_create(const rootspan_context_options *options,
                                                     rootspan_context **context, rootspan_error **error);
/* Releases every root still live (each once, through its provider), shuts the
 * providers down and frees the context. *live_roots (may be NULL) receives how
 * many roots were still live. Every handle of this context becomes invalid. */
ROOTSPAN_API rootspan_status rootspan_context_destroy(rootspan_context *context, uint64_t *live_roots);

/* Adds a provider linked into the embedding program: entry is what a plugin
 * library would export. The table is negotiated (L6) and validated like a
 * plugin's; options_json (may be NULL: "{}") is borrowed for the call. A second
 * provider of a name already loaded is refused. */
ROOTSPAN_API rootspan_status rootspan_context_add_provider(rootspan_context *context, rootspan_provider_entry_fn entry,
                                                           const char *options_json, rootspan_error **error);

/* Where a provider came from and what became of it. */
typedef int32_t rootspan_provider_origin;
enum { ROOTSPAN_ORIGIN_STATIC = 0, ROOTSPAN_ORIGIN_MANIFEST = 1, ROOTSPAN_ORIGIN_EMBEDDED = 2 };
/* LOADED: started, with at least one device. SKIPPED: a loader policy passed
 * it over (policy and reason say which and why). FAILED: its init failed.
 * NO_DEVICE: started, but it reports zero devices; reason carries the
 * runtime's explanation. A NO_DEVICE provider is started like a LOADED one:
 * its name is taken and the calls that take a provider name find it. */
typedef int32_t rootspan_provider_state;
enum {
  ROOTSPAN_PROVIDER_LOADED = 0,
  ROOTSPAN_PROVIDER_SKIPPED = 1,
  ROOTSPAN_PROVIDER_FAILED = 2,
  ROOTSPAN_PROVIDER_NO_DEVICE = 3
};

/* One provider the context knows of, loaded or not. Strings live as long as
 * the context. */
typedef struct rootspan_provider_report {
  size_t struct_size;
  const char *name;                /* out */
  const char *kind;                /* out */
  rootspan_provider_origin origin; /* out */
  rootspan_provider_state state;   /* out */
  const char *library;             /* out: the library path, or NULL for a static provider */
  const char *manifest;            /* out: the manifest that named it, or NULL */
  uint32_t abi_major;              /* out: 0 when never negotiated */
  uint32_t abi_minor;              /* out */
  uint32_t device_count;           /* out */
  int32_t priority;                /* out */
  const char *policy;              /* out: the policy that skipped it ("L4"), or NULL */
  const char *reason;              /* out: why it was skipped, failed, or has no device; or NULL */
  rootspan_status code;            /* out: the error that skipped or failed it; ROOTSPAN_OK when loaded */
  /* Added later; an older caller's struct_size leaves it out. */
  const char *note; /* out: what a loaded provider said of itself when it counted its devices (the host
                       provider: whether transparent huge pages back large allocations), or NULL */
} rootspan_provider_report;
#define ROOTSPAN_PROVIDER_REPORT_LAST_FIELD note
#define ROOTSPAN_PROVIDER_REPORT_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_provider_report, ROOTSPAN_PROVIDER_REPORT_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_provider_report, ROOTSPAN_PROVIDER_REPORT_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0 up to code; note appended
 * before 0.2.0. */
#define ROOTSPAN_PROVIDER_REPORT_PUBLISHED_SIZES \
  ROOTSPAN_STRUCT_END(rootspan_provider_report, code), ROOTSPAN_PROVIDER_REPORT_STRUCT_SIZE

/* Every provider the context knows of, loaded or not, in the order it met
 * them (static providers first, then each manifest entry). report_get fills
 * *report up to its struct_size (set by the caller); its strings live as long
 * as the context, and a report never changes once made. INVALID_ARGUMENT for
 * NULLs or a struct_size below the oldest published size or inside a field;
 * NOT_FOUND for an index past the count. */
ROOTSPAN_API rootspan_status rootspan_provider_report_count(const rootspan_context *context, size_t *count);
ROOTSPAN_API rootspan_status rootspan_provider_report_get(const rootspan_context *context, size_t index,
                                                          rootspan_provider_report *report);
/* The manifests read, in order. Strings live as long as the context. */
ROOTSPAN_API rootspan_status rootspan_manifest_count(const rootspan_context *context, size_t *count);
ROOTSPAN_API const char *rootspan_manifest_path(const rootspan_context *context, size_t index);

/* A provider's device (rootspan_device_info is in types.h). */
ROOTSPAN_API rootspan_status rootspan_provider_device_info(rootspan_context *context, const char *provider,
                                                           uint32_t ordinal, rootspan_device_info *info,
                                                           rootspan_error **error);

/* Which provider a load or allocation would use, and why. requested is a
 * provider name or "auto" (NULL: "auto"): the highest priority among started
 * providers with a device, the first listed winning a tie. device is the
 * ordinal the caller means to use; it must exist. On success *choice (the
 * caller frees it with rootspan_provider_choice_free) names the provider and
 * explains the choice: for "auto", why each other provider was passed over.
 * Errors: NOT_FOUND for a name no provider has or an ordinal the provider
 * lacks (the message lists the providers with their states and device counts,
 * or the ordinals that exist); the provider's own error for a named provider
 * that was skipped or failed; NO_PROVIDER when "auto" finds no device. */
typedef struct rootspan_provider_choice rootspan_provider_choice;
ROOTSPAN_API rootspan_status rootspan_provider_choose(const rootspan_context *context, const char *requested,
                                                      uint32_t device, rootspan_provider_choice **choice,
                                                      rootspan_error **error);
/* The chosen provider's name; lives as long as the choice. NULL for a NULL choice. */
ROOTSPAN_API const char *rootspan_provider_choice_name(const rootspan_provider_choice *choice);
/* Why it was chosen ("chose \"cuda\" (priority 100, 1 device); passed over
 * \"host\": lower priority 0"); lives as long as the choice. */
ROOTSPAN_API const char *rootspan_provider_choice_explanation(const rootspan_provider_choice *choice);
/* NULL is allowed. */
ROOTSPAN_API void rootspan_provider_choice_free(rootspan_provider_choice *choice);

/* ---- roots (docs/concepts.md) ------------------------------------------- */

/* A root's identity and extent. */
typedef struct rootspan_root_info {
  size_t struct_size;
  uint64_t root_id;        /* out: fresh, never reused, non-zero */
  rootspan_key key;        /* out */
  uint64_t byte_offset;    /* out */
  uint64_t byte_length;    /* out */
  uint64_t alignment;      /* out */
  rootspan_dtype dtype;    /* out: NONE for an untyped root */
  int32_t read_only;       /* out */
  int32_t host_accessible; /* out: the provider can map it */
  uint32_t device;         /* out: the provider's device ordinal */
  const char *provider;    /* out: the provider's name; lives as long as the root */
} rootspan_root_info;
#define ROOTSPAN_ROOT_INFO_LAST_FIELD provider
#define ROOTSPAN_ROOT_INFO_STRUCT_SIZE ROOTSPAN_STRUCT_END(rootspan_root_info, ROOTSPAN_ROOT_INFO_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_root_info, ROOTSPAN_ROOT_INFO_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0. */
#define ROOTSPAN_ROOT_INFO_PUBLISHED_SIZES ROOTSPAN_ROOT_INFO_STRUCT_SIZE

/* Allocates byte_length bytes from a provider and imports them as a root.
 * memory_kind is one of ROOTSPAN_MEMORY_* (0 = host). */
typedef struct rootspan_allocate_options {
  size_t struct_size;
  const char *provider; /* provider name; borrowed */
  uint32_t device;
  rootspan_memory_kind memory_kind;
  uint64_t byte_length;
  uint64_t alignment;   /* a power of two; 0 means 64 */
  rootspan_dtype dtype; /* NONE: untyped root */
} rootspan_allocate_options;
#define ROOTSPAN_ALLOCATE_OPTIONS_LAST_FIELD dtype
#define ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_allocate_options, ROOTSPAN_ALLOCATE_OPTIONS_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_allocate_options, ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0. */
#define ROOTSPAN_ALLOCATE_OPTIONS_PUBLISHED_SIZES ROOTSPAN_ALLOCATE_OPTIONS_STRUCT_SIZE

/* Allocates as *options says (provider NULL: "host") and returns the new root
 * in *root (NULL on failure), owned by the context until rootspan_root_release
 * or the context's destruction. */
ROOTSPAN_API rootspan_status rootspan_root_allocate(rootspan_context *context, const rootspan_allocate_options *options,
                                                    rootspan_root **root, rootspan_error **error);

/* Caller memory made a host root. deleter (may be NULL) is called exactly once:
 * when the root is released, or before this call returns if it fails. */
typedef struct rootspan_host_import {
  size_t struct_size;
  const char *provider; /* NULL: "host" */
  void *data;
  uint64_t byte_length;
  uint64_t alignment;   /* the alignment the caller guarantees for data */
  rootspan_dtype dtype; /* NONE: untyped; else byte_length is a whole number of elements */
  int32_t read_only;
  void (*deleter)(void *deleter_context, void *data);
  void *deleter_context;
} rootspan_host_import;
#define ROOTSPAN_HOST_IMPORT_LAST_FIELD deleter_context
#define ROOTSPAN_HOST_IMPORT_STRUCT_SIZE ROOTSPAN_STRUCT_END(rootspan_host_import, ROOTSPAN_HOST_IMPORT_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_host_import, ROOTSPAN_HOST_IMPORT_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0. */
#define ROOTSPAN_HOST_IMPORT_PUBLISHED_SIZES ROOTSPAN_HOST_IMPORT_STRUCT_SIZE

/* Makes a root of host memory the caller owns (import->data), under the
 * provider named by import->provider, checked as an allocation is (identity
 * and extent). The memory is handed over with its deleter, which runs
 * exactly once: when the root is released, or before this call returns if
 * the import fails. *root (out) lives until rootspan_root_release or the
 * context's destroy. */
ROOTSPAN_API rootspan_status rootspan_root_import_host(rootspan_context *context, const rootspan_host_import *import,
                                                       rootspan_root **root, rootspan_error **error);

/* Fills *info (out; its struct_size set by the caller) with what the root
 * is: id, key, extent, dtype, read-only, provider. The provider name in it
 * lives as long as the root. ROOTSPAN_ERR_INVALID_ARGUMENT for NULLs or a
 * struct_size that is not a published size. */
ROOTSPAN_API rootspan_status rootspan_root_get_info(const rootspan_root *root, rootspan_root_info *info);

/* Releases a root through its provider's release hook, exactly once. Fails
 * with ROOTSPAN_ERR_BUSY while claims are live; the root then stays valid. */
ROOTSPAN_API rootspan_status rootspan_root_release(rootspan_root *root, rootspan_error **error);

/* Derives a span from [offset, offset + length) relative to the root. */
ROOTSPAN_API rootspan_status rootspan_span_derive(const rootspan_root *root, uint64_t offset, uint64_t length,
                                                  rootspan_span *span, rootspan_error **error);

/* ---- claims (docs/concepts.md) ----------------------------------------------- */

/* Claims [offset, offset + length) of the root. */
ROOTSPAN_API rootspan_status rootspan_claim_acquire(rootspan_root *root, uint64_t offset, uint64_t length,
                                                    rootspan_claim_mode mode, rootspan_claim **claim,
                                                    rootspan_error **error);

/* A range relative to a parent claim's span. */
typedef struct rootspan_range {
  uint64_t offset;
  uint64_t length;
} rootspan_range;

/* Splits an exclusive claim into count disjoint exclusive children, ranges
 * relative to the parent. The parent cannot be mapped or released while a
 * child lives. On failure no child is made. */
ROOTSPAN_API rootspan_status rootspan_claim_split(rootspan_claim *parent, const rootspan_range *ranges, size_t count,
                                                  rootspan_claim **children, rootspan_error **error);

/* The span the claim covers (out, relative to its root) and its mode (out);
 * either may be NULL. ROOTSPAN_ERR_INVALID_ARGUMENT for a NULL claim or a
 * span whose struct_size is not a published size. */
ROOTSPAN_API rootspan_status rootspan_claim_get_span(const rootspan_claim *claim, rootspan_span *span,
                                                     rootspan_claim_mode *mode);

/* Fails with ROOTSPAN_ERR_BUSY while the claim has mappings, children or
 * device accesses; the claim then stays valid. */
ROOTSPAN_API rootspan_status rootspan_claim_release(rootspan_claim *claim, rootspan_error **error);

/* ---- mappings (docs/concepts.md) --------------------------------------------- */

/* Maps [offset, offset + length) relative to the claim as elements of dtype
 * (NONE: bytes). map_write needs an exclusive claim on a writable root. */
ROOTSPAN_API rootspan_status rootspan_map_read(rootspan_claim *claim, rootspan_dtype dtype, uint64_t offset,
                                               uint64_t length, rootspan_mapping **mapping, rootspan_error **error);
ROOTSPAN_API rootspan_status rootspan_map_write(rootspan_claim *claim, rootspan_dtype dtype, uint64_t offset,
                                                uint64_t length, rootspan_mapping **mapping, rootspan_error **error);
/* The mapped bytes: valid until rootspan_unmap. Write through the pointer only
 * for a map_write mapping. */
ROOTSPAN_API void *rootspan_mapping_data(const rootspan_mapping *mapping);
/* The mapped length in bytes (0 for a NULL mapping). */
ROOTSPAN_API uint64_t rootspan_mapping_length(const rootspan_mapping *mapping);
/* Ends a mapping; its pointer is invalid afterwards, and its claim can be
 * released. ROOTSPAN_ERR_INVALID_ARGUMENT for NULL. */
ROOTSPAN_API rootspan_status rootspan_unmap(rootspan_mapping *mapping);

/* ---- device access (docs/concepts.md) ---------------------------------------- */

/* Validates the request against the claim's root, then lets the provider
 * prepare it. Roots of providers without device access answer
 * ROOTSPAN_ERR_UNSUPPORTED. The access holds the claim until released. */
ROOTSPAN_API rootspan_status rootspan_device_access_prepare(rootspan_claim *claim,
                                                            const rootspan_device_access_request *request,
                                                            rootspan_device_access *access, rootspan_error **error);
/* Ends an access that rootspan_device_access_prepare gave on this claim:
 * the provider releases what it prepared, and the claim is free to be
 * released. ROOTSPAN_ERR_INVALID_ARGUMENT, the provider never called, for a
 * NULL claim or access, an access whose struct_size is not a published size,
 * or one this claim did not prepare (its device pointer and provider token
 * must be those prepare filled in). */
ROOTSPAN_API rootspan_status rootspan_device_access_release(rootspan_claim *claim,
                                                            const rootspan_device_access *access);

/* ---- copies ------------------------------------------------------------ */

/* Synchronous copies between host memory and [offset, offset + length) of a
 * claim. copy_from_host needs an exclusive claim. Providers with host access
 * and no copy hook are served through a mapping. */
ROOTSPAN_API rootspan_status rootspan_copy_from_host(rootspan_claim *claim, uint64_t offset, const void *source,
                                                     uint64_t length, rootspan_error **error);
ROOTSPAN_API rootspan_status rootspan_copy_to_host(rootspan_claim *claim, uint64_t offset, void *destination,
                                                   uint64_t length, rootspan_error **error);

#ifdef __cplusplus
}
#endif

#endif /* ROOTSPAN_ROOTSPAN_H */
