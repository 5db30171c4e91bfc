"""The native module's path in releases before 0.4, for code that still imports from it."""
from rootspan.safetensors._safetensors_rust import (SafetensorError, TensorSpec, __version__,  # noqa: F401
                                                    _safe_open_handle, deserialize, safe_open, serialize,
                                                    serialize_file)
