"""Finding and opening librootspan.so.

Places tried, in order:
1. `ROOTSPAN_LIBRARY`, when set: that file and nothing else (an explicit
   choice that does not work is an error, never silently replaced);
2. next to this package (a library shipped inside it);
3. the libdir recorded when `meson install` installed this package;
4. the system's search path (LD_LIBRARY_PATH, the ld.so cache, the default
   folders), as librootspan.so.0, then whatever ctypes.util.find_library finds.

A candidate counts only when it opens and exports every function the
package declares; otherwise the next one is tried. When none works,
LibraryNotFoundError lists each place and why it failed.
"""
import ctypes
import ctypes.util
import os
import threading

import _ctypes  # dlsym: the ctypes module's own

from . import _abi

SONAME = "librootspan.so.0"
ABI_MAJOR = 0  # the SONAME version this package speaks


class LibraryNotFoundError(OSError):
    """No usable librootspan.so: `attempts` holds (place, path, reason) for each candidate."""

    def __init__(self, attempts):
        self.attempts = list(attempts)
        lines = ["librootspan.so could not be loaded; tried:"]
        lines += [f"  {place}: {path}: {reason}" for place, path, reason in self.attempts]
        lines.append("Set ROOTSPAN_LIBRARY to the library's path, or install rootspan (meson install).")
        super().__init__("\n".join(lines))


def _installed_libdir():
    try:
        from . import _install_paths  # written by meson install; absent in the source tree
    except ImportError:
        return None
    return _install_paths.LIBDIR


def candidates():
    """(place, path) pairs in the order they are tried."""
    explicit = os.environ.get("ROOTSPAN_LIBRARY")
    if explicit:
        return [("ROOTSPAN_LIBRARY", explicit)]
    here = os.path.dirname(os.path.abspath(__file__))
    out = [("next to the package", os.path.join(here, SONAME)),
           ("next to the package", os.path.join(here, "librootspan.so"))]
    libdir = _installed_libdir()
    if libdir:
        out.append(("installed libdir", os.path.join(libdir, SONAME)))
    out.append(("system search path", SONAME))
    found = ctypes.util.find_library("rootspan")
    if found and found != SONAME:
        out.append(("system search path (find_library)", found))
    return out


# What finalizers call to give memory back (a lease, claim, root, weights or context that is garbage): declared
# at the open, not at first use, which can come while the interpreter shuts down and the modules a declaration
# needs are gone.
_DECLARED_AT_OPEN = ("rootspan_unmap", "rootspan_claim_release", "rootspan_root_release",
                     "rootspan_weights_release_component", "rootspan_weights_unmap_components",
                     "rootspan_weights_free", "rootspan_context_destroy", "rootspan_error_free")


class _Library(ctypes.CDLL):
    """The opened library. Each function takes its prototype (_abi.PROTOTYPES) when first used, then stays an
    attribute: a process uses some 20 of them, and declaring all of them at the open cost a fresh process
    0.2 ms (issue 33). The release functions are declared at the open (_DECLARED_AT_OPEN)."""

    def __init__(self, path):
        super().__init__(path)
        self._addresses = {}

    def address(self, name):
        """The address of the library function `name`, for the compiled module, which calls it from C. Found once:
        ctypes' cast takes a microsecond, and an export asks for every component."""
        found = self._addresses.get(name)
        if found is None:
            found = self._addresses[name] = ctypes.cast(getattr(self, name), ctypes.c_void_p).value
        return found

    def __getattr__(self, name):
        if name not in _abi.PROTOTYPES:
            return super().__getattr__(name)
        function = self[name]
        function.restype, function.argtypes = _abi.prototype(name)
        setattr(self, name, function)  # declared before it is shared: another thread sees it whole, or not
        return function


def _exports(lib, name):
    """Whether lib exports the symbol name. A plain dlsym where CPython's ctypes has one (every system with
    dlopen): no function object made, as hasattr would make."""
    dlsym = getattr(_ctypes, "dlsym", None)
    if dlsym is None:
        return hasattr(lib, name)
    try:
        return bool(dlsym(lib._handle, name))
    except OSError:
        return False


def _open(path):
    """The library at path, checked to export every function the package declares, or the reason it is
    unusable."""
    if os.sep in path and not os.path.exists(path):
        return None, "no such file"
    try:
        lib = _Library(path)
    except OSError as e:
        return None, str(e)
    missing = [name for name in _abi.PROTOTYPES if not _exports(lib, name)]
    if missing:
        return None, "does not export " + ", ".join(missing) + " (an older or foreign library?)"
    for name in _DECLARED_AT_OPEN:
        getattr(lib, name)
    version = lib.rootspan_version().decode()
    if int(version.split(".")[0]) != ABI_MAJOR:
        return None, f"version {version}, this package needs {ABI_MAJOR}.x"
    return lib, None


_lock = threading.Lock()
_lib = None
_path = None


def get():
    """The opened library (loaded on first use)."""
    global _lib, _path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is None:
            attempts = []
            for place, path in candidates():
                lib, reason = _open(path)
                if lib is not None:
                    _lib, _path = lib, path
                    break
                attempts.append((place, path, reason))
            else:
                raise LibraryNotFoundError(attempts)
    return _lib


def path():
    """The path the library was opened from."""
    get()
    return _path
