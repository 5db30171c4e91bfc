"""What the Python benchmarks share: writing safetensors files of pseudo-random bytes, and dropping the page
cache for cold runs (root only)."""
import json
import os
import struct
import subprocess


def write_safetensors(path, tensors):
    """tensors: [(name, nbytes)]; F32 data of pseudo-random bytes, written in 64 MiB blocks."""
    header, offset = {}, 0
    for name, nbytes in tensors:
        header[name] = {"dtype": "F32", "shape": [nbytes // 4], "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    raw += b" " * ((64 - (8 + len(raw)) % 64) % 64)
    block = os.urandom(64 << 20)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        for _, nbytes in tensors:
            left = nbytes
            while left:
                n = min(left, len(block))
                f.write(block[:n])
                left -= n


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def can_drop_caches():
    try:
        drop_caches()
        return True
    except OSError:
        return False
