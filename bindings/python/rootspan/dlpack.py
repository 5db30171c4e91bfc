"""DLPack export (DLPack 1.1, the array API's `__dlpack__` protocol).

The C structs of dlpack.h are declared here with ctypes. A producer hands a
consumer a PyCapsule named "dltensor" (a DLManagedTensor, for consumers that
predate DLPack 1.0) or "dltensor_versioned" (a DLManagedTensorVersioned, for
consumers that ask with max_version >= (1, 0)). A consumer that takes the
tensor renames the capsule ("used_..."), and later calls the tensor's deleter
exactly once, from any thread. A capsule that is never consumed calls the
deleter when it is garbage.

The rules rootspan keeps:
- read-only memory goes out only in a versioned capsule, whose flags carry
  READ_ONLY: a legacy consumer would import it as writable, so asking for a
  legacy capsule of read-only memory raises BufferError (use numpy(), which
  returns a read-only array, or copy=True for a writable copy);
- copy=True exports a fresh writable copy (flag IS_COPIED when versioned);
- while a consumer holds the memory, the lease it was given (a shared claim
  and a read mapping) stays live; the deleter drops it.
"""
import ctypes
import enum
import itertools
import threading
from ctypes import POINTER, Structure, c_char_p, c_int32, c_int64, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p

from . import _memory, dtypes

VERSION = (1, 1)  # the DLPack version this module writes
FLAG_READ_ONLY = 1 << 0  # the consumer must not write through the tensor
FLAG_IS_COPIED = 1 << 1  # the producer made a copy just for this export
LEGACY_NAME = b"dltensor"
VERSIONED_NAME = b"dltensor_versioned"


class DLDeviceType(enum.IntEnum):
    """Where a tensor's memory lives (the subset rootspan's providers can report)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12


class DLPackVersion(Structure):
    """The layout version of a DLManagedTensorVersioned: a new major changes the layout."""
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLDevice(Structure):
    """A device type (DLDeviceType, a C enum: 32 bits) and its ordinal."""
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    """An element type: type code, bits per lane, lanes (1 for scalars)."""
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    """The borrowed view: data, device, rank, type, shape and strides (in elements; NULL: compact row-major),
    and a byte offset added to data."""
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32), ("dtype", DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(Structure):
    """The pre-1.0 managed tensor: the view, the producer's context, and deleter(self)."""
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


class DLManagedTensorVersioned(Structure):
    """The 1.x managed tensor: version first, then context, deleter(self), flags, and the view last."""
    _fields_ = [("version", DLPackVersion), ("manager_ctx", c_void_p), ("deleter", c_void_p),
                ("flags", c_uint64), ("dl_tensor", DLTensor)]


DELETER = ctypes.CFUNCTYPE(None, c_void_p)  # void (*)(DLManagedTensor[Versioned] *)
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)  # void (*)(PyObject *)


class _Record:
    """What one export keeps alive until its deleter runs: the struct, shape, strides, and the memory."""
    __slots__ = ("managed", "shape", "strides", "keep")


_records = {}  # manager_ctx -> _Record
_records_lock = threading.Lock()
_keys = itertools.count(1)


def live_exports():
    """How many exported tensors have not been deleted yet (for tests and leak checks)."""
    with _records_lock:
        return len(_records)


def _release(key):
    with _records_lock:
        record = _records.pop(key, None)
    # Dropping the record drops its lease: the mapping and claim go here, on this thread.
    del record


def _legacy_deleter(address):
    try:
        _release(DLManagedTensor.from_address(address).manager_ctx)
    except Exception:  # a deleter cannot report; never let it unwind into C
        pass


def _versioned_deleter(address):
    try:
        _release(DLManagedTensorVersioned.from_address(address).manager_ctx)
    except Exception:
        pass


# private function objects: ctypes.pythonapi.X is shared, and others may retype it
_api = ctypes.pythonapi
_capsule_new = _api["PyCapsule_New"]
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [c_void_p, c_void_p, c_void_p]
_capsule_name = _api["PyCapsule_GetName"]
_capsule_name.restype = c_char_p
_capsule_name.argtypes = [c_void_p]
_capsule_pointer = _api["PyCapsule_GetPointer"]
_capsule_pointer.restype = c_void_p
_capsule_pointer.argtypes = [c_void_p, c_char_p]


def _capsule_destructor(capsule):
    """Runs when a capsule is garbage: an unconsumed one still has its own name and owns its tensor."""
    try:
        name = _capsule_name(capsule)
        if name == LEGACY_NAME:
            _legacy_deleter(_capsule_pointer(capsule, name))
        elif name == VERSIONED_NAME:
            _versioned_deleter(_capsule_pointer(capsule, name))
    except Exception:
        pass


def _immortal(obj):
    """Keeps obj alive to the very end: deleters and capsule names may be used during interpreter teardown."""
    _api["Py_IncRef"](ctypes.py_object(obj))
    return obj


_LEGACY_DELETER = _immortal(DELETER(_legacy_deleter))
_VERSIONED_DELETER = _immortal(DELETER(_versioned_deleter))
_DESTRUCTOR = _immortal(_CAPSULE_DESTRUCTOR(_capsule_destructor))
_LEGACY_NAME_C = _immortal(ctypes.create_string_buffer(LEGACY_NAME))
_VERSIONED_NAME_C = _immortal(ctypes.create_string_buffer(VERSIONED_NAME))


def _check_arguments(device, stream, max_version, dl_device, copy):
    if max_version is not None:
        if (not isinstance(max_version, tuple) or len(max_version) != 2 or
                not all(isinstance(v, int) and not isinstance(v, bool) for v in max_version)):
            raise TypeError(f"max_version must be None or a (major, minor) tuple of ints, got {max_version!r}")
    if copy is not None and not isinstance(copy, bool):
        raise TypeError(f"copy must be None, True or False, got {type(copy).__name__} {copy!r}")
    if dl_device is not None:
        try:
            wanted = (int(dl_device[0]), int(dl_device[1]))
            if len(dl_device) != 2:
                raise ValueError
        except (TypeError, ValueError, IndexError):
            raise TypeError(f"dl_device must be None or a (device type, device id) pair, got {dl_device!r}") from None
        if wanted != tuple(device):
            raise BufferError(f"dl_device {wanted} differs from the memory's device {tuple(device)}; rootspan "
                              "exports memory only where it lies")
    if device[0] == DLDeviceType.kDLCPU and stream is not None:
        raise ValueError(f"stream must be None for host (kDLCPU) memory, got {stream!r}")


def export(make_lease, dtype_name, shape, readonly, device, *, stream=None, max_version=None, dl_device=None,
           copy=None, what="this memory"):
    """A DLPack capsule over the memory make_lease() maps, following the rules above.

    make_lease() returns a lease of exactly the tensor's bytes; readonly says
    whether that memory must not be written; device is (DLDeviceType, id).
    """
    _check_arguments(device, stream, max_version, dl_device, copy)
    if device[0] != DLDeviceType.kDLCPU:
        raise BufferError(f"{what} is device memory ({DLDeviceType(device[0]).name}, device {device[1]}); "
                          "rootspan exports only host-accessible memory through DLPack")
    versioned = max_version is not None and max_version[0] >= 1
    code, bits = dtypes.dlpack_type(dtype_name)
    if code > 6 and (max_version is None or tuple(max_version) < (1, 1)):
        asked = "a legacy (pre-1.0) capsule" if max_version is None else f"max_version={tuple(max_version)}"
        raise BufferError(f"{dtype_name} has a DLPack type code ({code}) that only DLPack 1.1 consumers know, "
                          f"and the consumer asked for {asked}; ask with max_version=(1, 1), or take the bytes "
                          "(numpy(dtype=numpy.uint8); rootspan.torch and rootspan.safetensors hand torch any type)")
    if not versioned and readonly and copy is not True:
        raise BufferError(f"{what} is read-only, and a consumer asking for a legacy (pre-1.0) DLPack capsule "
                          "would import it as writable. Use .numpy() for a read-only array with no copy, or "
                          "__dlpack__(copy=True) for a writable copy (torch.utils.dlpack.from_dlpack takes "
                          "the capsule)")
    record = _Record()
    lease = make_lease()
    if copy:
        buffer = (ctypes.c_ubyte * max(lease.nbytes, 1))()
        # The library's protected copy: a file truncated under a mapping is an IoError, not a SIGBUS. The
        # lease may be one other exports share: dropping it (below) unmaps it only if nothing else holds it.
        _memory.copy_out(lease, 0, lease.nbytes, ctypes.addressof(buffer))
        record.keep, data, flags = buffer, ctypes.addressof(buffer), FLAG_IS_COPIED
    else:
        record.keep, data, flags = lease, lease.address, FLAG_READ_ONLY if readonly else 0
    del lease
    ndim = len(shape)
    record.shape = (c_int64 * ndim)(*shape)
    record.strides = None
    if bits % 8 == 0:  # sub-byte types are packed: no element strides, NULL means compact row-major
        strides, step = [0] * ndim, 1
        for i in range(ndim - 1, -1, -1):
            strides[i], step = step, step * shape[i]
        record.strides = (c_int64 * ndim)(*strides)
    if versioned:
        managed = DLManagedTensorVersioned()
        minor = VERSION[1] if max_version[0] > 1 else min(VERSION[1], max(max_version[1], 0))
        managed.version = DLPackVersion(VERSION[0], minor)
        managed.flags = flags
        deleter, name = _VERSIONED_DELETER, _VERSIONED_NAME_C
    else:
        managed = DLManagedTensor()
        deleter, name = _LEGACY_DELETER, _LEGACY_NAME_C
    tensor = managed.dl_tensor
    tensor.data = data
    tensor.device = DLDevice(int(device[0]), int(device[1]))
    tensor.ndim = ndim
    tensor.dtype = DLDataType(code, bits, 1)
    tensor.shape = ctypes.cast(record.shape, POINTER(c_int64))
    tensor.strides = ctypes.cast(record.strides, POINTER(c_int64)) if record.strides is not None else None
    tensor.byte_offset = 0
    key = next(_keys)
    managed.manager_ctx = key
    managed.deleter = ctypes.cast(deleter, c_void_p).value
    record.managed = managed
    with _records_lock:
        _records[key] = record
    try:
        return _capsule_new(ctypes.addressof(managed), ctypes.addressof(name), ctypes.cast(_DESTRUCTOR, c_void_p))
    except BaseException:
        _release(key)
        raise
