"""The C ABI of librootspan as ctypes declarations: the structs of
rootspan/types.h, rootspan.h and weights.h field for field, their enum
constants, and the prototype of every function the package calls.

Handles (contexts, roots, claims, mappings, weights, errors) cross as
c_void_p. Every struct starts with struct_size; `sized()` sets it.
"""
import ctypes
import struct
from ctypes import (POINTER, Structure, c_char, c_char_p, c_int, c_int32, c_size_t, c_uint32, c_uint64,
                    c_void_p)

def c_text(value, what):
    """value (str) as the NUL-terminated UTF-8 a C call reads. A NUL inside would end the string there, so
    that "/etc/shadow\\0.safetensors" would reach C as "/etc/shadow": refused, naming where it lies."""
    at = value.find("\0")
    if at >= 0:
        raise ValueError(f"{what} contains a NUL byte at index {at}: C would read only {value[:at]!r}")
    return value.encode("utf-8")


def text(value):
    """A C string the library returned (bytes, or None for NULL) as str (None for NULL); bad UTF-8 replaced."""
    return value.decode("utf-8", "replace") if value is not None else None


def enum_name(names, value):
    """The name of an enum value from its table of names; a value the table does not know as its number."""
    return names[value] if 0 <= value < len(names) else str(value)


def c_path(value, what):
    """A path (str, bytes or os.PathLike) as the bytes a C call reads; a NUL inside is refused as in c_text."""
    import os
    encoded = os.fsencode(value)
    at = encoded.find(b"\0")
    if at >= 0:
        raise ValueError(f"{what} contains a NUL byte at index {at}: C would read only {encoded[:at]!r}")
    return encoded


# ---- status codes (types.h); pinned, new ones only ever appended ----------
# The names of the exception classes (errors.py), which must exist before the
# library is opened; messages take each name from rootspan_status_name
# (errors.status_name), and test_api checks that the two agree.
STATUS_NAMES = (
    "Ok", "InvalidArgument", "RangeOverflow", "InvalidAlignment", "MisalignedOffset", "OffsetOverflow",
    "OutsideRootExtent", "InvalidKey", "DomainNotGranted", "DuplicateIdentity", "RootIdExhausted", "Busy",
    "ReadOnly", "Conflict", "DTypeMismatch", "LengthMismatch", "Misaligned", "Unsupported", "InvalidRequest",
    "ProviderFailure", "NotFound", "OutOfMemory", "InvalidManifest", "PluginRejected", "AbiMismatch",
    "NoProvider", "Io", "InvalidCheckpoint", "InvalidSchema", "InvalidPayload", "Cancelled",
    "DigestMismatch", "SignatureInvalid")
OK = 0
ERR_INVALID_ARGUMENT = 1
ERR_BUSY = 11
ERR_NOT_FOUND = 20
ERR_CANCELLED = 30
ERR_DIGEST_MISMATCH = 31
ERR_SIGNATURE_INVALID = 32

# ---- element types (types.h), indexed by value -----------------------------
DTYPE_NAMES = ("NONE", "BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64", "F16", "BF16", "F32", "F64",
               "C32", "C64", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2",
               "F8_E4M3FNUZ", "F8_E5M2FNUZ")
DTYPE_NONE = 0
DTYPE_U8 = 2

CLAIM_SHARED = 0
CLAIM_EXCLUSIVE = 1

MEMORY_KINDS = {"host": 0, "device": 1, "host_pinned": 2}
ORIGINS = ("static", "manifest", "embedded")  # rootspan_provider_origin, indexed by value
ORIGIN_STATIC, ORIGIN_MANIFEST, ORIGIN_EMBEDDED = range(len(ORIGINS))
STATES = ("loaded", "skipped", "failed", "no device")  # rootspan_provider_state, indexed by value
STATE_LOADED, STATE_SKIPPED, STATE_FAILED, STATE_NO_DEVICE = range(len(STATES))
REQUESTED_KINDS = ("none", "range", "key_range", "root_key_range")

LOAD_STRATEGIES = {"mmap": 0, "read": 1, "direct": 2, "auto": 3}
SPLIT_CONVENTIONS = {"tensor_split": 0, "chunk": 1}
ENCODINGS = ("dense", "block_quantized")


class Key(Structure):
    _fields_ = [("domain", c_uint64), ("local", c_uint64)]


class DeviceInfo(Structure):
    _fields_ = [("struct_size", c_size_t), ("ordinal", c_uint32), ("name", c_char * 128),
                ("pci_bus_id", c_char * 32), ("total_memory_bytes", c_uint64), ("free_memory_bytes", c_uint64)]


class Requested(Structure):
    _fields_ = [("struct_size", c_size_t), ("kind", c_int32), ("root_id", c_uint64), ("key", Key),
                ("offset", c_uint64), ("length", c_uint64)]


class Span(Structure):
    _fields_ = [("struct_size", c_size_t), ("root_id", c_uint64), ("offset", c_uint64), ("length", c_uint64),
                ("alignment", c_uint64)]


class ContextOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("no_static_providers", c_int32), ("manifests", POINTER(c_char_p)),
                ("manifest_count", c_size_t), ("discover_manifests", c_int32)]


class ProviderReport(Structure):
    _fields_ = [("struct_size", c_size_t), ("name", c_char_p), ("kind", c_char_p), ("origin", c_int32),
                ("state", c_int32), ("library", c_char_p), ("manifest", c_char_p), ("abi_major", c_uint32),
                ("abi_minor", c_uint32), ("device_count", c_uint32), ("priority", c_int32), ("policy", c_char_p),
                ("reason", c_char_p), ("code", c_int32), ("note", c_char_p)]


class RootInfo(Structure):
    _fields_ = [("struct_size", c_size_t), ("root_id", c_uint64), ("key", Key), ("byte_offset", c_uint64),
                ("byte_length", c_uint64), ("alignment", c_uint64), ("dtype", c_int32), ("read_only", c_int32),
                ("host_accessible", c_int32), ("device", c_uint32), ("provider", c_char_p)]


class AllocateOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("provider", c_char_p), ("device", c_uint32), ("memory_kind", c_int32),
                ("byte_length", c_uint64), ("alignment", c_uint64), ("dtype", c_int32)]


# void (*deleter)(void *deleter_context, void *data)
HOST_DELETER = ctypes.CFUNCTYPE(None, c_void_p, c_void_p)


class HostImport(Structure):
    _fields_ = [("struct_size", c_size_t), ("provider", c_char_p), ("data", c_void_p), ("byte_length", c_uint64),
                ("alignment", c_uint64), ("dtype", c_int32), ("read_only", c_int32), ("deleter", HOST_DELETER),
                ("deleter_context", c_void_p)]


class Range(Structure):
    _fields_ = [("offset", c_uint64), ("length", c_uint64)]


class LoadProgress(Structure):
    _fields_ = [("struct_size", c_size_t), ("component", c_char_p), ("component_index", c_uint64),
                ("component_count", c_uint64), ("bytes_done", c_uint64), ("bytes_total", c_uint64)]


# int (*progress)(void *progress_context, const rootspan_load_progress *progress)
PROGRESS_FN = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(LoadProgress))


class SplitRule(Structure):
    _fields_ = [("struct_size", c_size_t), ("pattern", c_char_p), ("dimension", c_int32)]


class LoadOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("schema_path", c_char_p), ("provider", c_char_p), ("device", c_uint32),
                ("strategy", c_int32), ("progress", PROGRESS_FN), ("progress_context", c_void_p),
                # appended later: subsets, cache revisions, and one rank's slice of a tensor-parallel load
                ("tensors", POINTER(c_char_p)), ("tensor_count", c_size_t), ("revision", c_char_p),
                ("rank", c_uint32), ("world_size", c_uint32), ("split_rules", POINTER(SplitRule)),
                ("split_rule_count", c_size_t),
                # appended later: the pinned staging ring of uploads to device memory
                ("staging_buffer_bytes", c_uint64), ("staging_buffer_count", c_uint32),
                # appended later: writable zero-copy roots over a private copy-on-write mapping
                ("copy_on_write", c_int32),
                # appended in 0.4.0: how uneven splits are shared, and verified loads
                ("split_convention", c_int32), ("check_digests", c_int32), ("digests_path", c_char_p),
                # appended in 0.5.0: read the mapped bytes in before the load returns
                ("populate", c_int32),
                # appended in 0.6.0: each component's source bytes hashed as they are read
                ("source_digests", c_int32),
                # appended in 0.7.0: a model signature checked before anything is read, its files hashed as read
                ("signature_path", c_char_p), ("public_key_path", c_char_p),
                ("certificate_chain_paths", POINTER(c_char_p)), ("certificate_chain_count", c_size_t),
                ("ignore_unsigned_files", c_int32),
                # appended later in 0.7.0: mmap populated as auto populates it
                ("populate_when_cold", c_int32)]


class SignOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("private_key_path", c_char_p), ("certificate_path", c_char_p),
                ("certificate_chain_paths", POINTER(c_char_p)), ("certificate_chain_count", c_size_t),
                ("shards", c_int32), ("shard_size", c_uint64), ("allow_symlinks", c_int32),
                ("ignore_paths", POINTER(c_char_p)), ("ignore_path_count", c_size_t), ("signature_path", c_char_p),
                ("revision", c_char_p)]


class InspectOptions(Structure):
    _fields_ = [("struct_size", c_size_t), ("schema_path", c_char_p), ("revision", c_char_p)]


class ComponentInfo(Structure):
    _fields_ = [("struct_size", c_size_t), ("id", c_char_p), ("root", c_void_p), ("byte_length", c_uint64),
                ("segments", c_uint64), ("zero_copy", c_int32),
                # appended later (the embedder's fields): placement and layout
                ("read_only", c_int32), ("dtype", c_int32), ("role", c_int32), ("encoding", c_int32),
                ("format_id", c_char_p), ("values_per_block", c_uint64), ("bytes_per_block", c_uint64),
                ("rank", c_uint32), ("shape", POINTER(c_uint64)),
                # appended later: the checkpoint's name of the first source tensor
                ("source_name", c_char_p),
                # appended in 0.4.0: the ggml type id of a GGUF source tensor (-1: none)
                ("gguf_type", c_int32),
                # appended in 0.6.0: where the component's bytes lie in the checkpoint
                ("source_file", c_char_p), ("source_offset", c_uint64), ("source_contiguous", c_int32)]


class ComponentMapping(Structure):
    _fields_ = [("struct_size", c_size_t), ("claim", c_void_p), ("mapping", c_void_p), ("data", c_void_p),
                ("byte_length", c_uint64), ("writable", c_int32)]


# The same layout as a struct format, made from the fields above (each ctypes scalar type's struct code), for
# reading an array of thousands at once (struct.iter_unpack, a tuple apiece) instead of a ctypes field read
# apiece; native alignment, then the struct's tail padding.
COMPONENT_MAPPING_FORMAT = "@" + "".join(field_type._type_ for _, field_type in ComponentMapping._fields_)
COMPONENT_MAPPING_FORMAT += f"{ctypes.sizeof(ComponentMapping) - struct.calcsize(COMPONENT_MAPPING_FORMAT)}x"


def sized(struct_type):
    """A zeroed struct whose struct_size says it is this (full) version."""
    value = struct_type()
    value.struct_size = ctypes.sizeof(struct_type)
    return value


# One rootspan_component_mapping as bytes with only struct_size set: an array of n to fill is these bytes n
# times (ctypes' from_buffer_copy), not n field writes.
COMPONENT_MAPPING_IN = bytes(sized(ComponentMapping))


_P = c_void_p
# A pointer argument is written as the name of what it points to and "*": its ctypes pointer type is made when a
# function that takes it is first declared (_library), not at import (making one costs some 17 us, and a fresh
# process calls a third of these functions: issue 33).
_PP = _ERR = "c_void_p*"
_U64P = "c_uint64*"
_SIZEP = "c_size_t*"

PROTOTYPES = {
    "rootspan_version": (c_char_p, []),
    "rootspan_status_name": (c_char_p, [c_int32]),
    "rootspan_dtype_name": (c_char_p, [c_int32]),
    "rootspan_dtype_size": (c_uint64, [c_int32]),
    "rootspan_error_code": (c_int32, [_P]),
    "rootspan_error_operation": (c_char_p, [_P]),
    "rootspan_error_message": (c_char_p, [_P]),
    "rootspan_error_cause": (c_char_p, [_P]),
    "rootspan_error_policy": (c_char_p, [_P]),
    "rootspan_error_requested": (c_int32, [_P, "Requested*"]),
    "rootspan_error_resolution": (c_int, [_P, "Span*"]),
    "rootspan_error_values": (c_int, [_P, _U64P, _U64P]),
    "rootspan_error_free": (None, [_P]),
    "rootspan_context_create": (c_int32, ["ContextOptions*", _PP, _ERR]),
    "rootspan_context_destroy": (c_int32, [_P, _U64P]),
    "rootspan_provider_report_count": (c_int32, [_P, _SIZEP]),
    "rootspan_provider_report_get": (c_int32, [_P, c_size_t, "ProviderReport*"]),
    "rootspan_manifest_count": (c_int32, [_P, _SIZEP]),
    "rootspan_manifest_path": (c_char_p, [_P, c_size_t]),
    "rootspan_provider_device_info": (c_int32, [_P, c_char_p, c_uint32, "DeviceInfo*", _ERR]),
    "rootspan_root_allocate": (c_int32, [_P, "AllocateOptions*", _PP, _ERR]),
    "rootspan_root_import_host": (c_int32, [_P, "HostImport*", _PP, _ERR]),
    "rootspan_root_get_info": (c_int32, [_P, "RootInfo*"]),
    "rootspan_root_release": (c_int32, [_P, _ERR]),
    "rootspan_span_derive": (c_int32, [_P, c_uint64, c_uint64, "Span*", _ERR]),
    "rootspan_claim_acquire": (c_int32, [_P, c_uint64, c_uint64, c_int32, _PP, _ERR]),
    "rootspan_claim_split": (c_int32, [_P, "Range*", c_size_t, _PP, _ERR]),
    "rootspan_claim_get_span": (c_int32, [_P, "Span*", "c_int32*"]),
    "rootspan_claim_release": (c_int32, [_P, _ERR]),
    "rootspan_map_read": (c_int32, [_P, c_int32, c_uint64, c_uint64, _PP, _ERR]),
    "rootspan_map_write": (c_int32, [_P, c_int32, c_uint64, c_uint64, _PP, _ERR]),
    "rootspan_mapping_data": (c_void_p, [_P]),
    "rootspan_mapping_length": (c_uint64, [_P]),
    "rootspan_unmap": (c_int32, [_P]),
    "rootspan_copy_from_host": (c_int32, [_P, c_uint64, c_void_p, c_uint64, _ERR]),
    "rootspan_copy_to_host": (c_int32, [_P, c_uint64, c_void_p, c_uint64, _ERR]),
    "rootspan_weights_load": (c_int32, [_P, c_char_p, "LoadOptions*", _PP, _ERR]),
    "rootspan_weights_provider": (c_char_p, [_P]),
    "rootspan_weights_bytes_read": (c_int32, [_P, "c_uint64*"]),
    "rootspan_weights_component_count": (c_int32, [_P, _SIZEP]),
    "rootspan_weights_component": (c_int32, [_P, c_size_t, "ComponentInfo*"]),
    "rootspan_weights_find": (c_int32, [_P, c_char_p, _SIZEP]),
    "rootspan_weights_lookup": (c_int32, [_P, c_char_p, _SIZEP, _ERR]),
    "rootspan_role_name": (c_char_p, [c_int32]),
    "rootspan_weights_skipped_count": (c_int32, [_P, _SIZEP]),
    "rootspan_weights_skipped": (c_int32, [_P, c_size_t, "c_char_p*", "c_char_p*"]),
    "rootspan_weights_component_sha256": (c_int32, [_P, c_size_t, "c_char*", _ERR]),
    "rootspan_weights_source_sha256": (c_int32, [_P, c_size_t, "c_char*", _ERR]),
    "rootspan_weights_release_component": (c_int32, [_P, c_size_t, _ERR]),
    "rootspan_weights_map_components": (c_int32, [_P, c_size_t, c_size_t, "ComponentMapping*", _ERR]),
    "rootspan_weights_unmap_components": (c_int32, ["ComponentMapping*", c_size_t, _ERR]),
    "rootspan_weights_free": (c_int32, [_P, _ERR]),
    "rootspan_checkpoint_inspect": (c_int32, [c_char_p, "c_void_p*", _ERR]),
    "rootspan_checkpoint_inspect_with_options": (c_int32, [c_char_p, "InspectOptions*", "c_void_p*",
                                                           _ERR]),
    "rootspan_weights_digests": (c_int32, [_P, "c_void_p*", _ERR]),
    "rootspan_weights_read_report": (c_int32, [_P, "c_void_p*", _ERR]),
    "rootspan_checkpoint_hash": (c_int32, [c_char_p, "LoadOptions*", c_int32, "c_void_p*", _ERR]),
    "rootspan_checkpoint_read_plan": (c_int32, [c_char_p, "LoadOptions*", "c_void_p*", _ERR]),
    "rootspan_model_sign": (c_int32, [c_char_p, "SignOptions*", "c_void_p*", _ERR]),
    "rootspan_safetensors_describe": (c_int32, [c_void_p, c_size_t, c_char_p, "c_void_p*", _ERR]),
    "rootspan_safetensors_describe_file": (c_int32, [c_char_p, "c_void_p*", _ERR]),
    # each: the compiled module's function, called from C (rootspan._describe.safetensors_table)
    "rootspan_safetensors_each_tensor": (c_int32, [c_char_p, c_void_p, c_void_p, "c_char_p*", _ERR]),
    "rootspan_string_free": (None, [c_void_p]),
}


def prototype(name):
    """(restype, argtypes) of the library function `name` as ctypes declares them (test_api declares every one)."""
    restype, argtypes = PROTOTYPES[name]
    return restype, [POINTER(globals()[t[:-1]]) if isinstance(t, str) else t for t in argtypes]
