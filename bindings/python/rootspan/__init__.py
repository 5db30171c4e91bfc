"""rootspan: provider memory, checked claims, and checkpoint loading, from Python.

A pure-ctypes binding of librootspan's C ABI (rootspan.h, weights.h):

    import rootspan
    with rootspan.Context() as ctx:
        with ctx.load("model.safetensors") as weights:
            for cid, component in weights.items():
                array = component.numpy()   # no copy; read-only for zero-copy file regions

The library is found next to this package, through ROOTSPAN_LIBRARY, in the
libdir recorded at install time, or on the system path (see _library).
"""
__version__ = "0.7.0"  # the library's version too: test_api checks that they agree

from ._library import LibraryNotFoundError
from .context import Context, DeviceInfo, ProviderReport
from .errors import *  # noqa: F401,F403 (Error and one subclass per status code)
from .errors import ERROR_CLASSES, Error, Requested, Span, error_class
from .inspect import sign
from .root import Claim, Mapping, Root, RootInfo
from .weights import Component, LoadProgress, Weights


def __getattr__(name):
    """rootspan.dlpack is imported on first use: most programs never export by DLPack, and its ctypes structures
    cost a fresh process a millisecond and more to build."""
    if name == "dlpack":
        import importlib
        return importlib.import_module(".dlpack", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def library_path():
    """The path librootspan was loaded from (loading it if needed)."""
    from . import _library
    return _library.path()


def version():
    """librootspan's version string."""
    from . import _library
    return _library.get().rootspan_version().decode()


__all__ = ["__version__", "Context", "DeviceInfo", "ProviderReport", "Root", "RootInfo", "Claim", "Mapping", "Weights",
           "Component", "LoadProgress", "Error", "Span", "Requested", "LibraryNotFoundError", "dlpack",
           "error_class", "library_path", "sign", "version"] + [cls.__name__ for cls in ERROR_CLASSES.values()]
