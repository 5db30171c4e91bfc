"""Shared by the Python suites: the example checkpoint, safetensors read and
written with json + struct (independently of the library), and the ctypes
consumer of versioned DLPack capsules."""
import ctypes
import json
import os
import struct
import subprocess
import sys

import rootspan
from rootspan import dlpack

EXAMPLE = os.environ.get("ROOTSPAN_EXAMPLE_CHECKPOINT", "")


def _versioned_consumer(module, since):
    """Whether the installed module asks __dlpack__ for a versioned capsule (numpy 2.1, torch 2.4)."""
    try:
        version = tuple(int(part) for part in __import__(module).__version__.split("+")[0].split(".")[:2])
    except (ImportError, ValueError):
        return False
    return version >= since


VERSIONED_NUMPY = _versioned_consumer("numpy", (2, 1))
VERSIONED_TORCH = _versioned_consumer("torch", (2, 4))
EXAMPLE_SCHEMA = os.path.join(EXAMPLE, "schema.json")

ELEMENT_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "U16": 2, "I16": 2, "F16": 2, "BF16": 2, "U32": 4, "I32": 4,
                 "F32": 4, "U64": 8, "I64": 8, "F64": 8}


def context(**kwargs):
    """A context with the compiled-in providers only: nothing from this machine's manifests."""
    return rootspan.Context(manifests=[], **kwargs)


def run_python(code, *args):
    """(exit status, output) of code run by a new interpreter with this one's environment: for what would
    kill the test process if it went wrong (a SIGBUS)."""
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def read_safetensors(path):
    """name -> (dtype, shape, bytes) of one safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack_from("<Q", blob, 0)
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    data = blob[8 + n:]
    return {name: (t["dtype"], tuple(t["shape"]), data[t["data_offsets"][0]:t["data_offsets"][1]])
            for name, t in header.items()}


def checkpoint_tensors(folder):
    """Every tensor of a sharded checkpoint folder (through its index)."""
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        index = json.load(f)
    out = {}
    for shard in sorted(set(index["weight_map"].values())):
        out.update(read_safetensors(os.path.join(folder, shard)))
    return out


def schema_components(path):
    with open(path) as f:
        return {c["id"]: c for c in json.load(f)["components"]}


def write_safetensors(path, tensors, header_text=None):
    """Writes name -> (dtype, shape, bytes); header_text replaces the JSON header as given."""
    header, blob, offset = {}, b"", 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(data)]}
        blob += data
        offset += len(data)
    text = header_text if header_text is not None else json.dumps(header)
    raw = text.encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + blob)


# ---- a DLPack consumer written against the spec, in ctypes ------------------

# private function objects: ctypes.pythonapi.X is shared with every other user
_capsule_is_valid = ctypes.pythonapi["PyCapsule_IsValid"]
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi["PyCapsule_GetPointer"]
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_set_name = ctypes.pythonapi["PyCapsule_SetName"]
_capsule_set_name.restype = ctypes.c_int
_capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]
_USED_VERSIONED = ctypes.create_string_buffer(b"used_dltensor_versioned")  # outlives every capsule renamed
_USED_LEGACY = ctypes.create_string_buffer(b"used_dltensor")


class Consumed:
    """What a consumer took from a capsule: the managed tensor, read field by field, and its deleter."""

    def __init__(self, capsule, versioned):
        name = b"dltensor_versioned" if versioned else b"dltensor"
        if not _capsule_is_valid(capsule, name):
            raise AssertionError(f"not a {name.decode()} capsule")
        self.address = _capsule_pointer(capsule, name)
        cls = dlpack.DLManagedTensorVersioned if versioned else dlpack.DLManagedTensor
        self.managed = cls.from_address(self.address)
        self.versioned = versioned
        # taking ownership: the capsule's destructor must no longer delete it
        _capsule_set_name(capsule, ctypes.cast(_USED_VERSIONED if versioned else _USED_LEGACY,
                                                    ctypes.c_char_p))
        t = self.managed.dl_tensor
        self.version = (self.managed.version.major, self.managed.version.minor) if versioned else None
        self.flags = self.managed.flags if versioned else None
        self.data = t.data
        self.device = (t.device.device_type, t.device.device_id)
        self.dtype = (t.dtype.code, t.dtype.bits, t.dtype.lanes)
        self.shape = tuple(t.shape[i] for i in range(t.ndim))
        self.strides = tuple(t.strides[i] for i in range(t.ndim)) if t.strides else None
        self.byte_offset = t.byte_offset
        self.deleted = False

    def delete(self):
        """Calls the producer's deleter, as a consumer does when it lets go."""
        assert not self.deleted
        self.deleted = True
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(self.managed.deleter)(self.address)


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
