"""The element types of the safetensors format as the reference library names them.

The format's view of rootspan's one table of element types (rootspan.dtypes): each format code ("F32"),
rootspan's own name for the same type (its C ABI calls complex64 "C32"), and the place of the type in the
order the writer lays tensors out in. Bits, numpy type, the framework-style name a TensorSpec may be given
("float32", "bfloat16", "float8_e4m3fn", ...) and torch's name come from rootspan.dtypes.
"""
import collections
from typing import Optional, Tuple

from rootspan import dtypes as _rootspan_dtypes


class Dtype(collections.namedtuple("Dtype", (
    "code",  # the format's name, as headers spell it
    "rootspan",  # rootspan's name
))):
    """One element type of the format."""
    __slots__ = ()

    @property
    def names(self) -> Tuple[str, ...]:
        """The framework-style names (numpy's and torch's dtype names)."""
        return (_rootspan_dtypes.framework_name(self.rootspan),)

    @property
    def torch(self) -> Optional[str]:
        """The torch.dtype attribute; None where torch has none."""
        return None if _rootspan_dtypes.torch_release(self.rootspan) is None else self.names[0]

    @property
    def torch_since(self) -> str:
        """The torch release that added it, for the refusal."""
        return _rootspan_dtypes.torch_release(self.rootspan) or ""

    @property
    def bits(self):
        return _rootspan_dtypes.bits(self.rootspan)

    @property
    def numpy(self):
        """numpy's type string, or None where numpy has no such type."""
        return _rootspan_dtypes.numpy_typestr(self.rootspan)


# In the order of the format's type enumeration: the writer places tensors of
# later (wider) types first, so that every tensor stays aligned to its width.
TABLE = tuple(Dtype(code, _rootspan_dtypes.from_format_code(code)) for code in (
    "BOOL", "F4", "F6_E2M3", "F6_E3M2", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ",
    "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"))

BY_CODE = {d.code: d for d in TABLE}
BY_ROOTSPAN = {d.rootspan: d for d in TABLE}
BY_NAME = {name: d for d in TABLE for name in d.names}
ORDER = {d.code: i for i, d in enumerate(TABLE)}
CODES = tuple(d.code for d in TABLE)
# The element types a writer takes, in the order the reference's error lists them.
WRITER_ORDER = tuple(BY_CODE[c] for c in ("BOOL", "I8", "U8", "I16", "U16", "I32", "U32", "I64", "U64", "F16", "F32",
                                          "F64", "BF16", "F8_E4M3", "F8_E4M3FNUZ", "F8_E5M2", "F8_E5M2FNUZ",
                                          "F8_E8M0", "F4", "C64"))


def from_code(code):
    """The Dtype of a format code, or None."""
    return BY_CODE.get(code)


def from_name(name):
    """The Dtype of a framework-style name ("float32") or of a format code ("F32"), or None."""
    return BY_NAME.get(name) or BY_CODE.get(name)
