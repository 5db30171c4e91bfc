"""The package's one compiled module, rootspan._describe (optional), and where it is found.

1. ROOTSPAN_PYTHON_EXTENSION=off: not used; the package describes components through ctypes. Any value
   other than on or off is refused (ValueError, at the first load).
2. Installed (meson install, a wheel): beside this file, imported as rootspan._describe.
3. A source tree used with a build's library (PYTHONPATH=bindings/python, ROOTSPAN_LIBRARY=<build>/
   librootspan.so): the module that build made, <build>/bindings/python/_describe<suffix>.

Not found, or made for another Python (an ImportError): None, and the ctypes path serves, more slowly.
"""
import os
import threading

from . import _library

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
        return _describe
    except ImportError:
        pass
    import importlib.machinery  # only here: a source tree's way (every import counts in a new process)
    import importlib.util
    folder = os.path.join(os.path.dirname(_library.path()), "bindings", "python")
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = os.path.join(folder, "_describe" + suffix)
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location(__package__ + "._describe", path)
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except ImportError:
                return None
            return module
    return None
