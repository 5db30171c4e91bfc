"""A sentence-transformers model whose weights rootspan loaded: the model computes on the loaded memory.

usage: python torch_model.py MODEL_FOLDER   (a folder with model.safetensors and the model's config)
"""
import os
import sys

import torch
from sentence_transformers import SentenceTransformer

import rootspan.torch

folder = sys.argv[1]
model = SentenceTransformer(folder, device="cpu")
reference = model.encode(["rootspan loads weights"], convert_to_tensor=True)
state = rootspan.torch.load(os.path.join(folder, "model.safetensors"))  # {name: tensor}, zero-copy
missing, unexpected = model[0].auto_model.load_state_dict(state, strict=False, assign=True)
print(f"loaded {len(state)} tensors; missing {missing}, unexpected {unexpected}")
embedding = model.encode(["rootspan loads weights"], convert_to_tensor=True)
print("identical embeddings:", torch.equal(reference, embedding))
