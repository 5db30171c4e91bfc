#!/usr/bin/python3
"""rootspan.safetensors against the reference library (safetensors from PyPI),
call for call: the same input through both, the results, the exceptions and
the bytes compared. Needs the reference, so it runs in the virtual
environment of tools/test-python-venv.sh, not under Debian's Python.

- written files: byte for byte the reference's (every dtype, scalar and
  empty tensors, metadata, from numpy and from torch);
- read files: whatever the reference writes loads identically through the
  drop-in and through rootspan.Context.load (1 to 10,000 tensors);
- refused files: every mutation of a valid file that the reference refuses,
  rootspan refuses, with the same words; what it accepts rootspan accepts,
  unless the difference is one of rootspan's documented stricter rules;
- bad calls: the same exception type and message.
"""
import gc
import json
import os
import random
import struct
import sys
import tempfile
import unittest

try:
    import numpy
    import torch
    import safetensors as reference
    import safetensors.numpy as reference_numpy
    import safetensors.torch as reference_torch
except ImportError as missing:
    print(f"skipped: {missing} (the parity suite needs the reference safetensors, numpy and torch)")
    sys.exit(77)

import rootspan
import rootspan.safetensors as dropin
import rootspan.safetensors.numpy as dropin_numpy
import rootspan.safetensors.torch as dropin_torch

# What rootspan refuses and the reference accepts, each documented in docs/python.md.
STRICTER = ("duplicate key", "unknown field", "byte-order mark", "has at most")
# Refusals both make, worded by each library's own parser after these words.
OWN_WORDS = ("Error while deserializing header: invalid JSON in header:",
             "Error while deserializing header: invalid UTF-8 in header:")


def outcome(call):
    """("ok", value) or (exception type name, message)."""
    try:
        return "ok", call()
    except Exception as e:  # noqa: BLE001 (the comparison is the point)
        kind = "SafetensorError" if type(e).__name__ in ("SafetensorError", "SafetensorTypeError") else \
            type(e).__name__
        return kind, str(e)


def torch_bytes(tensor):
    return tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""


class Parity(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        gc.collect()
        self._dir.cleanup()

    def path(self, name):
        return os.path.join(self._dir.name, name)

    def assertSameTensors(self, path, framework):
        with reference.safe_open(path, framework=framework) as ref, dropin.safe_open(path, framework=framework) as f:
            self.assertEqual(f.keys(), ref.keys())
            self.assertEqual(f.metadata(), ref.metadata())
            self.assertEqual(sorted(f.offset_keys()), sorted(ref.offset_keys()))
            for name in ref.keys():
                want, got = ref.get_tensor(name), f.get_tensor(name)
                if framework == "pt":
                    self.assertEqual((got.dtype, got.shape), (want.dtype, want.shape), name)
                    self.assertEqual(torch_bytes(got), torch_bytes(want), name)
                else:
                    self.assertEqual((got.dtype, got.shape), (want.dtype, want.shape), name)
                    self.assertEqual(got.tobytes(), want.tobytes(), name)

    def test_numpy_files_are_written_byte_for_byte(self):
        arrays = {"f64": numpy.arange(5.0), "f32": numpy.ones((2, 3), numpy.float32), "f16": numpy.zeros(4, "f2"),
                  "i64": numpy.arange(3), "u64": numpy.arange(2, dtype=numpy.uint64), "i32": numpy.int32([-1]),
                  "u32": numpy.uint32([7]), "i16": numpy.int16([1, 2]), "u16": numpy.uint16([3]),
                  "i8": numpy.int8([-5]), "u8": numpy.uint8([250]), "bool": numpy.array([True, False]),
                  "c64": numpy.complex64([1 + 2j]), "scalar": numpy.array(2.5, numpy.float32),
                  "empty": numpy.zeros((0, 4), numpy.float32), "naïve name": numpy.zeros(1, numpy.uint8)}
        for metadata in (None, {}, {"format": "np"}):
            self.assertEqual(dropin_numpy.save(arrays, metadata=metadata) if metadata != {} or arrays else None,
                             reference_numpy.save(arrays, metadata=metadata), metadata)
            for one in arrays:
                subset = {one: arrays[one]}
                self.assertEqual(dropin_numpy.save(subset, metadata=metadata),
                                 reference_numpy.save(subset, metadata=metadata), (one, metadata))
        dropin_numpy.save_file(arrays, self.path("d.safetensors"))
        reference_numpy.save_file(arrays, self.path("r.safetensors"))
        with open(self.path("d.safetensors"), "rb") as d, open(self.path("r.safetensors"), "rb") as r:
            self.assertEqual(d.read(), r.read())

    def test_metadata_of_several_keys_says_the_same(self):
        arrays = {"w": numpy.ones(3, numpy.float32)}
        metadata = {"b": "1", "a": "2", "format": "pt", "quote\"and\nnewline": "é"}
        ours, theirs = dropin_numpy.save(arrays, metadata), reference_numpy.save(arrays, metadata)
        self.assertEqual(len(ours), len(theirs), "the same layout; only the key order of the map may differ")
        self.assertEqual(reference_numpy.load(ours)["w"].tolist(), [1.0] * 3)
        header = json.loads(ours[8:8 + struct.unpack_from("<Q", ours)[0]])
        self.assertEqual(header["__metadata__"], metadata)
        self.assertEqual(list(header["__metadata__"]), list(metadata), "the caller's order is kept")

    def test_torch_files_are_written_byte_for_byte(self):
        tensors = {"f32": torch.randn(3, 4), "bf16": torch.randn(5).bfloat16(), "f16": torch.randn(2).half(),
                   "bool": torch.tensor([True, False]), "c64": torch.randn(2, dtype=torch.complex64),
                   "i64": torch.arange(6).reshape(2, 3), "scalar": torch.tensor(1.5), "empty": torch.zeros(0)}
        for name in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float8_e4m3fnuz", "float8_e5m2fnuz",
                     "uint16", "uint32", "uint64"):
            if hasattr(torch, name):
                tensors[name] = torch.zeros(4).to(getattr(torch, name))
        if hasattr(torch, "float4_e2m1fn_x2"):
            tensors["f4"] = torch.zeros(2, 2, dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
        self.assertEqual(dropin_torch.save(tensors, {"format": "pt"}), reference_torch.save(tensors, {"format": "pt"}))
        path = self.path("t.safetensors")
        reference_torch.save_file(tensors, path)
        self.assertSameTensors(path, "pt")
        # load(bytes): the reference's table lacks some types its own safe_open reads (F8_E8M0, F4)
        known = {name: t for name, t in tensors.items() if t.dtype in reference_torch._TYPES.values()}
        loaded = dropin_torch.load(reference_torch.save(known))
        for name, tensor in reference_torch.load(reference_torch.save(known)).items():
            self.assertEqual(torch_bytes(loaded[name]), torch_bytes(tensor), name)
        everything = dropin_torch.load(reference_torch.save(tensors))
        self.assertEqual({n: t.dtype for n, t in everything.items()}, {n: t.dtype for n, t in tensors.items()})

    def test_files_the_reference_writes_load_identically(self):
        rng = numpy.random.default_rng(7)
        for count in (1, 10, 1000, 10000):
            arrays = {f"layers.{i}.w": rng.standard_normal(int(rng.integers(0, 5)), dtype=numpy.float32)
                      for i in range(count)}
            path = self.path(f"n{count}.safetensors")
            reference_numpy.save_file(arrays, path, metadata={"count": str(count)})
            self.assertSameTensors(path, "np")
            with rootspan.Context(manifests=[]) as ctx, ctx.load(path) as weights:
                loaded = {c.source_name: c.root.read() for c in weights.values()}
                for name, array in arrays.items():
                    self.assertEqual(loaded.get(name, b""), array.tobytes(), name)

    def test_mutated_files_are_refused_alike(self):
        arrays = {"a": numpy.arange(6, dtype=numpy.float32).reshape(2, 3), "b": numpy.ones(3, numpy.int16),
                  "c": numpy.zeros(2, numpy.uint8)}
        valid = reference_numpy.save(arrays, metadata={"k": "v"})
        n = struct.unpack_from("<Q", valid)[0]
        mutations = {"truncated": valid[:-1], "extended": valid + b"\0", "tiny": valid[:5], "empty": b"",
                     "length+1": struct.pack("<Q", n + 1) + valid[8:], "length-1": struct.pack("<Q", n - 1) + valid[8:],
                     "huge length": struct.pack("<Q", 2 ** 40) + valid[8:],
                     "null metadata": None, "leading space": None, "not an object": None}
        header = valid[8:8 + n]
        def with_header(text):
            text = text + b" " * (-len(text) % 8)
            return struct.pack("<Q", len(text)) + text + valid[8 + n:]
        mutations["null metadata"] = with_header(header.replace(b'{"k":"v"}', b"null"))
        mutations["leading space"] = with_header(b" " + header.strip())
        mutations["not an object"] = with_header(b"[" + header.strip()[1:-1] + b"]")
        for key in ("dtype", "shape", "data_offsets"):
            mutations[f"no {key}"] = with_header(header.replace(f'"{key}"'.encode(), b'"zz"', 1))
        mutations["unknown dtype"] = with_header(header.replace(b'"F32"', b'"F33"'))
        mutations["shape mismatch"] = with_header(header.replace(b"[2,3]", b"[3,3]"))
        mutations["offset hole"] = with_header(header.replace(b"[0,24]", b"[2,26]"))
        rng = random.Random(20)
        for i in range(300):  # single-byte changes inside the header
            at = 8 + rng.randrange(n)
            mutations[f"byte {at - 8} -> {i}"] = valid[:at] + bytes([rng.randrange(256)]) + valid[at + 1:]
        differences = []
        for label, blob in mutations.items():
            path = self.path("m.safetensors")
            with open(path, "wb") as f:
                f.write(blob)
            theirs = outcome(lambda: reference.safe_open(path, framework="np").keys())
            ours = outcome(lambda: dropin.safe_open(path, framework="np").keys())
            if theirs[0] == "ok" and ours[0] == "ok":
                self.assertEqual(ours, theirs, label)
                self.assertSameTensors(path, "np")
            elif theirs[0] != ours[0]:
                if theirs[0] == "ok" and any(rule in ours[1] for rule in STRICTER):
                    continue  # a documented stricter rule
                differences.append((label, theirs, ours))
            else:  # the same words; for JSON syntax and UTF-8, the same kind in the parser's own words
                kind = next((k for k in OWN_WORDS if theirs[1].startswith(k)), None)
                if kind is None:
                    self.assertEqual(ours[1], theirs[1], label)
                else:
                    self.assertTrue(ours[1].startswith(kind), (label, ours[1], theirs[1]))
        self.assertEqual(differences, [])

    def test_bad_calls_raise_alike(self):
        path = self.path("a.safetensors")
        reference_numpy.save_file({"a": numpy.arange(50, dtype=numpy.float32).reshape(10, 5)}, path)
        calls = [
            lambda m: m.safe_open(path, framework="jax2"),
            lambda m: m.safe_open(path, framework="pt", device="gpu"),
            lambda m: m.safe_open(path, framework="pt", device="mps:1"),
            lambda m: m.safe_open(path, framework="pt", device=-1),
            lambda m: m.safe_open(path, framework="np", device="cuda"),
            lambda m: m.safe_open(path, framework="np", backend="fast"),
            lambda m: m.safe_open(self.path("missing.safetensors"), framework="np"),
            lambda m: m.safe_open(path, framework="np").get_tensor("b"),
            lambda m: m.safe_open(path, framework="np").get_slice("b"),
            lambda m: m.deserialize(b"xx"),
            lambda m: m.serialize({"a": m.TensorSpec(dtype="float32", shape=[3], data_ptr=0, data_len=4)}),
            lambda m: m.TensorSpec(dtype="complex128", shape=[1], data_ptr=0, data_len=16),
        ]
        for index in ("[2:, 20]", "[:20]", "[2:, -6]", "[..., ...]", "[[0]]", "[None]", "[:, ::0]", "[0, 0, 0]",
                      "[1:9:2, 1:]", "[[]]", "[()]", "[-1]", "[..., 3]"):
            calls.append(lambda m, index=index: numpy.asarray(eval("s" + index, {"s": m.safe_open(
                path, framework="np").get_slice("a")})).tolist())
        for number, call in enumerate(calls):
            self.assertEqual(outcome(lambda: call(dropin)), outcome(lambda: call(reference)), number)
            gc.collect()

    def test_slices_agree_with_torch(self):
        path = self.path("s.safetensors")
        reference_torch.save_file({"t": torch.arange(120, dtype=torch.float32).reshape(4, 5, 6)}, path)
        with reference.safe_open(path, framework="pt") as ref, dropin.safe_open(path, framework="pt") as f:
            a, b = ref.get_slice("t"), f.get_slice("t")
            self.assertEqual((b.get_shape(), b.get_dtype()), (a.get_shape(), a.get_dtype()))
            for index in ((slice(None), 1), (slice(1, 3), slice(None), slice(0, 6, 2)), (Ellipsis, -1), 2):
                self.assertTrue(torch.equal(b[index], a[index]), index)


if __name__ == "__main__":
    unittest.main()
