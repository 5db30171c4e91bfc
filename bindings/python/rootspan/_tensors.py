"""A loaded component as a numpy array or a torch tensor, with no copy: the one conversion rootspan.torch,
rootspan.vllm and the safetensors drop-in (rootspan.safetensors) use. Element types are rootspan's names
("F32", "C32"); numpy and torch are imported only when a conversion runs.

Both frameworks get the component's bytes (one lease every array and tensor
of the component shares, see rootspan/weights.py). A writable component of a
type every supported torch imports by DLPack code reaches torch in its own
type and shape through a capsule the compiled module makes (tensor_capsule);
the others go through a numpy array in a type numpy has (the type itself, the
signed integer of its width, or flat uint8 bytes) viewed as the element type
and shape, which lets every type the format has reach consumers that cannot
import it by DLPack type code (bool and the 8-bit floats in torch 1.13,
bfloat16 in numpy with ml_dtypes).
"""
import importlib

from . import _compiled, _memory, dtypes
from .root import host_device


class _Bytes:
    """A component's bytes, offered to a DLPack consumer as one flat uint8 tensor on the host."""

    def __init__(self, component):
        self._component = component

    def __dlpack_device__(self):
        return host_device()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from . import dlpack
        c = self._component
        return dlpack.export(c._export_lease, "U8", (c.nbytes,), c.read_only, self.__dlpack_device__(),
                             stream=stream, max_version=max_version, dl_device=dl_device, copy=copy,
                             what=f"tensor {c.source_name!r}")


def numpy_dtype(name):
    """numpy's dtype for an element type; bfloat16 and the 8-bit floats through ml_dtypes when it is installed."""
    import numpy
    typestr = dtypes.numpy_typestr(name)
    if typestr is not None:
        return numpy.dtype(typestr)
    framework_name = dtypes.framework_name(name)
    try:
        ml_dtypes = importlib.import_module("ml_dtypes")
        return numpy.dtype(getattr(ml_dtypes, framework_name))
    except (ImportError, AttributeError):
        raise TypeError(f"{name} has no numpy dtype: numpy has no {framework_name} type, and ml_dtypes (which adds "
                        "it) is not installed; open the file with framework=\"pt\", or pip install ml_dtypes") from None


def to_numpy(component, name, shape):
    """A writable (copy-on-write) numpy array over the component's bytes (component None: an empty tensor)."""
    import numpy
    if component is None:
        return numpy.empty(shape, dtype=numpy_dtype(name))  # no bytes to share
    lease = component._export_lease()
    return shaped(_memory.ndarray(lease, 0, "|u1", (lease.nbytes,), component.read_only), name, shape)


def shaped(flat, name, shape):
    """A tensor's flat bytes (a uint8 numpy array) as its numpy array of element type name and shape."""
    return flat.view(numpy_dtype(name)).reshape(shape)


_torch_dtypes = {}  # element type -> torch dtype, looked up once (every tensor asks)

# numpy types torch.from_numpy takes in every torch release this package supports (1.13 lacks the unsigned
# ones past uint8): an element type whose numpy type is one of them arrives as it is; any other whole-byte
# type arrives as the signed integer of its width and is viewed as its type (one step more).
_FROM_NUMPY = {"|b1", "|u1", "|i1", "<i2", "<i4", "<i8", "<f2", "<f4", "<f8", "<c8", "<c16"}
_SAME_WIDTH = {8: "|i1", 16: "<i2", 32: "<i4", 64: "<i8"}
_numpy_views = {}  # element type -> (typestr, view to the torch type), or None for the bytes-and-views way


def _numpy_view(name):
    """How a tensor of this element type is made from a numpy array over its bytes: (typestr, whether torch
    views it as the type after), or None where only flat bytes viewed twice will do (the sub-byte types, and
    128-bit ones numpy's integers do not match)."""
    if name not in _numpy_views:
        typestr, width = dtypes.numpy_typestr(name), dtypes.bits(name)
        if typestr in _FROM_NUMPY:
            _numpy_views[name] = (typestr, False)
        else:
            _numpy_views[name] = (_SAME_WIDTH[width], True) if width in _SAME_WIDTH else None
    return _numpy_views[name]


def torch_dtype(name, error=TypeError):
    """torch's dtype for an element type, or `error` naming the torch release that has it."""
    found = _torch_dtypes.get(name)
    if found is None:
        found = _torch_dtypes[name] = _torch_dtype(name, error)  # raises, caching nothing, for a type torch lacks
    return found


def _torch_dtype(name, error):
    import torch
    attribute, since = dtypes.framework_name(name), dtypes.torch_release(name)
    if since is None:
        raise error(f"Dtype not understood: {name} (torch has no {attribute} type)")
    dtype = getattr(torch, attribute, None)
    if dtype is None:
        raise error(f"{name} is torch.{attribute}, which torch {torch.__version__} lacks (torch {since} and later "
                    f"have it)")
    return dtype


def torch_storage_shape(name, shape, error=TypeError):
    """The shape torch holds a tensor in: float4_e2m1fn_x2 packs two values a byte, halving the last dimension."""
    if name != "F4" or not shape:
        return list(shape)
    if shape[-1] % 2:
        raise error(f"f4_x2 dtype requires that the last dim be divisible by 2 in torch: got {list(shape)}")
    return list(shape[:-1]) + [shape[-1] // 2]


def to_device(tensor, device, component=None):
    """tensor on device (a name, an index or a torch.device; the CPU: tensor itself). The move is torch's read
    of the memory, which nothing guards against a file truncated under it: for a zero-copy component (the
    file's pages), the library first checks that the file still holds all of it (an IoError if not)."""
    if device == "cpu" or getattr(device, "type", None) == "cpu":  # the usual answers, without a torch.device
        return tensor                                                  # made for each of thousands of tensors
    import torch
    if torch.device(device).type == "cpu":
        return tensor
    if component is not None and component.zero_copy:
        _memory.check_covered(component._export_lease())
    return tensor.to(device)


# Element types torch takes in a legacy DLPack capsule in every release this package supports (1.13 on), with
# their DLPack (type code, bits): the signed integers, uint8, the IEEE floats and bfloat16. The others reach
# torch through numpy.
_CAPSULE_TYPES = {name: dtypes.dlpack_type(name) for name in ("I8", "I16", "I32", "I64", "U8", "F16", "F32", "F64",
                                                              "BF16")}
_from_dlpack = None  # torch's converter of a capsule (_capsule_converter), looked up once


def _capsule_converter():
    """torch's converter of a DLPack capsule: torch._C._from_dlpack, which torch.utils.dlpack.from_dlpack calls
    for a capsule after asking whether it is an array with __dlpack__ (some 0.3 µs of a small tensor's 1.0 through
    from_dlpack; issue 33); from_dlpack itself in a torch without it."""
    import torch.utils.dlpack
    return getattr(torch._C, "_from_dlpack", None) or torch.utils.dlpack.from_dlpack


def _capsule_tensor(component, name, shape, lease):
    """The tensor over a writable component's bytes through a DLPack capsule made in C (rootspan._describe's
    tensor_capsule, issue 33: half the numpy way's cost), or None where that module or the type is not
    there for it. lease: the component's live lease where the caller holds it already (map_leases), or None."""
    global _from_dlpack
    code_bits = _CAPSULE_TYPES.get(name)
    make = getattr(_compiled.describe(), "tensor_capsule", None) if code_bits is not None else None
    if make is None:
        return None
    if _from_dlpack is None:
        _from_dlpack = _capsule_converter()
    if lease is None or lease.mapping is None:
        lease = component._export_lease()
    return _from_dlpack(make(lease, lease.address, lease.nbytes, tuple(shape), *code_bits))


def to_torch(component, name, shape, error=TypeError, lease=None):
    """A writable (copy-on-write) CPU tensor over the component's bytes (component None: an empty tensor).
    error: the exception for a type this torch lacks; lease: the component's lease where the caller holds it
    (map_leases), else None."""
    if component is not None and not component.read_only:
        tensor = _capsule_tensor(component, name, shape, lease)
        if tensor is not None:
            return tensor
        way = (_view_ways.get(name) or _view_way(name, error)) if _memory.numpy is not None else None
        if way is not None:
            # no capsule for it (another type, or no compiled module): a numpy view torch keeps alive, and with
            # it the lease (no copy, and far cheaper than a DLPack round trip), in the tensor's own type and shape
            numpy_dtype, view_as, from_numpy = way
            tensor = from_numpy(_memory.ndarray(component._export_lease(), 0, numpy_dtype.str, shape, False))
            return tensor if view_as is None else tensor.view(view_as)
    import torch
    import torch.utils.dlpack
    dtype = torch_dtype(name, error)
    storage_shape = torch_storage_shape(name, shape, error) if name == "F4" else shape
    if component is None:
        return torch.empty(storage_shape, dtype=dtype)  # no bytes to share
    if component.read_only:  # torch has no read-only tensors: a writable copy
        flat = torch.utils.dlpack.from_dlpack(_Bytes(component).__dlpack__(copy=True))
    elif _memory.numpy is not None:  # a type numpy has no view of (the sub-byte ones): flat bytes, viewed twice
        lease = component._export_lease()
        flat = torch.from_numpy(_memory.ndarray(lease, 0, "|u1", (lease.nbytes,), False))
    else:
        flat = torch.utils.dlpack.from_dlpack(_Bytes(component))
    return _typed(flat, dtype, storage_shape)


def _typed(flat, dtype, storage_shape):
    """A flat uint8 tensor viewed as the element type and shape."""
    import torch
    if dtype is not torch.uint8:
        flat = flat.view(dtype)
    return flat.view(storage_shape)


_view_ways = {}  # element type -> (numpy dtype, torch dtype to view as after or None, torch.from_numpy), or None


def _view_way(name, error):
    """How to_torch and tensor_of_view make a tensor of this element type, worked out once per type (every
    tensor asks):
    (numpy dtype the bytes are viewed as, torch dtype the tensor is viewed as after, or None when torch takes
    the numpy type as it is, and torch.from_numpy, looked up once), or None where only flat bytes viewed twice
    will do. Raises `error`, caching nothing, for a type this torch lacks."""
    if name in _view_ways:
        return _view_ways[name]
    import torch
    dtype = torch_dtype(name, error)
    how = _numpy_view(name) if name != "F4" else None
    way = (_memory.numpy.dtype(how[0]), dtype if how[1] else None, torch.from_numpy) if how else None
    _view_ways[name] = way
    return way


def tensor_of_view(view, component, error=TypeError):
    """tensor_of for a component whose bytes are `view`, a writable uint8 numpy array (from
    weights.map_file_views, which holds the component's memory for as long as the view lives)."""
    way = _view_ways.get(component.dtype) or _view_way(component.dtype, error)
    if way is not None and component.encoding != "block_quantized":
        # the tensor's own type and shape in numpy first, in one array over the view's bytes (exactly the
        # component's: map_file_views slices each by its byte length): the fewest steps (thousands of tensors)
        numpy_dtype, view_as, from_numpy = way
        tensor = from_numpy(_memory.numpy.ndarray(component.shape, numpy_dtype, view))
        return tensor if view_as is None else tensor.view(view_as)
    name, shape = component.dtype, component.shape
    if component.encoding == "block_quantized":
        shape = shape + (component.bytes_per_block,)
    import torch
    return _typed(torch.from_numpy(view), torch_dtype(name, error), torch_storage_shape(name, shape, error))


def empty_tensor(entry, error=TypeError):
    """The torch tensor of an empty tensor of a checkpoint's description (rootspan.inspect's {"dtype", "shape"}):
    no bytes, so no component."""
    return to_torch(None, dtypes.from_format_code(entry["dtype"]), entry["shape"], error)


def tensor_of(component, error=TypeError, lease=None):
    """A CPU tensor over a loaded component's memory (to_torch): a block-quantized component is uint8 of shape
    grid + (bytes_per_block,). lease: the component's lease where the caller holds it (map_leases)."""
    shape = component.shape
    if component.encoding == "block_quantized":
        shape = shape + (component.bytes_per_block,)
    return to_torch(component, component.dtype, shape, error, lease)
