"""rootspan.safetensors.torch: torch tensors to and from safetensors, as safetensors.torch has them.

load_file and safe_open(..., framework="pt") give zero-copy, writable
(copy-on-write) CPU tensors over the loaded file (moved to `device` when it
is not the CPU); they outlive the handle they came from. Saving refuses, as
the reference does, tensors that share memory (save_model drops the
duplicates and records them in the metadata), sparse tensors and
non-contiguous ones.
"""
import ctypes
import os
from collections import defaultdict
from typing import Dict, List, Optional, Set, Tuple, Union

import torch

from rootspan import _tensors
from rootspan.safetensors import _dtypes
from rootspan.safetensors._errors import SafetensorError
from rootspan.safetensors._safetensors_rust import TensorSpec, deserialize, safe_open, serialize, serialize_file

_float8_e4m3fn = getattr(torch, "float8_e4m3fn", None)
_float8_e4m3fnuz = getattr(torch, "float8_e4m3fnuz", None)
_float8_e5m2 = getattr(torch, "float8_e5m2", None)
_float8_e5m2fnuz = getattr(torch, "float8_e5m2fnuz", None)
_float8_e8m0 = getattr(torch, "float8_e8m0fnu", None)
_float4_e2m1_x2 = getattr(torch, "float4_e2m1fn_x2", None)

# Format code -> torch dtype, and torch dtype -> bytes per element, for the types this torch has.
_TYPES = {d.code: getattr(torch, d.torch) for d in _dtypes.TABLE if d.torch and hasattr(torch, d.torch)}
_SIZE = {dtype: max(_dtypes.BY_CODE[code].bits // 8, 1) for code, dtype in _TYPES.items()}


def _getdtype(dtype_str: str) -> torch.dtype:
    return _TYPES[dtype_str]


# ---- shared memory ----------------------------------------------------------------------------

def storage_ptr(tensor: torch.Tensor) -> int:
    """The address of the storage the tensor lies in (0 for a meta tensor)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except Exception:
        try:  # torch before 2.0
            return tensor.storage().data_ptr()
        except NotImplementedError:
            return 0


def storage_size(tensor: torch.Tensor) -> int:
    """The bytes of the storage the tensor lies in."""
    try:
        return tensor.untyped_storage().nbytes()
    except AttributeError:  # torch before 2.0
        try:
            return tensor.storage().size() * _SIZE[tensor.dtype]
        except NotImplementedError:
            return tensor.nelement() * _SIZE[tensor.dtype]


def _end_ptr(tensor: torch.Tensor) -> int:
    """One past the address of the tensor's last element."""
    if tensor.nelement():
        return tensor.view(-1)[-1].data_ptr() + _SIZE[tensor.dtype]
    return tensor.data_ptr()


def _filter_shared_not_shared(tensors: List[Set[str]], state_dict: Dict[str, torch.Tensor]) -> List[Set[str]]:
    """Splits each group of names on one storage into the runs whose memory really overlaps."""
    out = []
    for group in tensors:
        if len(group) < 2:
            out.append(group)
            continue
        spans = sorted((state_dict[name].data_ptr(), _end_ptr(state_dict[name]), name) for name in group)
        run, run_stop = {spans[0][2]}, spans[0][1]
        for start, stop, name in spans[1:]:
            if start >= run_stop:
                out.append(run)
                run = set()
            run.add(name)
            run_stop = stop
        out.append(run)
    return out


def _find_shared_tensors(state_dict: Dict[str, torch.Tensor]) -> List[Set[str]]:
    """The groups of names whose tensors share memory (a name alone is a group of one); meta tensors left out."""
    groups = defaultdict(set)
    for name, tensor in state_dict.items():
        if tensor.device != torch.device("meta") and storage_ptr(tensor) != 0 and storage_size(tensor) != 0:
            groups[(tensor.device, storage_ptr(tensor), storage_size(tensor))].add(name)
    return _filter_shared_not_shared(list(sorted(groups.values())), state_dict)


def _is_complete(tensor: torch.Tensor) -> bool:
    """Whether the tensor covers its whole storage."""
    return tensor.data_ptr() == storage_ptr(tensor) and tensor.nelement() * _SIZE[tensor.dtype] == storage_size(tensor)


def _remove_duplicate_names(state_dict: Dict[str, torch.Tensor], *, preferred_names: Optional[List[str]] = None,
                            discard_names: Optional[List[str]] = None) -> Dict[str, List[str]]:
    """{name kept: [names dropped]} for each group of tensors sharing memory: the kept one covers the storage."""
    preferred = set(preferred_names or [])
    discard = set(discard_names or [])
    dropped = defaultdict(list)
    for group in _find_shared_tensors(state_dict):
        complete = {name for name in group if _is_complete(state_dict[name])}
        if not complete:
            raise RuntimeError(
                "Error while trying to find names to remove to save state dict, but found no suitable name to keep "
                f"for saving amongst: {group}. None is covering the entire storage.Refusing to save/load the model "
                "since you could be storing much more memory than needed. Please refer to "
                "https://huggingface.co/docs/safetensors/torch_shared_tensors for more information. Or open an "
                "issue.")
        keep = sorted(complete)[0]
        if complete - discard:
            keep = sorted(complete - discard)[0]
        if preferred & complete:
            keep = sorted(preferred & complete)[0]
        for name in sorted(group):
            if name != keep:
                dropped[keep].append(name)
    return dropped


# ---- saving -----------------------------------------------------------------------------------

def _evaluate_tensors_for_save(tensors: Dict[str, torch.Tensor]) -> None:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    sparse = []
    for name, tensor in tensors.items():
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected torch.Tensor but received {type(tensor)}")
        if tensor.layout != torch.strided:
            sparse.append(name)
    if sparse:
        raise ValueError(
            f"You are trying to save a sparse tensors: `{sparse}` which this library does not support. You can make "
            "it a dense tensor before saving with `.to_dense()` but be aware this might make a much larger file "
            "than needed.")
    failing = [names for names in _find_shared_tensors(tensors) if len(names) > 1]
    if failing:
        raise RuntimeError(
            f"""
            Some tensors share memory, this will lead to duplicate memory on disk and potential differences when loading them again: {failing}.
            A potential way to correctly save your model is to use `save_model`.
            More information at https://huggingface.co/docs/safetensors/torch_shared_tensors
            """)


def _to_ndarray(tensor: torch.Tensor):
    """(a numpy uint8 view of the tensor's bytes on the CPU, the CPU tensor it views)."""
    import numpy as np
    if tensor.device.type != "cpu":
        tensor = tensor.to("cpu")
    nbytes = tensor.nelement() * _SIZE[tensor.dtype]
    if tensor.data_ptr() == 0 or nbytes == 0:
        return np.empty(0, dtype=np.uint8), tensor
    memory = (ctypes.c_ubyte * nbytes).from_address(tensor.data_ptr())
    return np.frombuffer(memory, dtype=np.uint8), tensor


def _flatten_as_ptr(tensors: Dict[str, torch.Tensor], keep_alive_buffer: List) -> Dict[str, TensorSpec]:
    """{name: TensorSpec} over each tensor's bytes on the CPU (the CPU copies kept in keep_alive_buffer)."""
    _evaluate_tensors_for_save(tensors)
    flattened = {}
    for name, tensor in tensors.items():
        if not tensor.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. It either means you "
                "are trying to save tensors which are reference of each other in which case it's recommended to save "
                "only the full tensors, and reslice at load time, or simply call `.contiguous()` on your tensor to "
                "pack it before saving.")
        data, cpu = _to_ndarray(tensor)
        keep_alive_buffer.append((data, cpu))
        flattened[name] = TensorSpec(dtype=str(tensor.dtype).split(".")[-1], shape=tensor.shape,
                                     data_ptr=data.ctypes.data, data_len=data.nbytes)
    return flattened


def save(tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The bytes of a safetensors file holding tensors, and metadata (text only) if given."""
    keep_alive = []
    return bytes(serialize(_flatten_as_ptr(tensors, keep_alive), metadata=metadata))


def save_file(tensors: Dict[str, torch.Tensor], filename: Union[str, os.PathLike],
              metadata: Optional[Dict[str, str]] = None) -> None:
    """Writes tensors (and metadata) to filename as a safetensors file."""
    keep_alive = []
    serialize_file(_flatten_as_ptr(tensors, keep_alive), filename, metadata=metadata)


def save_model(model: torch.nn.Module, filename: str, metadata: Optional[Dict[str, str]] = None,
               force_contiguous: bool = True):
    """Saves a model's state dict; tensors sharing memory are saved once, each dropped name recorded in the
    metadata as {dropped: kept}, so that load_model restores them."""
    state_dict = model.state_dict()
    for kept, dropped in _remove_duplicate_names(state_dict).items():
        for name in dropped:
            if metadata is None:
                metadata = {}
            metadata.setdefault(name, kept)
            del state_dict[name]
    if force_contiguous:
        state_dict = {name: tensor.contiguous() for name, tensor in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata=metadata)
    except ValueError as e:
        raise ValueError(f"{e} Or use save_model(..., force_contiguous=True), read the docs for potential caveats.") \
            from e


def load_model(model: torch.nn.Module, filename: Union[str, os.PathLike], strict: bool = True,
               device: Union[str, int] = "cpu", *, backend: str = "mmap", mmap: bool = True
               ) -> Tuple[Set[str], List[str]]:
    """Loads a file saved by save_model into model; returns (missing, unexpected) names. strict: raise for any."""
    state_dict = load_file(filename, device=device, backend=backend, mmap=mmap)
    shared = _remove_duplicate_names(model.state_dict(), preferred_names=state_dict.keys())
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing = set(missing)
    for dropped in shared.values():
        for name in dropped:
            if name in missing:
                missing.remove(name)
            else:
                unexpected.append(name)
    if strict and (missing or unexpected):
        message = f"Error(s) in loading state_dict for {model.__class__.__name__}:"
        if missing:
            message += "\n    Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(missing))
        if unexpected:
            message += "\n    Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in sorted(unexpected))
        raise RuntimeError(message)
    return missing, unexpected


# ---- loading ----------------------------------------------------------------------------------

def _view2torch(safeview) -> Dict[str, torch.Tensor]:
    result = {}
    for name, v in safeview:
        dtype = _getdtype(v["dtype"])
        shape = _tensors.torch_storage_shape(_dtypes.BY_CODE[v["dtype"]].rootspan, v["shape"], SafetensorError)
        if len(v["data"]) == 0:
            result[name] = torch.empty(shape, dtype=dtype)
        else:
            result[name] = torch.frombuffer(v["data"], dtype=torch.uint8).view(dtype).reshape(shape)
    return result


def load(data: bytes) -> Dict[str, torch.Tensor]:
    """The tensors of a safetensors file's bytes (over a copy of them)."""
    return _view2torch(deserialize(data))


def load_file(filename: Union[str, os.PathLike], device: Union[str, int] = "cpu", *, backend: str = "mmap",
              mmap: bool = True) -> Dict[str, torch.Tensor]:
    """Every tensor of a safetensors file, by name, in file order, on device."""
    with safe_open(filename, framework="pt", device=device, backend=backend, mmap=mmap, _header=False) as f:
        return f._load_file()
