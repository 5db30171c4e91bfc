/* rootspan/weights.h — loading model weights into provider memory (DESIGN 6).
 *
 * A checkpoint (one safetensors file, or a folder of shards with
 * model.safetensors.index.json) is validated against a component schema (or
 * the default one: one component per tensor), then every component becomes
 * one root of a provider: zero-copy over the mapped file on the host where
 * the bytes allow it, otherwise copied in order with pread, or uploaded
 * through the provider's copy hooks. Conventions are those of rootspan.h.
 */
#ifndef ROOTSPAN_WEIGHTS_H
#define ROOTSPAN_WEIGHTS_H

#include "rootspan/rootspan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How file bytes reach host memory.
 *
 * With MMAP, a zero-copy root is the file's mapping itself: a file rewritten
 * in place changes the loaded bytes, and a file truncated under it makes a
 * read past its new end raise SIGBUS. The library's own reads (verify,
 * copies, uploads out of such a root) recover and fail with ROOTSPAN_ERR_IO,
 * and a mapping requested after the file shrank is refused the same way; an
 * embedder's own reads through rootspan_mapping_data are not protected. For
 * files the embedder does not control, use READ. */
typedef int32_t rootspan_load_strategy;
enum {
  ROOTSPAN_LOAD_MMAP = 0, /* map the files; single aligned segments become zero-copy roots */
  ROOTSPAN_LOAD_READ = 1  /* never map: pread everything (network file systems, untrusted files) */
};

/* Where a load stands; passed to the progress callback. */
typedef struct rootspan_load_progress {
  size_t struct_size;
  const char *component;    /* the component being loaded; valid for the call */
  uint64_t component_index; /* from 0 */
  uint64_t component_count;
  uint64_t bytes_done;
  uint64_t bytes_total;
} rootspan_load_progress;
#define ROOTSPAN_LOAD_PROGRESS_LAST_FIELD bytes_total
#define ROOTSPAN_LOAD_PROGRESS_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_load_progress, ROOTSPAN_LOAD_PROGRESS_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_load_progress, ROOTSPAN_LOAD_PROGRESS_STRUCT_SIZE);

/* Returns 0 to go on, non-zero to cancel the load (it then fails with
 * ROOTSPAN_ERR_CANCELLED and releases every root it made). Called on the
 * loading thread. */
typedef int (*rootspan_load_progress_fn)(void *progress_context, const rootspan_load_progress *progress);

typedef struct rootspan_load_options {
  size_t struct_size;
  const char *schema_path;  /* a component schema file, or NULL: one component per tensor */
  const char *provider;     /* a provider name, or NULL / "auto": the highest-priority provider with a device */
  uint32_t device;
  rootspan_load_strategy strategy;
  rootspan_load_progress_fn progress; /* may be NULL */
  void *progress_context;
} rootspan_load_options;
#define ROOTSPAN_LOAD_OPTIONS_LAST_FIELD progress_context
#define ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE ROOTSPAN_STRUCT_END(rootspan_load_options, ROOTSPAN_LOAD_OPTIONS_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_load_options, ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE);

/* The components a load made. Owns their roots until rootspan_weights_free. */
typedef struct rootspan_weights rootspan_weights;

/* Opens and validates the checkpoint and schema, then loads every component.
 * On failure no root is left and *weights stays NULL. */
ROOTSPAN_API rootspan_status rootspan_weights_load(rootspan_context *context, const char *path,
                                                   const rootspan_load_options *options, rootspan_weights **weights,
                                                   rootspan_error **error);

typedef struct rootspan_component_info {
  size_t struct_size;
  const char *id;        /* out: lives as long as the weights */
  rootspan_root *root;   /* out: owned by the weights; claim it, do not release it */
  uint64_t byte_length;  /* out */
  uint64_t segments;     /* out: source tensors, in order */
  int32_t zero_copy;     /* out: the root is the mapped file region itself */
} rootspan_component_info;
#define ROOTSPAN_COMPONENT_INFO_LAST_FIELD zero_copy
#define ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_component_info, ROOTSPAN_COMPONENT_INFO_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_component_info, ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE);

/* The provider the components live in; lives as long as the weights. */
ROOTSPAN_API const char *rootspan_weights_provider(const rootspan_weights *weights);
ROOTSPAN_API rootspan_status rootspan_weights_component_count(const rootspan_weights *weights, size_t *count);
ROOTSPAN_API rootspan_status rootspan_weights_component(const rootspan_weights *weights, size_t index,
                                                        rootspan_component_info *info);
/* Optional components whose sources are missing: id and reason live as long
 * as the weights. */
ROOTSPAN_API rootspan_status rootspan_weights_skipped_count(const rootspan_weights *weights, size_t *count);
ROOTSPAN_API rootspan_status rootspan_weights_skipped(const rootspan_weights *weights, size_t index, const char **id,
                                                      const char **reason);
/* The SHA-256 of a component's bytes as they lie in provider memory, read back
 * through the provider: 64 lowercase hex digits and a NUL into hex[65]. */
ROOTSPAN_API rootspan_status rootspan_weights_component_sha256(rootspan_weights *weights, size_t index, char hex[65],
                                                               rootspan_error **error);
/* Releases every component's root and frees the weights. Fails with
 * ROOTSPAN_ERR_BUSY, freeing nothing, while a component is still claimed. */
ROOTSPAN_API rootspan_status rootspan_weights_free(rootspan_weights *weights, rootspan_error **error);

/* Validates a checkpoint without loading it and describes it as one JSON
 * document (DESIGN 7, `rootspan inspect`). *json is freed with
 * rootspan_string_free. */
ROOTSPAN_API rootspan_status rootspan_checkpoint_inspect(const char *path, char **json, rootspan_error **error);
ROOTSPAN_API void rootspan_string_free(char *string);

#ifdef __cplusplus
}
#endif

#endif /* ROOTSPAN_WEIGHTS_H */
