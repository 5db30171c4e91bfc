#!/usr/bin/python3
"""rootspan.safetensors beside the reference safetensors on the same files, in one run.

usage: PYTHONPATH=bindings/python ROOTSPAN_LIBRARY=build/librootspan.so \\
           build/python-venv/bin/python bindings/python/bench/safetensors_bench.py [--gib N] [--rounds R]

Each measure runs R rounds (default 5) alternating the two libraries, and
reports the median and the slowest in milliseconds, and the ratio
drop-in / reference of the medians (below 1: the drop-in is faster):
  - open + keys: safe_open and keys() of a file of 10,000 small tensors,
    and load_file (torch) of that file;
  - load_file numpy / torch: every tensor of a file of one N GiB F32 tensor
    (default 1), as numpy arrays and as torch tensors, without touching them;
  - get_slice 1/8: an eighth of the rows of that tensor, as torch;
  - first touch: load_file (torch) and then read one byte of every page.
The files are written once to a temporary folder (page cache warm for
both) and removed at the end.
"""
import argparse
import gc
import os
import statistics
import tempfile
import time

import numpy
import torch

import safetensors as reference
import safetensors.numpy as reference_numpy
import safetensors.torch as reference_torch
import rootspan.safetensors as dropin
import rootspan.safetensors.numpy as dropin_numpy
import rootspan.safetensors.torch as dropin_torch

PAGE = os.sysconf("SC_PAGE_SIZE")


def timed(call):
    gc.collect()
    start = time.perf_counter()
    result = call()
    elapsed = time.perf_counter() - start
    del result
    gc.collect()
    return elapsed * 1000


def keys(module, path):
    with module.safe_open(path, framework="np") as f:
        return f.keys()


def touch_every_page(tensors):
    total = 0
    for t in tensors.values():
        flat = t.reshape(-1).view(torch.uint8)
        total += int(flat[::PAGE].sum())
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        many = os.path.join(folder, "many.safetensors")
        reference_numpy.save_file({f"model.layers.{i}.w": numpy.zeros(4, numpy.float32) for i in range(10000)}, many)
        big = os.path.join(folder, "big.safetensors")
        rows = int(args.gib * (1 << 30)) // (4 * 4096)
        reference_numpy.save_file({"w": numpy.ones((rows, 4096), numpy.float32)}, big)

        def measures(module, np_module, pt_module):
            return {
                "open + keys (10,000 tensors)": lambda: keys(module, many),
                "load_file torch (10,000 tensors)": lambda: pt_module.load_file(many),
                f"load_file numpy ({args.gib:g} GiB)": lambda: np_module.load_file(big),
                f"load_file torch ({args.gib:g} GiB)": lambda: pt_module.load_file(big),
                "get_slice 1/8 of the rows (torch)": lambda: module.safe_open(big, framework="pt").get_slice("w")[
                    : rows // 8].clone(),
                "load_file torch + first touch": lambda: touch_every_page(pt_module.load_file(big)),
            }
        ours = measures(dropin, dropin_numpy, dropin_torch)
        theirs = measures(reference, reference_numpy, reference_torch)
        print(f"{'measure':40} {'reference ms':>14} {'slowest':>9} {'rootspan ms':>13} {'slowest':>9} {'ratio':>7}")
        for name in ours:
            times = {"reference": [], "rootspan": []}
            for _ in range(args.rounds):
                times["reference"].append(timed(theirs[name]))
                times["rootspan"].append(timed(ours[name]))
            ref, mine = statistics.median(times["reference"]), statistics.median(times["rootspan"])
            print(f"{name:40} {ref:14.2f} {max(times['reference']):9.2f} {mine:13.2f} {max(times['rootspan']):9.2f} "
                  f"{mine / ref:7.2f}")


if __name__ == "__main__":
    main()
