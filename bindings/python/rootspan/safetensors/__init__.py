"""rootspan.safetensors: the safetensors library's Python API, read through rootspan's core.

Code written for safetensors runs unchanged after one import changes:

    import rootspan.safetensors as safetensors        # or: from rootspan.safetensors.torch import load_file
    with safetensors.safe_open("model.safetensors", framework="pt") as f:
        w = f.get_tensor("lm_head.weight")             # zero-copy, writable (copy-on-write), outlives f

The same names, signatures, defaults, exception type and error words as the
reference library (safe_open, serialize, serialize_file, deserialize,
TensorSpec, SafetensorError; .numpy and .torch with load, load_file, save,
save_file, and torch's load_model, save_model and shared-tensor helpers);
written files are byte for byte the reference's. Headers are validated by
rootspan's core, which is stricter in a few documented places
(docs/python.md lists every difference).

__version__ is the version of the reference API this module follows;
rootspan.__version__ is rootspan's own.
"""
# Absolute imports throughout: code that aliases this package as
# `safetensors` loads these modules a second time under that name, and must
# get the same classes (SafetensorError above all), not copies.
from rootspan.safetensors._safetensors_rust import (SafetensorError, TensorSpec, __version__, _safe_open_handle,
                                                    deserialize, safe_open, serialize, serialize_file)

safe_open_handle = _safe_open_handle  # the name an earlier release gave it

__all__ = ["SafetensorError", "TensorSpec", "__version__", "deserialize", "safe_open", "_safe_open_handle",
           "serialize", "serialize_file"]
