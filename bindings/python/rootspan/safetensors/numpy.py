"""rootspan.safetensors.numpy: numpy arrays to and from safetensors, as safetensors.numpy has them.

load_file and safe_open(..., framework="np") give zero-copy, writable
(copy-on-write) arrays over the loaded file; load(bytes) gives arrays over
copies of the given bytes. Arrays of one file handle share memory per
tensor; writing to one never changes the file.
"""
import sys
from typing import Dict, List, Optional, Union

import numpy as np

from rootspan.safetensors import _dtypes
from rootspan.safetensors._safetensors_rust import TensorSpec, deserialize, safe_open, serialize, serialize_file

# Format code -> numpy dtype, for the types numpy has (rootspan.dtypes' table).
_TYPES = {d.code: np.dtype(d.numpy) for d in _dtypes.TABLE if d.numpy is not None}


def _getdtype(dtype_str: str):
    return _TYPES[dtype_str]


def _is_little_endian(tensor: np.ndarray) -> bool:
    order = tensor.dtype.byteorder
    if order == "=":
        return sys.byteorder == "little"
    if order in ("|", "<"):
        return True
    if order == ">":
        return False
    raise ValueError(f"Unexpected byte order {order}")


def _flatten(tensor_dict: Dict[str, np.ndarray], keep_alive_buffer: List) -> Dict[str, TensorSpec]:
    """{name: TensorSpec} over each array's bytes in C order, little-endian (copies kept in keep_alive_buffer)."""
    flattened = {}
    for name, tensor in tensor_dict.items():
        if not isinstance(tensor, np.ndarray):
            tensor = np.asarray(tensor)
        if not _is_little_endian(tensor):
            tensor = tensor.astype(tensor.dtype.newbyteorder("<"))
        if not tensor.flags.c_contiguous:  # the reference writes such memory as it lies; here, in C order
            tensor = np.ascontiguousarray(tensor)
        keep_alive_buffer.append(tensor)
        flattened[name] = TensorSpec(dtype=tensor.dtype.name, shape=tensor.shape, data_ptr=tensor.ctypes.data,
                                     data_len=tensor.nbytes)
    return flattened


def save(tensor_dict: Dict[str, np.ndarray], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The bytes of a safetensors file holding tensor_dict, and metadata (text only) if given."""
    keep_alive = []
    return bytes(serialize(_flatten(tensor_dict, keep_alive), metadata=metadata))


def save_file(tensor_dict: Dict[str, np.ndarray], filename: Union[str, "os.PathLike"],
              metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes tensor_dict (and metadata) to filename as a safetensors file."""
    keep_alive = []
    serialize_file(_flatten(tensor_dict, keep_alive), filename, metadata=metadata)


def _view2np(safeview) -> Dict[str, np.ndarray]:
    return {name: np.frombuffer(v["data"], dtype=_getdtype(v["dtype"])).reshape(v["shape"]) for name, v in safeview}


def load(data: bytes) -> Dict[str, np.ndarray]:
    """The arrays of a safetensors file's bytes."""
    return _view2np(deserialize(data))


def load_file(filename: Union[str, "os.PathLike"], *, backend: str = "mmap") -> Dict[str, np.ndarray]:
    """Every array of a safetensors file, by name, in file order."""
    with safe_open(filename, framework="np", backend=backend) as f:
        return f.get_tensors()
