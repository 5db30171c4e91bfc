/* rootspan/weights.h — loading model weights into provider memory (docs/weight-schema.md).
 *
 * A checkpoint (one safetensors file; a folder of shards with
 * model.safetensors.index.json, or that index file itself; or a Hugging Face
 * cache repository folder, models--org--name; or a GGUF file, split or not) is
 * validated against a component schema (or
 * the default one: one component per tensor), then every component becomes
 * one root of a provider: zero-copy over the mapped file on the host where
 * the bytes allow it, otherwise copied with many reads in flight (a pool of
 * pread threads), or uploaded through the provider's copy hooks. Conventions
 * are those of rootspan.h.
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
 * files the embedder does not control, use READ or DIRECT. A verified load
 * (check_digests, digests_path) never maps: MMAP and AUTO read instead, and
 * the digests are taken of the bytes as they landed (docs/verified-loads.md).
 *
 * READ and DIRECT copy with many reads in flight (a pool of pread threads,
 * or io_uring with ROOTSPAN_READ_ENGINE=io_uring in the environment).
 * DIRECT reads with O_DIRECT, past the page cache, where the file system
 * allows it, and reads buffered where it does not (tmpfs, overlay, EINVAL);
 * rootspan_weights_read_report names each such file. AUTO
 * chooses one of the others from the file system under the files and the
 * checkpoint's size against the memory available (docs/cold-start.md); the
 * report says which and why. The numbering is pinned. */
typedef int32_t rootspan_load_strategy;
enum {
  ROOTSPAN_LOAD_MMAP = 0,   /* map the files; single aligned segments become zero-copy roots */
  ROOTSPAN_LOAD_READ = 1,   /* never map: read everything (network file systems, untrusted files) */
  ROOTSPAN_LOAD_DIRECT = 2, /* never map: read with O_DIRECT where the file system allows it (0.5.0) */
  ROOTSPAN_LOAD_AUTO = 3    /* choose from the file system, the memory available and, on a local disk, how much of
                               the files the page cache holds: mmap, populated when they are cold (0.5.0) */
};

/* Where a load stands; passed to the progress callback. */
typedef struct rootspan_load_progress {
  size_t struct_size;
  const char *component;    /* the component being loaded ("" before the first, or none); valid for the call */
  uint64_t component_index; /* from 0, in the order the load takes them (file order for read and direct) */
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

/* How a split shares a dimension of n entries among `world` ranks when n is
 * not a multiple of it. The numbering is pinned. */
typedef int32_t rootspan_split_convention;
enum {
  ROOTSPAN_SPLIT_TENSOR_SPLIT = 0, /* each rank takes n / world, the first n % world one more (torch.tensor_split) */
  ROOTSPAN_SPLIT_CHUNK = 1 /* each rank takes ceil(n / world), the last what is left (torch.chunk, DTensor's Shard) */
};

/* A slicing rule of a tensor-parallel load: components whose id matches
 * `pattern` are split along `dimension` among the ranks (shared as the load
 * options' split_convention says), or replicated on every rank when it is
 * -1. The first matching rule wins; a component matching no rule is
 * replicated. */
typedef struct rootspan_split_rule {
  size_t struct_size;
  const char *pattern; /* a shell-style glob over component ids, as for tensors; borrowed for the call */
  int32_t dimension;   /* the dimension to split (of the block grid when block-quantized), or -1: replicate */
} rootspan_split_rule;
#define ROOTSPAN_SPLIT_RULE_LAST_FIELD dimension
#define ROOTSPAN_SPLIT_RULE_STRUCT_SIZE ROOTSPAN_STRUCT_END(rootspan_split_rule, ROOTSPAN_SPLIT_RULE_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_split_rule, ROOTSPAN_SPLIT_RULE_STRUCT_SIZE);

typedef struct rootspan_load_options {
  size_t struct_size;
  const char *schema_path; /* a component schema file, or NULL: one component per tensor */
  const char *provider;    /* a provider name, or NULL / "auto": the highest-priority provider with a device */
  uint32_t device;
  rootspan_load_strategy strategy;
  rootspan_load_progress_fn progress; /* may be NULL */
  void *progress_context;
  /* Fields below were added later; an older caller's struct_size leaves them NULL. */
  const char *const *tensors; /* tensor_count shell-style globs over component ids: load only matching components;
                                 borrowed for the call; NULL/0: all */
  size_t tensor_count;
  const char *revision; /* for a Hugging Face cache repository folder: the branch, tag or commit whose snapshot to
                           load; borrowed for the call; NULL: the one refs/main names */
  /* Tensor-parallel loading: with world_size > 0, only this rank's slice of
   * each component is read and loaded (each component's shape is then its
   * slice's). world_size 0: the whole checkpoint, as without these fields. */
  uint32_t rank;       /* in [0, world_size) */
  uint32_t world_size; /* ranks in all; 0: no slicing */
  /* split_rule_count rules; borrowed for the call; NULL/0: replicate all. The array is one version of the
     struct: rules lie split_rules[0].struct_size apart, rounded up to the struct's alignment (sizeof). */
  const rootspan_split_rule *split_rules;
  size_t split_rule_count;
  /* The staging ring of an upload to a provider without host access: buffers
   * of pinned memory of that provider, allocated once per load, that file
   * reads fill while earlier ones are copied to the device. 0: the default,
   * 4 buffers of 16 MiB; a size below 4096 is raised to 4096. */
  uint64_t staging_buffer_bytes; /* bytes per buffer; 0: 16 MiB */
  uint32_t staging_buffer_count; /* buffers; 0: 4 */
  /* With ROOTSPAN_LOAD_MMAP: non-zero maps the files privately and writable, so
   * that zero-copy roots are writable (read_only 0 in their component info):
   * a write copies the page it touches into memory of this process and never
   * reaches the file (copy-on-write, as MAP_PRIVATE does). 0: zero-copy roots
   * are read-only. Ignored with ROOTSPAN_LOAD_READ, whose roots are always
   * writable. */
  int32_t copy_on_write;
  /* Fields below were added in 0.4.0. */
  rootspan_split_convention split_convention; /* how uneven splits are shared; 0: ROOTSPAN_SPLIT_TENSOR_SPLIT */
  /* Verified loads: non-zero hashes (SHA-256) each file whose published
   * digest is known, from where the load placed its bytes once its reads
   * settle (docs/verified-loads.md), and fails with
   * ROOTSPAN_ERR_DIGEST_MISMATCH, releasing every root, before any weight
   * reaches the caller. Known digests: a Hugging Face cache blob named by
   * its SHA-256 (a blob named by a 40-hex git id cannot be checked), and the
   * entries of digests_path. Nothing known to check against fails with
   * ROOTSPAN_ERR_NOT_FOUND: a load is never called verified without a check. */
  int32_t check_digests;
  /* A digest manifest (`rootspan hash`, config/schemas/digests.schema.json) to
   * check the files against, and with per-tensor digests the byte ranges
   * this rank reads; borrowed for the call; NULL: none. Setting it implies
   * check_digests. */
  const char *digests_path;
  /* Fields below were added in 0.5.0. */
  /* With MMAP (or AUTO choosing it): non-zero reads the zero-copy roots'
   * bytes in before the load returns, many reads in flight, for a caller
   * that will touch every byte (a first pass, a checksum): a cold mapping
   * otherwise faults in one readahead window at a time. 0: pages fault in
   * when first touched, except that AUTO populates by itself files it finds
   * mostly cold on a local disk (docs/cold-start.md). */
  int32_t populate;
  /* Fields below were added in 0.6.0. */
  /* Non-zero hashes (SHA-256) each loaded component's source bytes, exactly
   * the ranges its payload reads, in the component's byte order, from the
   * descriptors this load opened, once every component is placed (so a file
   * changed during the load differs from memory); nothing is compared.
   * rootspan_weights_source_sha256 gives each digest, to check against
   * rootspan_weights_component_sha256 (provider memory) without opening the
   * checkpoint a second time (`rootspan load --verify`). */
  int32_t source_digests;
  /* Fields below were added in 0.7.0. */
  /* Signed models (docs/signed-models.md): an OpenSSF model signature (OMS
   * v1.0: a Sigstore bundle, as `model_signing sign` and `rootspan sign`
   * write it) over every file of the checkpoint's folder. Its signature is
   * checked with public_key_path or certificate_chain_paths, and its list
   * of files matched with the folder, before anything is read; then every
   * signed file (or shard) is hashed as check_digests hashes: from where
   * the load placed its bytes, the files it does not load from the files.
   * A signature that does not verify, or a file missing or not signed,
   * fails with ROOTSPAN_ERR_SIGNATURE_INVALID, a file that differs with
   * ROOTSPAN_ERR_DIGEST_MISMATCH, a keyless Sigstore signature with
   * ROOTSPAN_ERR_UNSUPPORTED; every root released, before any weight
   * reaches the caller. All borrowed for the call; NULL: no signature. */
  const char *signature_path;
  const char *public_key_path;                /* PEM (ECDSA P-256, P-384 or P-521); for a key-signed bundle */
  const char *const *certificate_chain_paths; /* PEM files of the certificates to trust; for a bundle signed
                                                 with a certificate; certificate_chain_count of them */
  size_t certificate_chain_count;
  int32_t ignore_unsigned_files; /* non-zero: files of the folder the signature does not name are not refused */
  /* With MMAP: non-zero populates the mapping as AUTO populates one on its
   * own, where populate above always does: when fewer than half of the
   * files' pages sampled are in the page cache, on a local block device,
   * and the checkpoint fits in the memory available; otherwise pages fault
   * in when first touched. Either way the files stay mapped, never copied
   * (a verified load copies whatever was asked). For a loader that hands
   * every tensor to its consumer at once, but should pay no populate pass
   * over files the page cache holds. The report's reason says which.
   * Ignored with populate set, and by the other strategies. */
  int32_t populate_when_cold;
} rootspan_load_options;
#define ROOTSPAN_LOAD_OPTIONS_LAST_FIELD populate_when_cold
#define ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE ROOTSPAN_STRUCT_END(rootspan_load_options, ROOTSPAN_LOAD_OPTIONS_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_load_options, ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0 up to progress_context; 0.2.0
 * up to revision (the subset), split_rule_count (tensor-parallel; a caller may know either group) and
 * staging_buffer_count; 0.3.0 copy_on_write; 0.4.0 digests_path; 0.5.0 populate; 0.6.0 source_digests;
 * 0.7.0 ignore_unsigned_files, then populate_when_cold. */
#define ROOTSPAN_LOAD_OPTIONS_PUBLISHED_SIZES                                                                         \
  ROOTSPAN_STRUCT_END(rootspan_load_options, progress_context), ROOTSPAN_STRUCT_END(rootspan_load_options, revision), \
      ROOTSPAN_STRUCT_END(rootspan_load_options, split_rule_count),                                                   \
      ROOTSPAN_STRUCT_END(rootspan_load_options, staging_buffer_count),                                               \
      ROOTSPAN_STRUCT_END(rootspan_load_options, copy_on_write),                                                      \
      ROOTSPAN_STRUCT_END(rootspan_load_options, digests_path), ROOTSPAN_STRUCT_END(rootspan_load_options, populate), \
      ROOTSPAN_STRUCT_END(rootspan_load_options, source_digests),                                                     \
      ROOTSPAN_STRUCT_END(rootspan_load_options, ignore_unsigned_files), ROOTSPAN_LOAD_OPTIONS_STRUCT_SIZE

/* The components a load made. Owns their roots until rootspan_weights_free.
 * Threads: any call may run on one thread while another releases a component
 * or frees the weights; it then returns a clean status, never reads freed
 * memory: a call on weights freed already (on any thread) fails with
 * ROOTSPAN_ERR_INVALID_ARGUMENT ("not a live handle"; rootspan_weights_provider
 * returns NULL). The strings and roots a call gave out are the caller's to
 * stop using once the component or the weights are released. */
typedef struct rootspan_weights rootspan_weights;

/* Opens and validates the checkpoint and schema, then loads every component
 * (with options->tensors, every component whose id matches one of them; the
 * others are not loaded and not reported as skipped). A pattern that matches
 * no component fails with ROOTSPAN_ERR_NOT_FOUND naming it. With
 * options->world_size > 0, the read plan is made before anything is read: a
 * rank outside [0, world_size), a split dimension past a component's rank, a
 * split that would cut a quantization block or leave a rank nothing
 * (ROOTSPAN_ERR_INVALID_ARGUMENT), or a split pattern matching no component
 * (ROOTSPAN_ERR_NOT_FOUND) fails the load. On failure no
 * root is left and *weights stays NULL. */
ROOTSPAN_API rootspan_status rootspan_weights_load(rootspan_context *context, const char *path,
                                                   const rootspan_load_options *options, rootspan_weights **weights,
                                                   rootspan_error **error);

/* The read plan rootspan_weights_load would follow for options (schema_path,
 * tensors, revision, rank, world_size, split_rules; world_size must be > 0),
 * made without reading any tensor data, as one JSON document: {"rank",
 * "world_size", "bytes", "rules": [{"pattern", "dimension"}], "components":
 * [{"id", "rule" (the matching pattern, or null: replicated by default),
 * "split_dimension", "full_dimensions", "dimensions", "begin", "count",
 * "bytes", "reads": [{"tensor", "file", "file_offset", "length",
 * "destination_offset"}]}]}. Fails as the load would. *json is freed with
 * rootspan_string_free. */
ROOTSPAN_API rootspan_status rootspan_checkpoint_read_plan(const char *path, const rootspan_load_options *options,
                                                           char **json, rootspan_error **error);

/* Verified loads (docs/verified-loads.md). What a load with check_digests or
 * digests_path checked, as one JSON document: {"checked" (whether it was
 * asked to), "verified": [{"kind" ("file" or "component"), "name", "bytes",
 * "sha256", "source" ("cache blob name" or "digest manifest")}],
 * "unverifiable": [{"file", "reason"}]} (files it read that had no published
 * digest: a cache blob named by a git object id, say). A load that was not
 * asked to check says "checked": false and lists nothing. *json is freed
 * with rootspan_string_free. */
ROOTSPAN_API rootspan_status rootspan_weights_digests(const rootspan_weights *weights, char **json,
                                                      rootspan_error **error);

/* How a load read its files (docs/cold-start.md), as one JSON document:
 * {"requested" ("mmap", "read", "direct" or "auto"), "strategy" (the one
 * used: never "auto"), "reason" (one sentence: why that one), "warmed_bytes"
 * (populate: mapped bytes read in), "reads": null when nothing was copied by
 * reads, else {"engine" ("io_uring" or "pread threads"), "engine_note" (why
 * not io_uring, or ""), "threads" (pread threads started: as many as the
 * load's bytes keep busy at a mebibyte each, at most 8 and at most
 * queue_depth, fewer where a thread limit stops some; 0 for io_uring),
 * "queue_depth", "max_bytes_in_flight", "requests",
 * "bytes", "direct_bytes", "bounced_bytes" (bytes copied out of aligned
 * bounce buffers: the unaligned heads and tails of direct reads),
 * "peak_requests_in_flight", "peak_bytes_in_flight", "fallbacks": [{"file",
 * "reason"}] (files read buffered although DIRECT was asked for)}}. *json is
 * freed with rootspan_string_free. */
ROOTSPAN_API rootspan_status rootspan_weights_read_report(const rootspan_weights *weights, char **json,
                                                          rootspan_error **error);

/* A digest manifest of a checkpoint (`rootspan hash`,
 * config/schemas/digests.schema.json, format_version 2), as one JSON
 * document: the SHA-256 and size of every file and the SHA-256 of each
 * shard's header (header_sha256), and with per_component non-zero the
 * SHA-256, dtype and shape of every component as each rank reads it
 * (options' schema_path, tensors,
 * revision, world_size, split_rules and split_convention; world_size 0: one
 * rank, each component whole; options->rank is ignored: every rank is
 * hashed). Files are hashed in parallel, one core each. options may be NULL.
 * *json is freed with rootspan_string_free. */
ROOTSPAN_API rootspan_status rootspan_checkpoint_hash(const char *path, const rootspan_load_options *options,
                                                      int32_t per_component, char **json, rootspan_error **error);

/* How rootspan_model_sign signs a model folder (`rootspan sign`,
 * docs/signed-models.md). Every pointer is borrowed for the call. */
typedef struct rootspan_sign_options {
  size_t struct_size;
  const char *private_key_path; /* PEM, ECDSA on P-256, P-384 or P-521, unencrypted; required */
  /* NULL: the bundle names the key by its hint, for a verifier holding the
   * public key. Set: the key's X.509 certificate (PEM), put in the bundle
   * first, then the certificate_chain_count certificates of
   * certificate_chain_paths (PEM files) above it, for a verifier trusting
   * the chain's root. */
  const char *certificate_path;
  const char *const *certificate_chain_paths;
  size_t certificate_chain_count;
  int32_t shards;                  /* non-zero: a digest per shard_size bytes of each file ("shards");
                                      0: one per file ("files") */
  uint64_t shard_size;             /* with shards; 0: 1,000,000,000, the reference signer's */
  int32_t allow_symlinks;          /* non-zero: links in the folder are followed and signed as the files
                                      they lead to (a Hugging Face cache snapshot); 0: a link is refused */
  const char *const *ignore_paths; /* ignore_path_count paths relative to the folder, left out with
                                      everything beneath them, beside .git, .gitattributes, .github and
                                      .gitignore, which are always left out */
  size_t ignore_path_count;
  const char *signature_path; /* where the caller will write the bundle: left out of the files when
                                 it lies in the folder; may be NULL */
  const char *revision;       /* for a Hugging Face cache repository folder: the snapshot to sign;
                                 NULL: the one refs/main names */
} rootspan_sign_options;
#define ROOTSPAN_SIGN_OPTIONS_LAST_FIELD revision
#define ROOTSPAN_SIGN_OPTIONS_STRUCT_SIZE ROOTSPAN_STRUCT_END(rootspan_sign_options, ROOTSPAN_SIGN_OPTIONS_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_sign_options, ROOTSPAN_SIGN_OPTIONS_STRUCT_SIZE);
#define ROOTSPAN_SIGN_OPTIONS_PUBLISHED_SIZES ROOTSPAN_SIGN_OPTIONS_STRUCT_SIZE

/* Signs the model folder `path` (or a Hugging Face cache repository's
 * snapshot): every file in it, at any depth, but the ignored ones, is hashed
 * (SHA-256, in parallel) and listed in an in-toto statement (OMS v1.0), which
 * is signed (DSSE, ECDSA) into a Sigstore bundle that `model_signing verify`
 * accepts, returned in *json (freed with rootspan_string_free). Errors:
 * ROOTSPAN_ERR_INVALID_ARGUMENT (NULLs, not a folder, a key or certificate
 * that is not one, a certificate of another key), ROOTSPAN_ERR_SIGNATURE_INVALID
 * (a link without allow_symlinks), ROOTSPAN_ERR_IO. */
ROOTSPAN_API rootspan_status rootspan_model_sign(const char *path, const rootspan_sign_options *options, char **json,
                                                 rootspan_error **error);

/* What a component is for in its schema. The numbering is pinned. */
typedef int32_t rootspan_component_role;
enum {
  ROOTSPAN_ROLE_VALUES = 0,
  ROOTSPAN_ROLE_PACKED_VALUES = 1,
  ROOTSPAN_ROLE_SCALES = 2,
  ROOTSPAN_ROLE_ZERO_POINTS = 3,
  ROOTSPAN_ROLE_INDICES = 4,
  ROOTSPAN_ROLE_PERMUTATION = 5,
  ROOTSPAN_ROLE_CODEBOOK = 6,
  ROOTSPAN_ROLE_METADATA = 7
};

/* How a component's bytes encode its values. The numbering is pinned. */
typedef int32_t rootspan_encoding_kind;
enum {
  ROOTSPAN_ENCODING_DENSE = 0,          /* elements of one dtype, row-major */
  ROOTSPAN_ENCODING_BLOCK_QUANTIZED = 1 /* opaque blocks of a named format */
};

/* One loaded component. Fields after zero_copy were added later: a caller
 * whose struct_size ends before one gets nothing written there. */
typedef struct rootspan_component_info {
  size_t struct_size;
  const char *id;               /* out: lives as long as the weights */
  rootspan_root *root;          /* out: owned by the weights; claim it, do not release it */
  uint64_t byte_length;         /* out */
  uint64_t segments;            /* out: source tensors, in order */
  int32_t zero_copy;            /* out: the root is the mapped file region itself */
  int32_t read_only;            /* out: non-zero when the root's memory must not be written (zero-copy file regions) */
  rootspan_dtype dtype;         /* out: the dense element type; ROOTSPAN_DTYPE_U8 for block-quantized bytes */
  rootspan_component_role role; /* out: ROOTSPAN_ROLE_* */
  rootspan_encoding_kind encoding; /* out: ROOTSPAN_ENCODING_DENSE or ROOTSPAN_ENCODING_BLOCK_QUANTIZED */
  const char *format_id;           /* out: block-quantized format id; NULL when dense; lives as long as the weights */
  uint64_t values_per_block;       /* out: logical values in one block; 0 when dense */
  uint64_t bytes_per_block;        /* out: bytes of one block; 0 when dense */
  uint32_t rank;                   /* out: entries in shape (0 for a scalar) */
  const uint64_t *shape;   /* out: rank dimensions (for block-quantized: the block grid, as the schema gives it);
                              NULL when rank is 0; lives as long as the weights */
  const char *source_name; /* out: the checkpoint's own name of the component's first source tensor (with the
                              default schema, the one tensor it is, even where that name is not a valid component
                              id); lives as long as the weights */
  /* Added in 0.4.0. */
  int32_t gguf_type; /* out: the ggml type id (GGML_TYPE_*: 0 F32, 1 F16, 8 Q8_0, ...) of the GGUF tensor the
                        component is (or is a slice of), as an engine's GGUF loader wants it beside the raw
                        blocks; -1 when its source is not one GGUF tensor */
  /* Added in 0.6.0: where the component's bytes lie in the checkpoint, for a
   * caller that reads or checks them on its own (a GPU direct-storage read,
   * an external checksum). */
  const char *source_file;   /* out: the file of its first segment, relative to the checkpoint's folder (a
                                shard's or split part's name); lives as long as the weights */
  uint64_t source_offset;    /* out: the absolute offset in source_file of the component's first byte */
  int32_t source_contiguous; /* out: non-zero when the component is exactly the byte_length bytes of source_file
                                from source_offset (one segment, not a column slice of rows); 0 when its bytes
                                come from several segments or strided rows */
} rootspan_component_info;
#define ROOTSPAN_COMPONENT_INFO_LAST_FIELD source_contiguous
#define ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_component_info, ROOTSPAN_COMPONENT_INFO_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_component_info, ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0 up to zero_copy; 0.2.0 up to
 * shape; 0.3.0 source_name; 0.4.0 gguf_type; 0.6.0 source_contiguous. */
#define ROOTSPAN_COMPONENT_INFO_PUBLISHED_SIZES                                                                 \
  ROOTSPAN_STRUCT_END(rootspan_component_info, zero_copy), ROOTSPAN_STRUCT_END(rootspan_component_info, shape), \
      ROOTSPAN_STRUCT_END(rootspan_component_info, source_name),                                                \
      ROOTSPAN_STRUCT_END(rootspan_component_info, gguf_type), ROOTSPAN_COMPONENT_INFO_STRUCT_SIZE

/* The bytes the load read from the checkpoint's files for its components
 * (mapped zero-copy ranges included): with slicing, this rank's share. */
ROOTSPAN_API rootspan_status rootspan_weights_bytes_read(const rootspan_weights *weights, uint64_t *bytes);

/* The provider the components live in; lives as long as the weights. */
ROOTSPAN_API const char *rootspan_weights_provider(const rootspan_weights *weights);
/* The components loaded, indexed 0 to count - 1 in the schema's order.
 * rootspan_weights_component fills *info up to its struct_size (set by the
 * caller); its strings and shape live as long as the weights, its root until
 * the component or the weights are released. INVALID_ARGUMENT for NULLs or a
 * struct_size below the oldest published size or inside a field; NOT_FOUND
 * past the count. */
ROOTSPAN_API rootspan_status rootspan_weights_component_count(const rootspan_weights *weights, size_t *count);
ROOTSPAN_API rootspan_status rootspan_weights_component(const rootspan_weights *weights, size_t index,
                                                        rootspan_component_info *info);
/* The index of the component with this id, or else of the one-tensor
 * component whose tensor has this name outside the id rule (such a tensor,
 * "a b", loads under the id "tensor.<n>" and is found by either).
 * ROOTSPAN_ERR_NOT_FOUND when no loaded component has it (a skipped one
 * included); ROOTSPAN_ERR_INVALID_ARGUMENT for NULLs. */
ROOTSPAN_API rootspan_status rootspan_weights_find(const rootspan_weights *weights, const char *id, size_t *index);
/* Added in 0.7.0. rootspan_weights_find for a caller that wants to say why a
 * lookup missed: on ROOTSPAN_ERR_NOT_FOUND, *error (when error is not NULL;
 * free it with rootspan_error_free) names the id and what is there instead:
 * the reason the component was skipped, or how many components were loaded
 * and the ids closest to it (at most three, each within a typo's distance),
 * or else the first three ids, or that nothing was loaded. With error NULL,
 * exactly rootspan_weights_find. Operation "weights_lookup".
 * ROOTSPAN_ERR_INVALID_ARGUMENT for NULL weights, id or index. */
ROOTSPAN_API rootspan_status rootspan_weights_lookup(const rootspan_weights *weights, const char *id, size_t *index,
                                                     rootspan_error **error);
/* The static name of a role ("values", "packed_values", ...); "" when out of range. */
ROOTSPAN_API const char *rootspan_role_name(rootspan_component_role role);
/* Optional components whose sources are missing: id and reason live as long
 * as the weights. */
ROOTSPAN_API rootspan_status rootspan_weights_skipped_count(const rootspan_weights *weights, size_t *count);
ROOTSPAN_API rootspan_status rootspan_weights_skipped(const rootspan_weights *weights, size_t index, const char **id,
                                                      const char **reason);
/* The SHA-256 of a component's bytes as they lie in provider memory, read back
 * through the provider: 64 lowercase hex digits and a NUL into hex[65]. The
 * root is claimed (shared) while it is hashed, so a release or free on
 * another thread meanwhile fails with ROOTSPAN_ERR_BUSY. A component released
 * already, or an index past the count: ROOTSPAN_ERR_INVALID_ARGUMENT. */
ROOTSPAN_API rootspan_status rootspan_weights_component_sha256(rootspan_weights *weights, size_t index, char hex[65],
                                                               rootspan_error **error);
/* Added in 0.6.0. The SHA-256 of a component's bytes in the checkpoint's
 * files (its payload's ranges, in the component's byte order), hashed by the
 * load once it had placed every component: 64 lowercase hex digits and a NUL into
 * hex[65]. Equal to rootspan_weights_component_sha256 when provider memory
 * holds what the files hold. Fails with ROOTSPAN_ERR_NOT_FOUND when the load
 * was not asked for source_digests; ROOTSPAN_ERR_INVALID_ARGUMENT for NULLs
 * or an index past the component count. Operation "weights_source_sha256". */
ROOTSPAN_API rootspan_status rootspan_weights_source_sha256(const rootspan_weights *weights, size_t index, char hex[65],
                                                            rootspan_error **error);
/* Releases the root of one component before the others, so that memory a
 * caller is done with goes back while it keeps the rest. Afterwards the
 * component's info reports root NULL; its id, layout and source stay
 * readable. Releasing a component already released does nothing. Fails with
 * ROOTSPAN_ERR_BUSY, releasing nothing, while the root is claimed;
 * ROOTSPAN_ERR_NOT_FOUND for an index past the component count. */
ROOTSPAN_API rootspan_status rootspan_weights_release_component(rootspan_weights *weights, size_t index,
                                                                rootspan_error **error);

/* Added in 0.7.0. One component's memory as rootspan_weights_map_components
 * hands it to the caller: what rootspan_claim_acquire and rootspan_map_* give
 * for the whole component, for a caller that makes an array or a tensor of
 * every component of a load (one call for all, not four for each). */
typedef struct rootspan_component_mapping {
  size_t struct_size;        /* in: a published size (the caller's sizeof) */
  rootspan_claim *claim;     /* out: a claim on the whole component, exclusive when the root is writable, shared
                                when it is read-only (zero-copy of a read-only file); the caller's: release it with
                                rootspan_claim_release after unmapping */
  rootspan_mapping *mapping; /* out: the whole component under that claim (map_write when writable, map_read
                                when read-only), as its root's element type (bytes for the sub-byte types); the
                                caller's: end it with rootspan_unmap */
  void *data;                /* out: rootspan_mapping_data(mapping); valid until rootspan_unmap */
  uint64_t byte_length;      /* out: rootspan_mapping_length(mapping): the component's byte_length */
  int32_t writable;          /* out: non-zero when mapped for writing */
} rootspan_component_mapping;
#define ROOTSPAN_COMPONENT_MAPPING_STRUCT_SIZE ROOTSPAN_STRUCT_END(rootspan_component_mapping, writable)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_component_mapping, ROOTSPAN_COMPONENT_MAPPING_STRUCT_SIZE);
#define ROOTSPAN_COMPONENT_MAPPING_PUBLISHED_SIZES ROOTSPAN_COMPONENT_MAPPING_STRUCT_SIZE

/* Added in 0.7.0. Claims and maps components [first, first + count), each
 * whole, into mappings[0 .. count - 1] (each struct_size set by the caller).
 * All or nothing: on failure no component is left claimed or mapped, and
 * *error (when error is not NULL) names the component and why (CONFLICT
 * while another claim holds it, INVALID_ARGUMENT once it was released, IO when
 * the file of a zero-copy component was truncated since the load: each file is
 * measured once per call, not once per component). Releasing
 * each is the caller's: rootspan_unmap, then rootspan_claim_release; the
 * component (rootspan_weights_release_component) or the weights
 * (rootspan_weights_free) can be released only after that. count 0 does
 * nothing. INVALID_ARGUMENT for NULL weights or mappings, weights freed
 * already, or a struct_size that is not a published size (naming the index);
 * NOT_FOUND for a range past the component count. Operation
 * "weights_map_components", or the claim_acquire or map_* of the component
 * that failed. */
ROOTSPAN_API rootspan_status rootspan_weights_map_components(rootspan_weights *weights, size_t first, size_t count,
                                                             rootspan_component_mapping *mappings,
                                                             rootspan_error **error);

/* Added in 0.7.0. Ends what rootspan_weights_map_components gave, many
 * components in one call: for each of mappings[0 .. count - 1] (each
 * struct_size set), rootspan_unmap of its mapping, then rootspan_claim_release
 * of its claim, each field set to NULL (and data) as it goes; a field NULL
 * already is skipped, so a second call does nothing. Stops at the first claim
 * that cannot be released (BUSY while another mapping, a child claim or a
 * device access of it lives), naming its index ("mappings[i]: ..."): that
 * entry's mapping is ended and its claim kept, the entries after it
 * untouched. INVALID_ARGUMENT, ending nothing, for NULL
 * mappings with a non-zero count or a struct_size that is not a published
 * size (naming the index). count 0 does nothing. Operation
 * "weights_unmap_components". The weights the components came from need not
 * be live: a mapping and its claim belong to the context. */
ROOTSPAN_API rootspan_status rootspan_weights_unmap_components(rootspan_component_mapping *mappings, size_t count,
                                                               rootspan_error **error);

/* Releases every component's root (those not released already) and frees the
 * weights. Fails with ROOTSPAN_ERR_BUSY, freeing nothing, while a component is
 * still claimed; ROOTSPAN_ERR_INVALID_ARGUMENT, touching nothing, for weights
 * freed already. NULL: nothing to do, ROOTSPAN_OK. */
ROOTSPAN_API rootspan_status rootspan_weights_free(rootspan_weights *weights, rootspan_error **error);

/* Validates a checkpoint without loading it and describes it as one JSON
 * document (docs/cli.md, `rootspan inspect`). *json is freed with
 * rootspan_string_free. */
ROOTSPAN_API rootspan_status rootspan_checkpoint_inspect(const char *path, char **json, rootspan_error **error);
/* Frees a string the library returned (every char **json above); NULL is
 * accepted and does nothing. */
ROOTSPAN_API void rootspan_string_free(char *string);

/* Validates a safetensors file held in memory, `length` bytes at `bytes`
 * (the length prefix, the header and the data section, by every rule a
 * checkpoint file on disk must meet), and describes it as one compact JSON
 * document: {"format": "safetensors", "bytes", "header_bytes", "metadata" (an
 * object, or null when the header has none), "tensors": [[name, dtype, shape,
 * offset, bytes], ...]}, one array per tensor in file order, offsets counted
 * from bytes[0].
 * `name` (may be NULL: "<memory>") names the buffer in error causes. Nothing
 * is copied or kept: the caller slices its own buffer with the offsets.
 * Errors: ROOTSPAN_ERR_INVALID_CHECKPOINT (operation "open_checkpoint");
 * ROOTSPAN_ERR_INVALID_ARGUMENT for a NULL json, or NULL bytes with a
 * non-zero length. *json is freed with rootspan_string_free. */
ROOTSPAN_API rootspan_status rootspan_safetensors_describe(const void *bytes, size_t length, const char *name,
                                                           char **json, rootspan_error **error);

/* The same for one safetensors file on disk, `path`, opened as a checkpoint
 * file is (once, non-blocking, a regular file; only its header is read): not
 * a folder, an index or a GGUF file. Offsets count from the file's first
 * byte. Errors: ROOTSPAN_ERR_INVALID_CHECKPOINT (a bad header, or a path that
 * is not a regular file) or ROOTSPAN_ERR_IO (operation "open_checkpoint")
 * naming the file; ROOTSPAN_ERR_INVALID_ARGUMENT for NULLs.
 * *json is freed with rootspan_string_free. */
ROOTSPAN_API rootspan_status rootspan_safetensors_describe_file(const char *path, char **json, rootspan_error **error);

/* Added in 0.7.0. One tensor of a safetensors header, as
 * rootspan_safetensors_each_tensor hands it to the caller's function. The
 * library fills it; every pointer in it is valid for that one call. */
typedef struct rootspan_safetensors_tensor {
  size_t struct_size;    /* the library's sizeof: a field that ends past it is not there (fields are only appended) */
  const char *name;      /* the header's name, UTF-8, NUL-terminated (a header whose name holds a NUL is refused) */
  const char *dtype;     /* the header's element type, as written there: "F32", "BF16", "F8_E4M3", ... */
  uint32_t rank;         /* entries in shape (0 for a scalar) */
  const uint64_t *shape; /* rank extents; NULL when rank is 0 */
  uint64_t offset;       /* where its bytes start, counted from the file's first byte */
  uint64_t byte_length;  /* its bytes (0 for an empty tensor) */
} rootspan_safetensors_tensor;
#define ROOTSPAN_SAFETENSORS_TENSOR_LAST_FIELD byte_length
#define ROOTSPAN_SAFETENSORS_TENSOR_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_safetensors_tensor, ROOTSPAN_SAFETENSORS_TENSOR_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_safetensors_tensor, ROOTSPAN_SAFETENSORS_TENSOR_STRUCT_SIZE);

/* Called by rootspan_safetensors_each_tensor for each tensor, in file order,
 * on the calling thread. A non-zero return stops the walk: the call then
 * fails with ROOTSPAN_ERR_CANCELLED. */
typedef int (*rootspan_safetensors_tensor_fn)(void *context, const rootspan_safetensors_tensor *tensor);

/* Added in 0.7.0. rootspan_safetensors_describe_file without the JSON, for a
 * caller that keeps a table of its own of a file's tensors (the Python
 * drop-in's safe_open, over files of thousands): the file is opened and
 * checked as that call does, and only then is each(context, tensor) called
 * for every tensor in file order. *metadata_json (when metadata_json is not
 * NULL) is the header's "__metadata__" as a JSON object, or "null" when it has
 * none, freed with rootspan_string_free. Errors: those of
 * rootspan_safetensors_describe_file, before each is called at all;
 * ROOTSPAN_ERR_CANCELLED when each returned non-zero, naming the tensor it
 * stopped at; ROOTSPAN_ERR_INVALID_ARGUMENT for a NULL path or each. On every
 * failure *metadata_json is NULL. Operation "open_checkpoint". */
ROOTSPAN_API rootspan_status rootspan_safetensors_each_tensor(const char *path, rootspan_safetensors_tensor_fn each,
                                                              void *context, char **metadata_json,
                                                              rootspan_error **error);

typedef struct rootspan_inspect_options {
  size_t struct_size;
  const char *schema_path; /* a component schema to validate against the checkpoint, or NULL; borrowed for the call */
  const char *revision;    /* for a Hugging Face cache repository folder: the branch, tag or commit whose snapshot to
                              inspect; borrowed for the call; NULL: the one refs/main names */
} rootspan_inspect_options;
#define ROOTSPAN_INSPECT_OPTIONS_LAST_FIELD revision
#define ROOTSPAN_INSPECT_OPTIONS_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_inspect_options, ROOTSPAN_INSPECT_OPTIONS_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_inspect_options, ROOTSPAN_INSPECT_OPTIONS_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0. */
#define ROOTSPAN_INSPECT_OPTIONS_PUBLISHED_SIZES ROOTSPAN_INSPECT_OPTIONS_STRUCT_SIZE

/* rootspan_checkpoint_inspect with options (NULL: none). With schema_path,
 * every component is resolved against the checkpoint without loading
 * anything, and the document gains "schema": {"path", "components": [{"id",
 * "role", "sources", "bytes", "segments"}] (those a load would load),
 * "skipped": [{"id", "reason"}]}; a schema that breaks a rule fails as a load
 * would (ROOTSPAN_ERR_INVALID_SCHEMA or ROOTSPAN_ERR_INVALID_PAYLOAD). */
ROOTSPAN_API rootspan_status rootspan_checkpoint_inspect_with_options(const char *path,
                                                                      const rootspan_inspect_options *options,
                                                                      char **json, rootspan_error **error);

#ifdef __cplusplus
}
#endif

#endif /* ROOTSPAN_WEIGHTS_H */
