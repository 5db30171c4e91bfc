"""A loaded component as a numpy array or a torch tensor, with no copy.

Both frameworks get the component's bytes (one lease every array and tensor
of the component shares, see rootspan/weights.py) as flat uint8 memory and
view it as the tensor's element type and shape. Going through bytes, rather
than handing the element type to the consumer, lets every type the format
has reach consumers that cannot import it by DLPack type code (bool and the
8-bit floats in torch 1.13, bfloat16 in numpy with ml_dtypes).
"""
import importlib

from rootspan import _memory, dlpack
from rootspan.safetensors import _dtypes
from rootspan.safetensors._errors import SafetensorError


class _Bytes:
    """A component's bytes, offered to a DLPack consumer as one flat uint8 tensor on the host."""

    def __init__(self, component):
        self._component = component

    def __dlpack_device__(self):
        return (dlpack.DLDeviceType.kDLCPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        c = self._component
        return dlpack.export(c._export_lease, "U8", (c.nbytes,), c.read_only, self.__dlpack_device__(),
                             stream=stream, max_version=max_version, dl_device=dl_device, copy=copy,
                             what=f"tensor {c.source_name!r}")


def numpy_dtype(code):
    """numpy's dtype for a format code; bfloat16 and the 8-bit floats through ml_dtypes when it is installed."""
    import numpy
    found = _dtypes.BY_CODE[code]
    if found.numpy is not None:
        return numpy.dtype(found.numpy)
    name = found.torch or found.names[0]
    try:
        ml_dtypes = importlib.import_module("ml_dtypes")
        return numpy.dtype(getattr(ml_dtypes, name))
    except (ImportError, AttributeError):
        raise TypeError(f"{code} has no numpy dtype: numpy has no {name} type, and ml_dtypes (which adds it) "
                        "is not installed; open the file with framework=\"pt\", or pip install ml_dtypes") from None


def to_numpy(component, code, shape):
    """A writable (copy-on-write) numpy array over the component's bytes (component None: an empty tensor)."""
    import numpy
    dtype = numpy_dtype(code)
    if component is None:
        return numpy.empty(shape, dtype=dtype)  # no bytes to share
    lease = component._export_lease()
    flat = _memory.ndarray(lease, 0, "|u1", (lease.nbytes,), component.read_only)
    return flat.view(dtype).reshape(shape)


_torch_dtypes = {}  # format code -> torch dtype, looked up once (every tensor asks)


def torch_dtype(code):
    """torch's dtype for a format code, or a SafetensorError naming the torch release that has it."""
    found = _torch_dtypes.get(code)
    if found is None:
        found = _torch_dtypes[code] = _torch_dtype(code)  # raises, caching nothing, for a type torch lacks
    return found


def _torch_dtype(code):
    import torch
    found = _dtypes.BY_CODE[code]
    if found.torch is None:
        raise SafetensorError(f"Dtype not understood: {code} (torch has no {found.names[0]} type)")
    dtype = getattr(torch, found.torch, None)
    if dtype is None:
        raise SafetensorError(f"{code} is torch.{found.torch}, which torch {torch.__version__} lacks (torch "
                              f"{found.torch_since} and later have it)")
    return dtype


def torch_storage_shape(code, shape):
    """The shape torch holds a tensor in: float4_e2m1fn_x2 packs two values a byte, halving the last dimension."""
    if code != "F4" or not shape:
        return list(shape)
    if shape[-1] % 2:
        raise SafetensorError(f"f4_x2 dtype requires that the last dim be divisible by 2 in torch: got {list(shape)}")
    return list(shape[:-1]) + [shape[-1] // 2]


def to_device(tensor, device, component=None):
    """tensor on device (a name, an index or a torch.device; the CPU: tensor itself). The move is torch's read
    of the memory, which nothing guards against a file truncated under it: for a zero-copy component (the
    file's pages), the library first checks that the file still holds all of it (an IoError if not)."""
    import torch
    if torch.device(device).type == "cpu":
        return tensor
    if component is not None and component.zero_copy:
        _memory.check_covered(component._export_lease())
    return tensor.to(device)


def to_torch(component, code, shape):
    """A writable (copy-on-write) CPU tensor over the component's bytes (component None: an empty tensor)."""
    import torch
    dtype = torch_dtype(code)
    storage_shape = torch_storage_shape(code, shape) if code == "F4" else shape
    if component is None:
        return torch.empty(storage_shape, dtype=dtype)  # no bytes to share
    if component.read_only:  # torch has no read-only tensors: a writable copy
        flat = torch.utils.dlpack.from_dlpack(_Bytes(component).__dlpack__(copy=True))
    elif _memory.numpy is not None:  # a numpy view torch keeps alive, and with it the lease: no copy, and
        lease = component._export_lease()  # far cheaper than a DLPack round trip per tensor
        flat = torch.from_numpy(_memory.ndarray(lease, 0, "|u1", (lease.nbytes,), False))
    else:
        flat = torch.utils.dlpack.from_dlpack(_Bytes(component))
    if dtype is not torch.uint8:
        flat = flat.view(dtype)
    return flat.view(storage_shape)
