#!/usr/bin/python3
"""Time ctx.load + numpy() against numpy.memmap of the same files, in one run.

usage: PYTHONPATH=bindings/python ROOTSPAN_LIBRARY=build/librootspan.so \\
           /usr/bin/python3 bindings/python/bench/load_bench.py [EXAMPLE_CHECKPOINT] [--gib N]

Two inputs: the example checkpoint the build writes (two shards, five small
tensors), and a safetensors file of one F32 tensor of N GiB (default 1)
written to a temporary folder and deleted at the end. For each, the median of
several rounds of:
  - rootspan mmap: ctx.load(strategy="mmap") + numpy() of every component;
  - rootspan read: the same with strategy="read" (every byte copied with pread);
  - numpy.memmap:  the header parsed with json + struct, one memmap per tensor;
each once as "open" (the arrays made, no byte read) and once as "open + read"
(every byte summed once). The page cache is warm for all of them: the file
was just written, and each round reads it.
"""
import gc
import json
import os
import statistics
import struct
import sys
import tempfile
import time

import numpy

import rootspan

TYPESTR = {"F16": "<f2", "F32": "<f4", "F64": "<f8", "U8": "|u1", "I8": "|i1", "I32": "<i4", "I64": "<i8"}


def memmap_tensors(files):
    """Every tensor of the safetensors files as a numpy.memmap."""
    arrays = []
    for path in files:
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        header.pop("__metadata__", None)
        for t in header.values():
            begin, end = t["data_offsets"]
            arrays.append(numpy.memmap(path, dtype=TYPESTR[t["dtype"]], mode="r", offset=8 + n + begin,
                                       shape=tuple(t["shape"])))
    return arrays


def consume(arrays):
    return sum(int(a.view(numpy.uint8).sum(dtype=numpy.uint64)) for a in arrays)


def median_seconds(fn, rounds):
    times = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(label, path, files, schema, rounds, ctx):
    def rootspan_run(strategy, read):
        def run():
            with ctx.load(path, schema=schema, strategy=strategy) as weights:
                arrays = [c.numpy() for c in weights.values()]
                total = consume(arrays) if read else 0
                del arrays
            return total
        return run

    def memmap_run(read):
        def run():
            arrays = memmap_tensors(files)
            total = consume(arrays) if read else 0
            del arrays
            return total
        return run

    # the same bytes, whichever way they were reached
    assert rootspan_run("mmap", True)() == memmap_run(True)() == rootspan_run("read", True)()
    print(f"\n{label} ({rounds} rounds, median)")
    print(f"  {'':24}{'open':>12}{'open + read':>14}")
    base = {}
    for name, make in (("numpy.memmap", memmap_run), ("rootspan mmap", lambda r: rootspan_run("mmap", r)),
                       ("rootspan read", lambda r: rootspan_run("read", r))):
        open_s = median_seconds(make(False), rounds)
        read_s = median_seconds(make(True), rounds)
        base.setdefault("open", open_s)
        base.setdefault("read", read_s)
        print(f"  {name:24}{open_s * 1e3:10.3f} ms{read_s * 1e3:11.3f} ms   "
              f"x{open_s / base['open']:.2f} / x{read_s / base['read']:.2f} of numpy.memmap")


def write_big(path, gib):
    count = gib * (1 << 30) // 4
    header = json.dumps({"big": {"dtype": "F32", "shape": [count], "data_offsets": [0, count * 4]}}).encode()
    header += b" " * ((8 - len(header) % 8) % 8)
    chunk = 1 << 24
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header)
        for start in range(0, count, chunk):
            f.write(numpy.arange(start, min(start + chunk, count), dtype="<u4").view("<f4").tobytes())


def main():
    args = sys.argv[1:]
    gib = 1
    if "--gib" in args:
        i = args.index("--gib")
        gib = int(args[i + 1])
        del args[i:i + 2]
    example = args[0] if args else os.environ.get("ROOTSPAN_EXAMPLE_CHECKPOINT", "build/tools/example-checkpoint")
    print(f"librootspan {rootspan.version()} from {rootspan.library_path()}; numpy {numpy.__version__}")
    with rootspan.Context(manifests=[]) as ctx:
        shards = sorted(os.path.join(example, f) for f in os.listdir(example) if f.endswith(".safetensors"))
        bench("example checkpoint (default schema: 5 tensors, 2 shards, 50 KiB)", example, shards, None, 200, ctx)
        with tempfile.TemporaryDirectory(prefix="rootspan-bench-") as folder:
            big = os.path.join(folder, "big.safetensors")
            write_big(big, gib)
            try:
                bench(f"one F32 tensor of {gib} GiB", big, [big], None, 5, ctx)
            finally:
                os.remove(big)


if __name__ == "__main__":
    main()
