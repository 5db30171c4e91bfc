"""Writing safetensors bytes (serialize, serialize_file, TensorSpec) and reading them back (deserialize).

The writer lays a file out exactly as the reference library does, so that
both write the same bytes for the same tensors: the 8-byte little-endian
header length; the header as compact JSON (non-ASCII written as UTF-8,
"__metadata__" first when metadata is given, then each tensor's dtype, shape
and data_offsets), padded with spaces to a multiple of 8 bytes; then the
tensors' bytes back to back, widest element type first and by name within a
type, so that every tensor is aligned to its element size. (The reference
writes metadata keys in hash order; here they keep the caller's order.)

Reading goes through rootspan's core (rootspan_safetensors_describe), which
applies every rule a checkpoint file on disk must meet.
"""
import ctypes
import json
import math
import os
import struct
import tempfile

from rootspan import errors as _core_errors
from rootspan.inspect import describe_safetensors
from rootspan.safetensors import _dtypes
from rootspan.safetensors._errors import (DESERIALIZING, SERIALIZING, SafetensorError, SafetensorTypeError,
                                          from_core)

_SUPPORTED_NAMES = ", ".join(name for d in _dtypes.WRITER_ORDER for name in d.names)


class TensorSpec:
    """One tensor handed to serialize(): its element type, shape, and where its bytes are.

    dtype is a framework-style name ("float32", "bfloat16", "float8_e4m3fn");
    the .dtype property gives the format's code ("F32"). shape is the
    logical shape: for float4_e2m1fn_x2, which packs two values a byte, a
    storage shape's last dimension is doubled. data_ptr and data_len name
    the tensor's contiguous bytes, which must stay alive while a serialize
    call uses them."""

    __slots__ = ("_dtype", "_shape", "_data_ptr", "_data_len")

    def __init__(self, *, dtype, shape, data_ptr, data_len):
        if not isinstance(dtype, str):
            raise TypeError(f"argument 'dtype': '{type(dtype).__name__}' object is not an instance of 'str'")
        found = _dtypes.BY_NAME.get(dtype)
        if found is None:
            raise SafetensorError(f'Unknown dtype "{dtype}". Supported dtypes: {_SUPPORTED_NAMES}')
        dims = [_unsigned(d, "shape") for d in shape]
        if found.code == "F4" and dims:
            dims[-1] *= 2
        self._dtype = found.code
        self._shape = dims
        self._data_ptr = _unsigned(data_ptr, "data_ptr")
        self._data_len = _unsigned(data_len, "data_len")

    dtype = property(lambda self: self._dtype, doc="The format's code of the element type (\"F32\").")
    shape = property(lambda self: list(self._shape), doc="The logical shape, as the header records it.")
    data_ptr = property(lambda self: self._data_ptr, doc="The address of the tensor's contiguous bytes.")
    data_len = property(lambda self: self._data_len, doc="The length of the tensor's bytes.")

    def __repr__(self):
        return (f"TensorSpec(dtype={self._dtype!r}, shape={self._shape!r}, data_ptr={self._data_ptr}, "
                f"data_len={self._data_len})")


def _unsigned(value, what):
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"argument '{what}': '{type(value).__name__}' object cannot be interpreted as an integer")
    value = value.__index__()
    if value < 0:
        raise OverflowError(f"argument '{what}': can't convert negative int to unsigned")
    return value


class _Source:
    """One tensor to write: its code, shape, and its bytes as a memoryview (borrowed, not copied)."""
    __slots__ = ("name", "code", "shape", "view", "keep")

    def __init__(self, name, spec):
        self.name = name
        if isinstance(spec, TensorSpec):
            self.code, self.shape, self.keep = spec.dtype, spec.shape, None
            self.view = _memory_at(spec.data_ptr, spec.data_len)
        elif isinstance(spec, dict):  # the form older releases took: dtype, shape, and data or data_ptr + data_len
            for key in ("dtype", "shape"):
                if key not in spec:
                    raise SafetensorTypeError(f"Missing `{key}` in {spec!r}")
            if "data" in spec:
                typed = TensorSpec(dtype=spec["dtype"], shape=spec["shape"], data_ptr=0, data_len=0)
                self.keep = spec["data"]
                self.view = memoryview(self.keep).cast("B")
            else:
                for key in ("data_ptr", "data_len"):
                    if key not in spec:
                        raise SafetensorTypeError(f"Missing `{key}` in {spec!r}")
                typed = TensorSpec(dtype=spec["dtype"], shape=spec["shape"], data_ptr=spec["data_ptr"],
                                   data_len=spec["data_len"])
                self.keep, self.view = None, _memory_at(typed.data_ptr, typed.data_len)
            self.code, self.shape = typed.dtype, typed.shape
        else:
            raise SafetensorTypeError(f"argument 'tensor_dict': '{type(spec).__name__}' object is not an instance "
                                      "of 'TensorSpec'")
        bits = math.prod(self.shape) * _dtypes.BY_CODE[self.code].bits
        if bits % 8 or bits // 8 != self.view.nbytes:
            # A dict is the older releases' form, which 0.8 refuses with TypeError: both.
            error = SafetensorTypeError if isinstance(spec, dict) else SafetensorError
            raise error(SERIALIZING + "invalid shape, data type, or offset for tensor")


def _memory_at(address, length):
    if length == 0:
        return memoryview(b"")
    return memoryview((ctypes.c_char * length).from_address(address)).cast("B")


def _layout(tensor_dict, metadata):
    """(header bytes, sources in file order)."""
    if not isinstance(tensor_dict, dict):
        raise TypeError(f"argument 'tensor_dict': '{type(tensor_dict).__name__}' object is not an instance of 'dict'")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise TypeError(f"argument 'metadata': '{type(metadata).__name__}' object is not an instance of 'dict'")
        for key, value in metadata.items():
            for item in (key, value):
                if not isinstance(item, str):
                    raise TypeError(f"argument 'metadata': '{type(item).__name__}' object is not an instance of 'str'")
    sources = []
    for name, spec in tensor_dict.items():
        if not isinstance(name, str):
            raise TypeError(f"argument 'tensor_dict': '{type(name).__name__}' object is not an instance of 'str'")
        sources.append(_Source(name, spec))
    sources.sort(key=lambda s: (-_dtypes.ORDER[s.code], s.name))
    header = {} if metadata is None else {"__metadata__": dict(metadata)}
    offset = 0
    for s in sources:
        header[s.name] = {"dtype": s.code, "shape": s.shape, "data_offsets": [offset, offset + s.view.nbytes]}
        offset += s.view.nbytes
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, sources


def serialize(tensor_dict, metadata=None):
    """The bytes of a safetensors file holding tensor_dict ({name: TensorSpec}) and metadata ({str: str})."""
    head, sources = _layout(tensor_dict, metadata)
    return b"".join([head] + [s.view for s in sources])


def serialize_file(tensor_dict, filename, metadata=None):
    """Writes a safetensors file: to a new file beside filename, renamed over it once whole."""
    if not isinstance(filename, (str, os.PathLike)):
        raise TypeError(f"argument 'filename': '{type(filename).__name__}' object is not an instance of 'str'")
    head, sources = _layout(tensor_dict, metadata)
    target = os.fspath(filename)
    folder = os.path.dirname(os.path.abspath(target))
    temporary = None
    try:
        # mkstemp makes the file 0600; the result gets the mode a plain open would give it.
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".", suffix=".safetensors.tmp")
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(descriptor, 0o666 & ~umask)
        with os.fdopen(descriptor, "wb") as out:  # a write of a memoryview releases the GIL
            out.write(head)
            for s in sources:
                out.write(s.view)
        os.replace(temporary, target)
        temporary = None
    except OSError as e:
        raise SafetensorError(f"{SERIALIZING}I/O error: {e.strerror or e} at path \"{target}\"") from e
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def deserialize(data):
    """[(name, {"shape": [...], "dtype": "F32", "data": bytearray}), ...] of a safetensors file's bytes, in file
    order. The bytes are validated by rootspan's core first."""
    if not isinstance(data, bytes):
        raise TypeError(f"argument 'bytes': '{type(data).__name__}' object is not an instance of 'bytes'")
    try:
        description = describe_safetensors(data)
    except _core_errors.Error as e:
        raise from_core(e, DESERIALIZING) from e
    view = memoryview(data)
    return [(name, {"shape": shape, "dtype": dtype, "data": bytearray(view[offset:offset + nbytes])})
            for name, dtype, shape, offset, nbytes in description["tensors"]]
