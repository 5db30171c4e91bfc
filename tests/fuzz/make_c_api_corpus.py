#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_c_api (tests/fuzz/corpus/c_api/).

The target decodes its input with libFuzzer's FuzzedDataProvider, which takes
integers from the end of the input: a hand-made seed would have to mirror that
decoder, so the seeds are pseudo-random bytes of a few lengths from fixed RNG
seeds (short inputs exercise a few calls, long ones whole call sequences).
The fuzzer takes it from there. Usage: make_c_api_corpus.py [FOLDER]
"""
import pathlib
import random
import sys

SEEDS = {
    "short-64": (1, 64),
    "calls-256": (2, 256),
    "calls-512": (3, 512),
    "sequence-1k": (4, 1024),
    "sequence-2k": (5, 2048),
    "long-4k": (6, 4096),
    "zeros-256": (None, 256),  # every choice 0: a context, then context_create calls
    "ones-256": ("ff", 256),  # every choice at its maximum
}


def main(folder):
    folder.mkdir(parents=True, exist_ok=True)
    for name, (seed, length) in SEEDS.items():
        if seed is None:
            data = bytes(length)
        elif seed == "ff":
            data = b"\xff" * length
        else:
            data = random.Random(seed).randbytes(length)
        (folder / name).write_bytes(data)


if __name__ == "__main__":
    default = pathlib.Path(__file__).resolve().parent / "corpus" / "c_api"
    main(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else default)
