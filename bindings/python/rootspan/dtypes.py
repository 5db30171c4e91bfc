"""Element types: rootspan's names (the strings the library and safetensors
use, "F32", "BF16"), their numpy dtypes where numpy has one, and their DLPack
type codes.
"""
from . import _abi

# The one table of element types. name -> (bits, numpy typestr or None, DLPack (type code, bits), framework
# name, torch release): the framework name is numpy's and torch's name of the type ("float32", "bfloat16";
# "complex64" for C32, two F32) and the torch.dtype attribute where torch has one; the torch release is the
# first that has it ("": every torch this package supports; None: no torch has it).
# DLPack codes: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool, and the
# 1.1 low-precision floats: 10 float8_e4m3fn, 12 float8_e5m2,
# 11 float8_e4m3fnuz, 13 float8_e5m2fnuz, 14 float8_e8m0fnu, 15 float6_e2m3fn,
# 16 float6_e3m2fn, 17 float4_e2m1fn.
_TABLE = {
    "BOOL": (8, "|b1", (6, 8), "bool", ""),
    "U8": (8, "|u1", (1, 8), "uint8", ""),
    "I8": (8, "|i1", (0, 8), "int8", ""),
    "U16": (16, "<u2", (1, 16), "uint16", "2.3"),
    "I16": (16, "<i2", (0, 16), "int16", ""),
    "U32": (32, "<u4", (1, 32), "uint32", "2.3"),
    "I32": (32, "<i4", (0, 32), "int32", ""),
    "U64": (64, "<u8", (1, 64), "uint64", "2.3"),
    "I64": (64, "<i8", (0, 64), "int64", ""),
    "F16": (16, "<f2", (2, 16), "float16", ""),
    "BF16": (16, None, (4, 16), "bfloat16", ""),
    "F32": (32, "<f4", (2, 32), "float32", ""),
    "F64": (64, "<f8", (2, 64), "float64", ""),
    "C32": (64, "<c8", (5, 64), "complex64", ""),  # two F32
    "C64": (128, "<c16", (5, 128), "complex128", ""),  # two F64
    "F8_E5M2": (8, None, (12, 8), "float8_e5m2", "2.1"),
    "F8_E4M3": (8, None, (10, 8), "float8_e4m3fn", "2.1"),
    "F8_E8M0": (8, None, (14, 8), "float8_e8m0fnu", "2.7"),
    "F4": (4, None, (17, 4), "float4_e2m1fn_x2", "2.8"),  # torch's type packs two values a byte
    "F6_E2M3": (6, None, (15, 6), "float6_e2m3fn", None),
    "F6_E3M2": (6, None, (16, 6), "float6_e3m2fn", None),
    "F8_E4M3FNUZ": (8, None, (11, 8), "float8_e4m3fnuz", "2.2"),
    "F8_E5M2FNUZ": (8, None, (13, 8), "float8_e5m2fnuz", "2.2"),
}


def name(code):
    """The name of a rootspan_dtype value ("NONE" for untyped bytes)."""
    if 0 <= code < len(_abi.DTYPE_NAMES):
        return _abi.DTYPE_NAMES[code]
    return f"unknown({code})"


def code(value):
    """The rootspan_dtype value of a name ("F32"), a numpy dtype, or None (untyped).

    Names are upper case, as the library spells them: "f4" is numpy's float32,
    "F4" rootspan's 4-bit float. A lower-case name numpy does not know ("bf16")
    is taken as rootspan's."""
    if value is None:
        return _abi.DTYPE_NONE
    if isinstance(value, str) and value in _abi.DTYPE_NAMES:
        return _abi.DTYPE_NAMES.index(value)
    try:
        import numpy
        typestr = numpy.dtype(value).str
    except ImportError:
        typestr = None
    except TypeError:
        if isinstance(value, str):  # "bf16": a rootspan name in lower case, and no numpy type
            if value.upper() in _abi.DTYPE_NAMES:
                return _abi.DTYPE_NAMES.index(value.upper())
            typestr = None
        else:
            raise TypeError(f"dtype must be a rootspan dtype name such as 'F32', a numpy dtype, or None; "
                            f"got {type(value).__name__} {value!r}") from None
    if typestr is None:
        raise ValueError(f"unknown dtype {value!r}; expected one of {', '.join(_abi.DTYPE_NAMES)} "
                         "or a numpy dtype")
    for dtype_name, (_, np_typestr, *_) in _TABLE.items():
        if np_typestr == typestr or (np_typestr and np_typestr[1:] == typestr[1:] and typestr[0] in "=|<"):
            return _abi.DTYPE_NAMES.index(dtype_name)
    raise ValueError(f"numpy dtype {typestr} has no rootspan element type")


def bits(dtype_name):
    """Bits per element; 8 for untyped bytes."""
    return 8 if dtype_name == "NONE" else _TABLE[dtype_name][0]


def numpy_typestr(dtype_name):
    """numpy's type string ("<f4"), or None where numpy has no such type."""
    if dtype_name == "NONE":
        return "|u1"
    return _TABLE[dtype_name][1]


_numpy_dtypes = {}  # dtype name -> numpy dtype or None: made once (every loaded component asks)


def numpy_dtype(dtype_name):
    """The numpy dtype, or None where numpy has none (BF16, F8, F6, F4) or numpy is missing."""
    try:
        return _numpy_dtypes[dtype_name]
    except KeyError:
        pass
    found = _numpy_dtype(dtype_name)
    if dtype_name in _TABLE or dtype_name == "NONE":
        _numpy_dtypes[dtype_name] = found
    return found


def _numpy_dtype(dtype_name):
    typestr = numpy_typestr(dtype_name)
    if typestr is None:
        return None
    try:
        import numpy
    except ImportError:
        return None
    return numpy.dtype(typestr)


def dlpack_type(dtype_name):
    """(DLPack type code, bits) of an element type."""
    if dtype_name == "NONE":
        return (1, 8)
    return _TABLE[dtype_name][2]


def framework_name(dtype_name):
    """numpy's and torch's name of an element type ("float32", "bfloat16", "float6_e2m3fn")."""
    return _TABLE[dtype_name][3]


def torch_release(dtype_name):
    """The first torch release with the type as a torch.dtype ("": every one; None: none has it)."""
    return _TABLE[dtype_name][4]


# The checkpoint formats' names (safetensors' "C64", what inspect reports) where they differ from rootspan's.
_FORMAT_NAMES = {"C32": "C64"}
_FROM_FORMAT = {code: name for name, code in _FORMAT_NAMES.items()}


def format_code(dtype_name):
    """The name a checkpoint format (safetensors) gives an element type: "C64" for rootspan's C32."""
    return _FORMAT_NAMES.get(dtype_name, dtype_name)


def from_format_code(code):
    """rootspan's name of a checkpoint format's element type ("C64": C32, two F32)."""
    return _FROM_FORMAT.get(code, code)
