"""The element types of the safetensors format as the reference library names them.

One table: each format code ("F32"), the framework-style names a TensorSpec
may be given ("float32", "bfloat16", "float8_e4m3fn", ...), rootspan's own
name for the same type (its C ABI calls complex64 "C32"; bits and numpy type
come from rootspan.dtypes), torch's name, and the place of the type in the
order the writer lays tensors out in.
"""
from dataclasses import dataclass
from typing import Optional, Tuple

from rootspan import dtypes as _rootspan_dtypes


@dataclass(frozen=True)
class Dtype:
    code: str  # the format's name, as headers spell it
    names: Tuple[str, ...]  # framework-style names (numpy's and torch's dtype names)
    rootspan: str  # rootspan's name
    torch: Optional[str]  # the torch.dtype attribute; None where torch has none
    torch_since: str = ""  # the torch release that added it, for the refusal

    @property
    def bits(self):
        return _rootspan_dtypes.bits(self.rootspan)

    @property
    def numpy(self):
        """numpy's type string, or None where numpy has no such type."""
        return _rootspan_dtypes.numpy_typestr(self.rootspan)


# In the order of the format's type enumeration: the writer places tensors of
# later (wider) types first, so that every tensor stays aligned to its width.
TABLE = (
    Dtype("BOOL", ("bool",), "BOOL", "bool"),
    Dtype("F4", ("float4_e2m1fn_x2",), "F4", "float4_e2m1fn_x2", "2.8"),  # two values a byte
    Dtype("F6_E2M3", ("float6_e2m3fn",), "F6_E2M3", None),
    Dtype("F6_E3M2", ("float6_e3m2fn",), "F6_E3M2", None),
    Dtype("U8", ("uint8",), "U8", "uint8"),
    Dtype("I8", ("int8",), "I8", "int8"),
    Dtype("F8_E5M2", ("float8_e5m2",), "F8_E5M2", "float8_e5m2", "2.1"),
    Dtype("F8_E4M3", ("float8_e4m3fn",), "F8_E4M3", "float8_e4m3fn", "2.1"),
    Dtype("F8_E8M0", ("float8_e8m0fnu",), "F8_E8M0", "float8_e8m0fnu", "2.7"),
    Dtype("F8_E4M3FNUZ", ("float8_e4m3fnuz",), "F8_E4M3FNUZ", "float8_e4m3fnuz", "2.2"),
    Dtype("F8_E5M2FNUZ", ("float8_e5m2fnuz",), "F8_E5M2FNUZ", "float8_e5m2fnuz", "2.2"),
    Dtype("I16", ("int16",), "I16", "int16"),
    Dtype("U16", ("uint16",), "U16", "uint16", "2.3"),
    Dtype("F16", ("float16",), "F16", "float16"),
    Dtype("BF16", ("bfloat16",), "BF16", "bfloat16"),
    Dtype("I32", ("int32",), "I32", "int32"),
    Dtype("U32", ("uint32",), "U32", "uint32", "2.3"),
    Dtype("F32", ("float32",), "F32", "float32"),
    Dtype("C64", ("complex64",), "C32", "complex64"),
    Dtype("F64", ("float64",), "F64", "float64"),
    Dtype("I64", ("int64",), "I64", "int64"),
    Dtype("U64", ("uint64",), "U64", "uint64", "2.3"),
)

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
