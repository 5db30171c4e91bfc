"""The safetensors drop-in: code written for safetensors, with one import changed.

usage: python dropin.py FILE.safetensors
"""
import sys

import rootspan.safetensors as safetensors  # was: import safetensors

path = sys.argv[1]
with safetensors.safe_open(path, framework="np") as f:
    names = list(f.keys())
    first = f.get_slice(names[0])
    print(f"{len(names)} tensors; {names[0]}: {first.get_dtype()} {first.get_shape()}")
    rows = first[:2]  # only these rows are read
    print(f"first rows: shape {list(rows.shape)}")
