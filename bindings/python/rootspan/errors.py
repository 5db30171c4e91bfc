"""Exceptions: `Error` and one subclass per status code of rootspan/types.h.

An error carries what librootspan's diagnostic said: `code` (the status
number), `name` ("Busy"), `operation` ("claim_acquire", "open_checkpoint", ...),
`cause`, `policy` (the loader rule cited, "" when none), `expected` and
`actual` (None unless the cause compares two values), `requested` and
`resolution` (the range asked for and the span it resolved to, when known).
str(error) is the library's whole message.
"""
import collections
import ctypes
from typing import Optional

from . import _abi


# The package's records (here, and in root, context, weights and the drop-in's _dtypes) are
# collections.namedtuple classes: typing.NamedTuple makes the same class at more cost, which a fresh process
# pays for each at import (Python 3.11: 180-210 µs a class against 106-158, timed in a fresh import).
Span = collections.namedtuple("Span", ("root_id", "offset", "length", "alignment"), module=__name__)
Span.__doc__ = ("A range bound to one root: absolute offset in the allocation, and the alignment it guarantees "
                "(four ints).")

Requested = collections.namedtuple("Requested", ("kind", "root_id", "key", "offset", "length"), module=__name__)
Requested.__doc__ = ("What an operation was asked to do (`kind`, a str: none, range, key_range, root_key_range; `key`, "
                     "(domain, local); the rest ints).")


class Error(Exception):
    """A rootspan call failed."""
    code = None  # the status number; set on each subclass

    def __init__(self, message, *, code=None, operation="", cause="", policy="", expected=None, actual=None,
                 requested=None, resolution=None):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.operation = operation
        self.cause = cause or message
        self.policy = policy
        self.expected = expected
        self.actual = actual
        self.requested: Optional[Requested] = requested
        self.resolution: Optional[Span] = resolution

    @property
    def name(self):
        """The status code's name ("Busy"), as rootspan_status_name gives it."""
        return status_name(self.code) if self.code is not None else "Unknown"


# Some codes also derive from the Python exception a caller would catch for
# the same mistake.
_EXTRA_BASES = {"InvalidArgument": (ValueError,), "NotFound": (LookupError,), "OutOfMemory": (MemoryError,),
                "Io": (OSError,)}

ERROR_CLASSES = {}
for _code, _name in enumerate(_abi.STATUS_NAMES):
    if _code == _abi.OK:
        continue
    _cls = type(_name + "Error", (Error,) + _EXTRA_BASES.get(_name, ()),
                {"code": _code, "__doc__": f"Status {_code} ({_name}).", "__module__": __name__})
    ERROR_CLASSES[_code] = _cls
    globals()[_cls.__name__] = _cls
del _code, _name, _cls


__all__ = ["Error", "Span", "Requested", "error_class", "ERROR_CLASSES"] + [c.__name__ for c in ERROR_CLASSES.values()]


def status_name(code):
    """The library's name of a status code ("Busy"; "Unknown" for a code it does not know)."""
    from . import _library
    return _text(_library.get().rootspan_status_name(code))


def error_class(code):
    """The exception class of a status code (Error for an unknown one)."""
    return ERROR_CLASSES.get(code, Error)


def _text(value):
    """A C string as str: "" for NULL (a diagnostic's missing part is empty)."""
    return _abi.text(value) or ""


def from_handle(lib, status, handle):
    """The exception for a failed call; frees the library's error (handle may be NULL)."""
    cls = error_class(status)
    if not handle:
        return cls(f"{_text(lib.rootspan_status_name(status))} (the library gave no details)", code=status)
    try:
        code = lib.rootspan_error_code(handle)
        requested = _abi.sized(_abi.Requested)
        req = None
        if lib.rootspan_error_requested(handle, ctypes.byref(requested)) == _abi.OK:
            req = Requested(_abi.enum_name(_abi.REQUESTED_KINDS, requested.kind), requested.root_id,
                            (requested.key.domain, requested.key.local), requested.offset, requested.length)
        span = _abi.sized(_abi.Span)
        resolution = None
        if lib.rootspan_error_resolution(handle, ctypes.byref(span)):
            resolution = Span(span.root_id, span.offset, span.length, span.alignment)
        expected, actual = ctypes.c_uint64(), ctypes.c_uint64()
        has_values = lib.rootspan_error_values(handle, ctypes.byref(expected), ctypes.byref(actual))
        return error_class(code)(_text(lib.rootspan_error_message(handle)), code=code,
                                 operation=_text(lib.rootspan_error_operation(handle)),
                                 cause=_text(lib.rootspan_error_cause(handle)),
                                 policy=_text(lib.rootspan_error_policy(handle)),
                                 expected=expected.value if has_values else None,
                                 actual=actual.value if has_values else None, requested=req, resolution=resolution)
    finally:
        lib.rootspan_error_free(handle)


def check(lib, fn, *args):
    """Calls fn(*args, &error) and raises the library's error when it fails."""
    err = ctypes.c_void_p()
    status = fn(*args, ctypes.byref(err))
    if status != _abi.OK:
        raise from_handle(lib, status, err)


def check_plain(status, operation, what):
    """Raises for a call that has no error out-parameter."""
    if status != _abi.OK:
        raise error_class(status)(f"{operation}: {what}", code=status, operation=operation, cause=what)
