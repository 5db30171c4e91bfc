#!/usr/bin/python3
"""Verified loads from Python: verify= against a Hugging Face cache built
here (blobs named by their SHA-256), digests= against a manifest made by
rootspan.inspect.hash_checkpoint, weights.digests, and the errors: a
flipped byte, a manifest with a wrong per-rank digest, nothing to check
against, NUL bytes in string arguments; a per-tensor manifest binds each
component's dtype and shape and each file's header (issue 35 item 4). Runs
with numpy alone (Debian's python3 included); rootspan.torch.load(verify=True)
where torch is present.
"""
import hashlib
import importlib.util
import json
import os
import struct
import tempfile
import unittest

import rootspan
import rootspan.inspect

COMMIT = "c" * 40


def safetensors_bytes(tensors):
    header, blob = {}, b""
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    raw = json.dumps(header).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw)) + raw + blob


def safetensors_with_metadata(tensors, metadata):
    header = {"__metadata__": metadata}
    blob = b""
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + blob


def make_cache(root):
    """models--org--tiny with two shards (blobs named by SHA-256) and an index (a git object id)."""
    repo = os.path.join(root, "models--org--tiny")
    snapshot = os.path.join(repo, "snapshots", COMMIT)
    os.makedirs(os.path.join(repo, "blobs"))
    os.makedirs(snapshot)
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(COMMIT)
    shards = {"model-00001-of-00002.safetensors": {"w": ("F32", [6, 4], bytes(range(96)))},
              "model-00002-of-00002.safetensors": {"b": ("F32", [4], bytes(range(100, 116)))}}
    blobs = {}
    for name, tensors in shards.items():
        data = safetensors_bytes(tensors)
        blob = hashlib.sha256(data).hexdigest()
        with open(os.path.join(repo, "blobs", blob), "wb") as f:
            f.write(data)
        os.symlink(os.path.join("..", "..", "blobs", blob), os.path.join(snapshot, name))
        blobs[name] = os.path.join(repo, "blobs", blob)
    index = json.dumps({"metadata": {}, "weight_map": {"w": "model-00001-of-00002.safetensors",
                                                         "b": "model-00002-of-00002.safetensors"}}).encode()
    git_id = hashlib.sha1(b"blob %d\0" % len(index) + index).hexdigest()
    with open(os.path.join(repo, "blobs", git_id), "wb") as f:
        f.write(index)
    os.symlink(os.path.join("..", "..", "blobs", git_id), os.path.join(snapshot, "model.safetensors.index.json"))
    return repo, blobs


class VerifiedLoads(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory(prefix="rootspan-verified-")
        self.repo, self.blobs = make_cache(self._dir.name)
        self.ctx = rootspan.Context(manifests=[])

    def tearDown(self):
        self.assertEqual(self.ctx.close(), 0, "a failed load left a root live")
        self._dir.cleanup()

    def test_a_cache_load_is_checked_against_its_blob_names(self):
        with self.ctx.load(self.repo, provider="host", verify=True) as weights:
            report = weights.digests
            self.assertTrue(report["checked"])
            self.assertEqual([d["name"] for d in report["verified"]],
                             ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"])
            self.assertEqual({d["source"] for d in report["verified"]}, {"cache blob name"})
            self.assertEqual([u["file"] for u in report["unverifiable"]], ["model.safetensors.index.json"])
            self.assertEqual(bytes(weights["w"].numpy().tobytes()), bytes(range(96)))
        with self.ctx.load(self.repo, provider="host") as weights:
            self.assertEqual(weights.digests, {"checked": False, "verified": [], "unverifiable": []})

    def test_a_flipped_byte_is_refused_naming_the_file(self):
        blob = self.blobs["model-00002-of-00002.safetensors"]
        with open(blob, "r+b") as f:
            f.seek(-2, os.SEEK_END)
            byte = f.read(1)
            f.seek(-2, os.SEEK_END)
            f.write(bytes([byte[0] ^ 0x10]))
        with self.assertRaises(rootspan.DigestMismatchError) as caught:
            self.ctx.load(self.repo, provider="host", verify=True)
        self.assertIn('file "model-00002-of-00002.safetensors" is not the published one', str(caught.exception))
        self.assertIn("expected " + os.path.basename(blob), str(caught.exception))

    def test_a_manifest_with_a_wrong_digest_for_one_rank_only(self):
        split = {"w": 0}
        manifest = rootspan.inspect.hash_checkpoint(self.repo, per_tensor=True, world_size=2, split=split)
        self.assertEqual(len(manifest["components"]["ranks"]), 2)
        self.assertEqual(manifest["components"]["ranks"][0]["w"]["sha256"], hashlib.sha256(bytes(range(48))).hexdigest())
        manifest["components"]["ranks"][1]["w"]["sha256"] = "0" * 64
        path = os.path.join(self._dir.name, "digests.json")
        with open(path, "w") as f:
            json.dump(manifest, f)
        with self.ctx.load(self.repo, provider="host", rank=0, world_size=2, split=split, digests=path) as weights:
            self.assertEqual([d["kind"] for d in weights.digests["verified"]], ["file", "component", "component"])
        with self.assertRaisesRegex(rootspan.DigestMismatchError, 'component "w" is not the published one'):
            self.ctx.load(self.repo, provider="host", rank=1, world_size=2, split=split, digests=path)

    def test_a_per_tensor_manifest_binds_dtypes_shapes_and_headers(self):
        folder = os.path.join(self._dir.name, "single")
        os.makedirs(folder)
        path = os.path.join(folder, "model.safetensors")

        def write(w_dtype="F32", w_shape=(6, 4), fmt="pt"):
            with open(path, "wb") as f:
                f.write(safetensors_with_metadata({"w": (w_dtype, list(w_shape), bytes(range(96))),
                                                   "b": ("F32", [4], bytes(range(100, 116)))}, {"format": fmt}))

        write()
        manifest = rootspan.inspect.hash_checkpoint(folder, per_tensor=True)
        self.assertEqual(manifest["format_version"], 2)
        self.assertEqual(manifest["components"]["ranks"][0]["w"]["dtype"], "F32")
        self.assertEqual(manifest["components"]["ranks"][0]["w"]["shape"], [6, 4])
        with open(path, "rb") as f:
            raw = f.read()
        header = raw[:8 + struct.unpack("<Q", raw[:8])[0]]
        self.assertEqual(manifest["files"]["model.safetensors"]["header_sha256"], hashlib.sha256(header).hexdigest())
        digests = os.path.join(self._dir.name, "per-tensor.json")
        with open(digests, "w") as f:
            json.dump(manifest, f)
        with self.ctx.load(folder, provider="host", digests=digests) as weights:
            self.assertEqual(len(weights.digests["verified"]), 2)
        write(w_dtype="I32")
        with self.assertRaisesRegex(rootspan.DigestMismatchError,
                                    'component "w" has element type I32, but the digest manifest published F32'):
            self.ctx.load(folder, provider="host", digests=digests)
        write(w_shape=(4, 6))
        with self.assertRaisesRegex(rootspan.DigestMismatchError,
                                    r'component "w" has shape \[4, 6\], but the digest manifest published \[6, 4\]'):
            self.ctx.load(folder, provider="host", digests=digests)
        write(fmt="np")
        with self.assertRaisesRegex(rootspan.DigestMismatchError,
                                    'file "model.safetensors" does not have the published header'):
            self.ctx.load(folder, provider="host", digests=digests)
        manifest["format_version"] = 1
        with open(digests, "w") as f:
            json.dump(manifest, f)
        with self.assertRaisesRegex(rootspan.InvalidArgumentError, "rootspan hash --per-tensor"):
            self.ctx.load(folder, provider="host", digests=digests)

    def test_nothing_to_check_against_is_never_called_verified(self):
        single = os.path.join(self._dir.name, "single.safetensors")
        with open(self.blobs["model-00001-of-00002.safetensors"], "rb") as src, open(single, "wb") as dst:
            dst.write(src.read())
        with self.assertRaisesRegex(rootspan.NotFoundError, "nothing to check the digests of"):
            self.ctx.load(single, provider="host", verify=True)
        with self.assertRaisesRegex(rootspan.InvalidArgumentError, "not valid JSON"):
            bad = os.path.join(self._dir.name, "bad.json")
            with open(bad, "w") as f:
                f.write("{")
            self.ctx.load(single, provider="host", digests=bad)
        with self.assertRaisesRegex(TypeError, "verify must be True or False, got str .yes."):
            self.ctx.load(single, provider="host", verify="yes")

    def test_nul_bytes_in_strings_are_refused_not_truncated(self):
        # An application's .endswith(".safetensors") check passes; C would read the name up to the NUL.
        target = self.blobs["model-00001-of-00002.safetensors"] + "\0.safetensors"
        with self.assertRaisesRegex(ValueError, r"path contains a NUL byte at index \d+"):
            self.ctx.load(target, provider="host")
        with self.assertRaisesRegex(ValueError, "revision contains a NUL byte at index 4"):
            self.ctx.load(self.repo, provider="host", revision="main\0x")
        with self.assertRaisesRegex(ValueError, "tensor pattern contains a NUL byte"):
            self.ctx.load(self.repo, provider="host", tensors=["w\0"])
        with self.assertRaisesRegex(ValueError, "split pattern contains a NUL byte"):
            self.ctx.load(self.repo, provider="host", world_size=2, split={"w\0": 0})
        with self.assertRaisesRegex(ValueError, "provider contains a NUL byte"):
            self.ctx.load(self.repo, provider="host\0")
        with self.assertRaisesRegex(ValueError, "path contains a NUL byte"):
            rootspan.inspect.inspect(self.repo + "\0")
        with self.ctx.load(self.repo, provider="host") as weights:
            with self.assertRaisesRegex(ValueError, "component id contains a NUL byte"):
                weights["w\0"]

    @unittest.skipUnless(importlib.util.find_spec("torch"), "needs torch")
    def test_torch_load_with_verify(self):
        import rootspan.torch
        state = rootspan.torch.load(self.repo, verify=True)
        self.assertEqual(sorted(state), ["b", "w"])


if __name__ == "__main__":
    unittest.main()
