"""Context.import_host: a Python buffer made a host root, with no copy.

The buffer is held with the buffer protocol (PyObject_GetBuffer) for as long
as the root lives; the root's deleter, which librootspan calls exactly once
(at release, at context destroy, or when the import fails), releases it.
"""
import ctypes
import itertools
import threading
from ctypes import POINTER, c_char_p, c_int, c_ssize_t, c_void_p

from . import _abi, errors


class _PyBuffer(ctypes.Structure):
    """CPython's Py_buffer (part of the stable ABI since 3.11)."""
    _fields_ = [("buf", c_void_p), ("obj", c_void_p), ("len", c_ssize_t), ("itemsize", c_ssize_t),
                ("readonly", c_int), ("ndim", c_int), ("format", c_char_p), ("shape", POINTER(c_ssize_t)),
                ("strides", POINTER(c_ssize_t)), ("suboffsets", POINTER(c_ssize_t)), ("internal", c_void_p)]


_PYBUF_SIMPLE = 0  # contiguous bytes, or the exporter refuses
_PYBUF_WRITABLE = 1

_get_buffer = ctypes.pythonapi["PyObject_GetBuffer"]
_get_buffer.argtypes = [ctypes.py_object, POINTER(_PyBuffer), c_int]
_get_buffer.restype = c_int
_release_buffer = ctypes.pythonapi["PyBuffer_Release"]
_release_buffer.argtypes = [POINTER(_PyBuffer)]
_release_buffer.restype = None

_views = {}  # deleter_context -> _PyBuffer
_views_lock = threading.Lock()
_keys = itertools.count(1)


def _deleter(context, data):
    try:
        with _views_lock:
            view = _views.pop(context, None)
        if view is not None:
            _release_buffer(ctypes.byref(view))
    except Exception:  # called from C: never unwind into it
        pass


_DELETER = _abi.HOST_DELETER(_deleter)
ctypes.pythonapi["Py_IncRef"](ctypes.py_object(_DELETER))  # may run during interpreter teardown


def _alignment(address):
    """The largest power of two (up to 4096) that divides address."""
    if address == 0:
        return 1
    return min(address & -address, 4096)


def import_host(context, handle, buffer, read_only, dtype_code, provider):
    from .root import Root
    view = _PyBuffer()
    flags = _PYBUF_SIMPLE if read_only in (None, True) else _PYBUF_WRITABLE
    try:
        _get_buffer(buffer, ctypes.byref(view), flags)
    except BufferError as e:
        if read_only is False:
            raise BufferError(f"import_host: read_only=False needs a writable buffer, and "
                              f"{type(buffer).__name__} is read-only ({e})") from None
        raise TypeError(f"import_host needs a contiguous bytes-like object, got {type(buffer).__name__}: {e}") \
            from None
    except ValueError as e:  # numpy's word for a layout it cannot export as plain bytes
        raise ValueError(f"import_host needs a contiguous bytes-like object: {e}") from None
    except TypeError:
        raise TypeError(f"import_host needs a bytes-like object, got {type(buffer).__name__}") from None
    key = next(_keys)
    with _views_lock:
        _views[key] = view
    options = _abi.sized(_abi.HostImport)
    options.provider = _abi.c_text(provider, "provider") if provider is not None else None
    options.data = view.buf
    options.byte_length = view.len
    options.alignment = _alignment(view.buf or 0)
    options.dtype = dtype_code
    options.read_only = 1 if (read_only or (read_only is None and view.readonly)) else 0
    options.deleter = _DELETER
    options.deleter_context = key
    out = ctypes.c_void_p()
    lib = context._state.lib
    errors.check(lib, lib.rootspan_root_import_host, handle, ctypes.byref(options), ctypes.byref(out))
    return Root(context, out.value)
