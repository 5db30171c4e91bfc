"""A verified load from a Hugging Face cache: each file hashed while it is read, refused if not the published one.

usage: python verified_load.py ~/.cache/huggingface/hub/models--org--name
"""
import sys

import rootspan
import rootspan.torch

try:
    state = rootspan.torch.load(sys.argv[1], verify=True)
except rootspan.DigestMismatchError as damaged:
    sys.exit(f"refused: {damaged}")
print(f"verified: {len(state)} tensors")
