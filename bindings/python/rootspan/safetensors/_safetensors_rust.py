"""The reference library's native module (its Rust extension) by the path code imports it from.

__version__ is the version of the reference API rootspan.safetensors follows.
"""
from rootspan.safetensors._errors import SafetensorError  # noqa: F401
from rootspan.safetensors._format import TensorSpec, deserialize, serialize, serialize_file  # noqa: F401
from rootspan.safetensors._open import _safe_open_handle, safe_open  # noqa: F401

__version__ = "0.8.0"
