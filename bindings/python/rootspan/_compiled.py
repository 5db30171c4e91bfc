"""The package's one compiled module, rootspan._describe (optional), and where it is found.

1. ROOTSPAN_PYTHON_EXTENSION=off: not used; the package describes and maps components through ctypes, and
   reads a safetensors header's table from its JSON description. Read once,
   at the first load; any value other than on or off is refused (ValueError) before that load starts, and
   again at each later one.
2. Installed (meson install, a wheel): beside this file, imported as rootspan._describe.
3. A source tree used with a build's library (PYTHONPATH=bindings/python, ROOTSPAN_LIBRARY=<build>/
   librootspan.so, a path): the module that build made, <build>/bindings/python/_describe<suffix>, the
   first of this Python's extension suffixes that loads.

Not found, or not loadable by this Python (an ImportError): None, and the ctypes path serves, more slowly.
Found but built from another copy of _describe.c (its INTERFACE_VERSION is not this package's): None as
well, with a RuntimeWarning that names where it was found and both versions.
"""
import os
import threading
import warnings

from . import _library

# What the compiled module's functions take and give: _describe.c's INTERFACE_VERSION, raised with it.
INTERFACE_VERSION = 1
_SETTING = "ROOTSPAN_PYTHON_EXTENSION"
_lock = threading.Lock()
_found = None  # (module or None,) once looked for


def describe():
    """rootspan._describe, or None where it is not there or is turned off."""
    found = _found
    if found is None:
        with _lock:
            found = _found if _found is not None else _look()
    return found[0]


def _look():
    global _found
    setting = os.environ.get(_SETTING, "on")
    if setting not in ("on", "off"):
        raise ValueError(f"{_SETTING}: expected on or off, got {setting!r}")
    module = None if setting == "off" else _import()
    _found = (module,)
    return _found


def _import():
    try:
        from . import _describe
        return _usable(_describe, _describe.__file__)
    except ImportError:
        pass
    library = _library.path()
    if not os.path.isabs(library):  # found by the system's search (a bare name): no build folder beside it
        return None
    import importlib.machinery  # only here: a source tree's way (every import counts in a new process)
    import importlib.util
    folder = os.path.join(os.path.dirname(library), "bindings", "python")
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(folder, "_describe" + suffix)
        if not os.path.isfile(path):
            continue
        try:  # an extension module is opened by module_from_spec, and runs its init in exec_module
            spec = importlib.util.spec_from_file_location(__package__ + "._describe", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except ImportError:  # not loadable by this Python (another version, a broken file): the next, or ctypes
            continue
        return _usable(module, path)
    return None


def _usable(module, where):
    """module where it was built from this package's _describe.c (its INTERFACE_VERSION), else None with a
    RuntimeWarning: its tuples may differ from what the package reads, so the ctypes path serves."""
    found = getattr(module, "INTERFACE_VERSION", None)
    if found == INTERFACE_VERSION:
        return module
    warnings.warn(f"rootspan: the compiled module at {where} has interface version {found}, this package expects "
                  f"{INTERFACE_VERSION} (it was built from another copy of _describe.c: rebuild it); the package "
                  "describes and maps components through ctypes instead, more slowly", RuntimeWarning, stacklevel=2)
    return None
