"""The checks every public call makes of its arguments before C sees them.

One home for them: ints that fit their C field, bools, paths, lists of
paths and cache revisions. Each returns the value as the C call takes it
(a path as NUL-free bytes), or raises TypeError or ValueError naming the
argument.
"""
import ctypes
import os

from . import _abi

PATH_TYPES = (str, bytes, os.PathLike)


def check_int(value, what, minimum=0, bits=64):
    """value, checked to be an int in [minimum, 2**bits): ctypes would
    silently truncate a wider one to the C field's width."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {type(value).__name__} {value!r}")
    if value < minimum or value >= 1 << bits:
        raise ValueError(f"{what} must lie in [{minimum}, 2**{bits}), got {value}")
    return value


def check_bool(value, what):
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be True or False, got {type(value).__name__} {value!r}")
    return value


def path(value, what, *, kinds=PATH_TYPES, must="be a path (str or os.PathLike)", subject=None):
    """The one path check: value (one of kinds) as the bytes a C call reads (_abi.c_path), else TypeError
    "<subject or what> must <must>, got <type> <value>"."""
    if not isinstance(value, kinds):
        raise TypeError(f"{subject or what} must {must}, got {type(value).__name__} {value!r}")
    return _abi.c_path(value, what)


def optional_path(value, what):
    """path(), or None for None."""
    return None if value is None else path(value, what)


def path_list(values, what):
    """One path or a sequence of them as a C array of paths: (array, count); every entry checked."""
    if isinstance(values, PATH_TYPES):
        values = [values]
    elif not isinstance(values, (list, tuple)):
        raise TypeError(f"{what} must be a path or a list of paths (str or os.PathLike), got "
                        f"{type(values).__name__} {values!r}")
    if not values:
        raise ValueError(f"{what} must name at least one path, got an empty {type(values).__name__}")
    encoded = [path(value, f"{what}[{i}]") for i, value in enumerate(values)]
    return (ctypes.c_char_p * len(encoded))(*encoded), len(encoded)


def paths(values, what):
    """A list of paths (never a single one) as a list of C paths."""
    if isinstance(values, PATH_TYPES):
        raise TypeError(f"{what} must be a list of paths, not a single {type(values).__name__}")
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"{what} must be a list of paths, got {type(values).__name__}") from None
    return [path(item, what, must="be paths (str or os.PathLike)", subject=f"{what} entries") for item in items]


def c_array(array_and_count):
    """(a ctypes array of char *, count) as the (char **, count) an options struct takes; (None, 0) for None."""
    if array_and_count is None:
        return None, 0
    array, count = array_and_count
    return ctypes.cast(array, ctypes.POINTER(ctypes.c_char_p)), count


def revision(value):
    """A cache repository's revision (a branch, tag or commit; None: the one refs/main names) as C text."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"revision must be a branch, tag or commit (str), got {type(value).__name__}")
    return _abi.c_text(value, "revision")
