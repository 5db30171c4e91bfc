"""What the Python benchmarks share: their command line, writing safetensors files of pseudo-random bytes, and
dropping the page cache for cold runs (root only)."""
import argparse
import json
import os
import struct
import subprocess
import tempfile


def parse_args(doc, work_name, add=None):
    """ROOTSPAN_EXE [WORK_DIR] [--repeat N], and what `add` adds to the parser."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("exe", help="the rootspan program (build/tools/rootspan)")
    parser.add_argument("work", nargs="?", default=os.path.join(tempfile.gettempdir(), work_name),
                        help="where the checkpoints are written (kept between runs)")
    parser.add_argument("--repeat", type=int, default=5, help="interleaved rounds (default 5)")
    if add:
        add(parser)
    args = parser.parse_args()
    args.exe = os.path.abspath(args.exe)
    return args


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
