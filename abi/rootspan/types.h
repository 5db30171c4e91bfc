/* rootspan/types.h — types shared by the embedding API and the provider ABI.
 *
 * C99, no C++ types. Every enum crosses the ABI as a fixed-width integer: the
 * enumerators are constants, the typedef pins the width.
 */
#ifndef ROOTSPAN_TYPES_H
#define ROOTSPAN_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a function exported from librootspan.so. */
#if defined(__GNUC__)
#define ROOTSPAN_API __attribute__((visibility("default")))
#else
#define ROOTSPAN_API
#endif

/* The end of a struct's field: offsetof(field) + sizeof(field). A struct's
 * published size is the end of its last field, so trailing padding is never
 * part of what a reader reads (as in pjrt_c_api.h). */
#define ROOTSPAN_STRUCT_END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* Compile-time guard that `size` is the end of the struct's last field: a
 * field appended without moving the *_LAST_FIELD macro makes sizeof(type)
 * outgrow it by more than padding. */
#define ROOTSPAN_CONCAT_(a, b) a##b
#define ROOTSPAN_CONCAT(a, b) ROOTSPAN_CONCAT_(a, b)
#if defined(__cplusplus)
#define ROOTSPAN_GUARD_STRUCT_SIZE(type, size) \
  static_assert(sizeof(type) - (size) < 8, #type " has a field past its *_LAST_FIELD")
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define ROOTSPAN_GUARD_STRUCT_SIZE(type, size) \
  _Static_assert(sizeof(type) - (size) < 8, #type " has a field past its *_LAST_FIELD")
#else
#define ROOTSPAN_GUARD_STRUCT_SIZE(type, size) \
  typedef char ROOTSPAN_CONCAT(rootspan_struct_size_guard_, type)[(sizeof(type) - (size) < 8) ? 1 : -1]
#endif

/* Status of every call. ROOTSPAN_OK is zero; the numbers are pinned: new codes
 * are added at the end, never renumbered. */
typedef int32_t rootspan_status;
enum {
  ROOTSPAN_OK = 0,
  ROOTSPAN_ERR_INVALID_ARGUMENT = 1,    /* a NULL handle, a short struct_size, a bad enum */
  ROOTSPAN_ERR_RANGE_OVERFLOW = 2,      /* offset + length overflows 64 bits */
  ROOTSPAN_ERR_INVALID_ALIGNMENT = 3,   /* alignment is 0 or not a power of two */
  ROOTSPAN_ERR_MISALIGNED_OFFSET = 4,   /* offset is not a multiple of the alignment */
  ROOTSPAN_ERR_OFFSET_OVERFLOW = 5,     /* root offset + relative offset overflows */
  ROOTSPAN_ERR_OUTSIDE_ROOT_EXTENT = 6, /* a range leaves its root (or its parent claim) */
  ROOTSPAN_ERR_INVALID_KEY = 7,         /* an allocation key with a zero domain or local id */
  ROOTSPAN_ERR_DOMAIN_NOT_GRANTED = 8,  /* a provider reported a domain it was not granted */
  ROOTSPAN_ERR_DUPLICATE_IDENTITY = 9,  /* a live root already has this key */
  ROOTSPAN_ERR_ROOT_ID_EXHAUSTED = 10,  /* the process-wide root id counter is spent */
  ROOTSPAN_ERR_BUSY = 11,               /* claims, children or mappings are still live */
  ROOTSPAN_ERR_READ_ONLY = 12,          /* exclusive claim or write mapping on a read-only root */
  ROOTSPAN_ERR_CONFLICT = 13,           /* a claim overlaps a live exclusive claim */
  ROOTSPAN_ERR_DTYPE_MISMATCH = 14,     /* the element type cannot view this root or span */
  ROOTSPAN_ERR_LENGTH_MISMATCH = 15,    /* a provider mapping has the wrong length */
  ROOTSPAN_ERR_MISALIGNED = 16,         /* a pointer does not meet the alignment it needs */
  ROOTSPAN_ERR_UNSUPPORTED = 17,        /* the provider has no such capability */
  ROOTSPAN_ERR_INVALID_REQUEST = 18,    /* a device-access request does not fit its root */
  ROOTSPAN_ERR_PROVIDER_FAILURE = 19,   /* a provider hook failed or threw */
  ROOTSPAN_ERR_NOT_FOUND = 20,          /* no provider or device of that name or ordinal */
  ROOTSPAN_ERR_OUT_OF_MEMORY = 21,      /* the core itself could not allocate */
  ROOTSPAN_ERR_INVALID_MANIFEST = 22,   /* a manifest broke a loader policy (L1-L3, L6) */
  ROOTSPAN_ERR_PLUGIN_REJECTED = 23,    /* a plugin library failed a check before or at load (L4-L6) */
  ROOTSPAN_ERR_ABI_MISMATCH = 24,       /* a plugin's ABI major or minor is not acceptable */
  ROOTSPAN_ERR_NO_PROVIDER = 25,        /* no provider at all could be used (L7) */
  ROOTSPAN_ERR_IO = 26,                 /* a file could not be opened, read or mapped */
  ROOTSPAN_ERR_INVALID_CHECKPOINT = 27, /* a checkpoint file or index broke a rule of docs/weight-schema.md */
  ROOTSPAN_ERR_INVALID_SCHEMA = 28,     /* a component schema broke a rule of docs/weight-schema.md */
  ROOTSPAN_ERR_INVALID_PAYLOAD = 29,    /* a payload or segment broke a rule of docs/weight-schema.md */
  ROOTSPAN_ERR_CANCELLED = 30,          /* the caller's progress callback asked to stop */
  ROOTSPAN_ERR_DIGEST_MISMATCH = 31,    /* a file's or tensor's bytes are not the published ones (SHA-256) */
  ROOTSPAN_ERR_SIGNATURE_INVALID = 32   /* a model signature is malformed, is not signed by the key or chain given,
                                           or does not list the model's files */
};

/* Element types. The numbering is rootspan's own and pinned. NONE is the
 * element type of an untyped (byte) root. The complex types are named by their
 * component width, as in docs/concepts.md: C32 is two F32 (8 bytes), C64 two F64
 * (16 bytes). safetensors' "C64" (64 bits in all) is ROOTSPAN_DTYPE_C32. F4 and
 * F6 have no whole-byte size and cannot be mapped as elements. */
typedef int32_t rootspan_dtype;
enum {
  ROOTSPAN_DTYPE_NONE = 0,
  ROOTSPAN_DTYPE_BOOL = 1,
  ROOTSPAN_DTYPE_U8 = 2,
  ROOTSPAN_DTYPE_I8 = 3,
  ROOTSPAN_DTYPE_U16 = 4,
  ROOTSPAN_DTYPE_I16 = 5,
  ROOTSPAN_DTYPE_U32 = 6,
  ROOTSPAN_DTYPE_I32 = 7,
  ROOTSPAN_DTYPE_U64 = 8,
  ROOTSPAN_DTYPE_I64 = 9,
  ROOTSPAN_DTYPE_F16 = 10,
  ROOTSPAN_DTYPE_BF16 = 11,
  ROOTSPAN_DTYPE_F32 = 12,
  ROOTSPAN_DTYPE_F64 = 13,
  ROOTSPAN_DTYPE_C32 = 14,
  ROOTSPAN_DTYPE_C64 = 15,
  ROOTSPAN_DTYPE_F8_E5M2 = 16,
  ROOTSPAN_DTYPE_F8_E4M3 = 17,
  ROOTSPAN_DTYPE_F8_E8M0 = 18,
  ROOTSPAN_DTYPE_F4 = 19,
  ROOTSPAN_DTYPE_F6_E2M3 = 20,
  ROOTSPAN_DTYPE_F6_E3M2 = 21,
  ROOTSPAN_DTYPE_F8_E4M3FNUZ = 22, /* the "fnuz" 8-bit floats: no infinities, no negative zero (AMD's) */
  ROOTSPAN_DTYPE_F8_E5M2FNUZ = 23
};

/* Claim modes. */
typedef int32_t rootspan_claim_mode;
enum {
  ROOTSPAN_CLAIM_SHARED = 0,   /* read; coexists with other shared claims */
  ROOTSPAN_CLAIM_EXCLUSIVE = 1 /* read/write; conflicts with every overlapping claim */
};

/* Allocation key: a diagnostic identity, not an ownership proof. Both fields
 * are non-zero in every valid key. */
typedef struct rootspan_key {
  uint64_t domain; /* granted to one provider instance by the core */
  uint64_t local;  /* chosen by the provider, unique among its live roots */
} rootspan_key;

/* A strided device view of a claim, as a kernel launch wants it.
 * Strides and the element offset count elements, not bytes. */
typedef struct rootspan_device_access_request {
  size_t struct_size;      /* sizeof(rootspan_device_access_request) of the writer */
  rootspan_key key;        /* must equal the root's key */
  uint64_t byte_length;    /* must lie within the root's extent */
  uint64_t element_size;   /* bytes per element; non-zero */
  uint64_t element_offset; /* first element, relative to the claim */
  uint32_t rank;           /* entries in shape and strides */
  const uint64_t *shape;   /* rank entries; borrowed for the call */
  const int64_t *strides;  /* rank entries; borrowed for the call */
} rootspan_device_access_request;
#define ROOTSPAN_DEVICE_ACCESS_REQUEST_LAST_FIELD strides
#define ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_device_access_request, ROOTSPAN_DEVICE_ACCESS_REQUEST_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_device_access_request, ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0. */
#define ROOTSPAN_DEVICE_ACCESS_REQUEST_PUBLISHED_SIZES ROOTSPAN_DEVICE_ACCESS_REQUEST_STRUCT_SIZE

/* What a kernel launch needs, filled by the provider. */
typedef struct rootspan_device_access {
  size_t struct_size;      /* sizeof(rootspan_device_access) of the reader */
  void *device_ptr;        /* out: device address of element_offset; valid until released */
  uint32_t device_ordinal; /* out: the provider's device ordinal */
  void *stream;            /* out: the provider's stream or queue handle (cudaStream_t, hipStream_t) */
  void *provider_token;    /* out: opaque, handed back when the access is released */
} rootspan_device_access;
#define ROOTSPAN_DEVICE_ACCESS_LAST_FIELD provider_token
#define ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE \
  ROOTSPAN_STRUCT_END(rootspan_device_access, ROOTSPAN_DEVICE_ACCESS_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_device_access, ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0. */
#define ROOTSPAN_DEVICE_ACCESS_PUBLISHED_SIZES ROOTSPAN_DEVICE_ACCESS_STRUCT_SIZE

/* Memory kinds an allocation request may ask for. */
typedef int32_t rootspan_memory_kind;
enum {
  ROOTSPAN_MEMORY_HOST = 0,       /* ordinary host memory */
  ROOTSPAN_MEMORY_DEVICE = 1,     /* device memory, no host access */
  ROOTSPAN_MEMORY_HOST_PINNED = 2 /* page-locked host memory, host-mappable and device-accessible */
};

/* A device's description. Strings are NUL-terminated and truncated to fit. */
typedef struct rootspan_device_info {
  size_t struct_size;
  uint32_t ordinal;
  char name[128];
  char pci_bus_id[32]; /* "" when the device has none */
  uint64_t total_memory_bytes;
  uint64_t free_memory_bytes;
} rootspan_device_info;
#define ROOTSPAN_DEVICE_INFO_LAST_FIELD free_memory_bytes
#define ROOTSPAN_DEVICE_INFO_STRUCT_SIZE ROOTSPAN_STRUCT_END(rootspan_device_info, ROOTSPAN_DEVICE_INFO_LAST_FIELD)
ROOTSPAN_GUARD_STRUCT_SIZE(rootspan_device_info, ROOTSPAN_DEVICE_INFO_STRUCT_SIZE);
/* Published sizes (the end of each version's last field, oldest first): 0.1.0. */
#define ROOTSPAN_DEVICE_INFO_PUBLISHED_SIZES ROOTSPAN_DEVICE_INFO_STRUCT_SIZE

#ifdef __cplusplus
}
#endif

#endif /* ROOTSPAN_TYPES_H */
