"""A GGUF file's tensors: dense ones as torch tensors, quantized ones as their raw blocks with the ggml type.

usage: python gguf_blocks.py MODEL.gguf
"""
import sys

import rootspan
import rootspan.torch

path = sys.argv[1]
state = rootspan.torch.load(path)
with rootspan.Context(manifests=[]) as ctx, ctx.load(path) as weights:
    for name, tensor in state.items():
        c = weights[name]
        kind = c.format_id or c.dtype
        print(f"{name}: ggml type {c.gguf_type} ({kind}), {tuple(tensor.shape)} {tensor.dtype}")
