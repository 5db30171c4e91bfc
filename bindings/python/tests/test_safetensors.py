#!/usr/bin/python3
"""rootspan.safetensors on its own (no reference library needed; Debian's
numpy 1.24 and torch 1.13 as well as current ones): the written layout
checked against an independent reader, round trips of every element type
each torch has, tensors that are writable (copy-on-write: the file never
changes) and outlive their handle, closing that gives back exactly what
nothing uses, the reference's exception types and words for bad calls and
bad files, and no mapping left behind over 1,000 handles.
"""
import gc
import json
import os
import pathlib
import struct
import sys
import tempfile
import threading
import unittest
from unittest import mock

try:
    import numpy
    import torch
except ImportError as missing:
    print(f"skipped: {missing} (the safetensors drop-in suite needs numpy and torch)")
    sys.exit(77)

import rootspan.safetensors as safetensors
from rootspan.safetensors import SafetensorError, safe_open
from rootspan.safetensors import numpy as st_numpy
from rootspan.safetensors import torch as st_torch
from support import read_safetensors, run_python


def mappings_of(path):
    """How many mappings of path this process has (/proc/self/maps)."""
    real = os.path.realpath(path)
    with open("/proc/self/maps") as maps:
        return sum(1 for line in maps if line.rstrip().endswith(" " + real))


def raw_file(path, header, data=b""):
    """A file of an 8-byte length, header (bytes, as given) and data."""
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)
    return path


def close_while_reading(handle, reads):
    """Closes a safe_open handle while each of reads (a callable) runs on a thread of its own; returns once all
    have ended."""
    threads = [threading.Thread(target=read) for read in reads]
    for t in threads:
        t.start()
    handle.__exit__(None, None, None)
    for t in threads:
        t.join()


class Folder(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory()
        self.dir = self._dir.name

    def tearDown(self):
        gc.collect()
        self._dir.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)


class Writing(Folder):
    def test_layout_is_the_formats(self):
        tensors = {"b": numpy.arange(3, dtype=numpy.float16), "a": numpy.ones((2, 2), numpy.int32),
                   "flag": numpy.array([True, False]), "wide": numpy.zeros(1, numpy.float64)}
        blob = st_numpy.save(tensors, metadata={"format": "np"})
        (n,) = struct.unpack_from("<Q", blob)
        self.assertEqual(n % 8, 0, "the header is padded to 8 bytes")
        header_text = blob[8:8 + n]
        self.assertEqual(header_text.rstrip(b" "), json.dumps(json.loads(header_text), separators=(",", ":"))
                         .encode(), "compact JSON, spaces only as padding")
        header = json.loads(header_text)
        self.assertEqual(list(header), ["__metadata__", "wide", "a", "b", "flag"],
                         "metadata first, then the widest element type first, by name within a type")
        self.assertEqual(header["a"], {"dtype": "I32", "shape": [2, 2], "data_offsets": [8, 24]})
        path = self.path("m.safetensors")
        st_numpy.save_file(tensors, path, metadata={"format": "np"})
        with open(path, "rb") as f:
            self.assertEqual(f.read(), blob, "save and save_file write the same bytes")
        for name, (dtype, shape, data) in read_safetensors(path).items():
            self.assertEqual(data, numpy.ascontiguousarray(tensors[name]).tobytes(), name)

    def test_non_contiguous_and_big_endian_arrays_are_written_in_c_order_little_endian(self):
        base = numpy.arange(12, dtype=">i4").reshape(3, 4)
        blob = st_numpy.save({"t": base.T})
        self.assertTrue(numpy.array_equal(st_numpy.load(blob)["t"], base.T))

    def test_torch_refuses_shared_sparse_and_non_contiguous_tensors(self):
        a = torch.zeros(4)
        with self.assertRaisesRegex(RuntimeError, "Some tensors share memory"):
            st_torch.save({"a": a, "b": a[:2]})
        with self.assertRaisesRegex(ValueError, "non contiguous tensor: `t`"):
            st_torch.save({"t": torch.zeros(2, 3).T})
        with self.assertRaisesRegex(ValueError, r"Key `x` is invalid, expected torch.Tensor"):
            st_torch.save({"x": [1, 2]})

    def test_tensor_spec_and_serialize_refuse_wrong_input(self):
        with self.assertRaisesRegex(SafetensorError, 'Unknown dtype "floaty"'):
            safetensors.TensorSpec(dtype="floaty", shape=[1], data_ptr=0, data_len=4)
        with self.assertRaisesRegex(SafetensorError, "invalid shape, data type, or offset"):
            safetensors.serialize({"a": {"dtype": "float32", "shape": [2], "data": b"\0" * 4}})
        with self.assertRaises(SafetensorError):  # also a TypeError, as another release raised
            safetensors.serialize({"a": {"dtype": "float32", "shape": [1]}})
        with self.assertRaisesRegex(TypeError, "'int' object is not an instance of 'str'"):
            st_numpy.save({"a": numpy.zeros(1)}, metadata={"k": 1})
        spec = safetensors.TensorSpec(dtype="float4_e2m1fn_x2", shape=[2, 2], data_ptr=0, data_len=4)
        self.assertEqual((spec.dtype, spec.shape), ("F4", [2, 4]), "F4's logical shape doubles the last dimension")


class Reading(Folder):
    def test_every_element_type_torch_has_round_trips(self):
        tensors = {"f32": torch.randn(3, 2), "f16": torch.randn(4).half(), "bf16": torch.randn(5).bfloat16(),
                   "bool": torch.tensor([True, False, True]), "c64": torch.randn(2, dtype=torch.complex64),
                   "i64": torch.arange(4), "u8": torch.arange(5, dtype=torch.uint8),
                   "scalar": torch.tensor(2.5), "empty": torch.zeros(2, 0)}
        for name in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "uint16", "uint32", "uint64"):
            if hasattr(torch, name):
                tensors[name] = torch.zeros(3).to(getattr(torch, name))
        path = self.path("all.safetensors")
        st_torch.save_file(tensors, path)
        loaded = st_torch.load_file(path)
        self.assertEqual(set(loaded), set(tensors))
        for name, tensor in tensors.items():
            got = loaded[name]
            self.assertEqual((got.dtype, got.shape), (tensor.dtype, tensor.shape), name)
            self.assertEqual(got.reshape(-1).view(torch.uint8).tolist(), tensor.reshape(-1).view(torch.uint8).tolist(),
                             name)
        self.assertEqual(st_torch.load(st_torch.save(tensors))["bf16"].tolist(), tensors["bf16"].tolist())

    def test_a_type_this_torch_lacks_is_refused_by_name(self):
        path = self.path("u16.safetensors")
        st_numpy.save_file({"w": numpy.arange(3, dtype=numpy.uint16)}, path)
        if hasattr(torch, "uint16"):
            self.assertEqual(st_torch.load_file(path)["w"].tolist(), [0, 1, 2])
        else:
            with self.assertRaisesRegex(SafetensorError, r"U16 is torch.uint16, which torch .* lacks \(torch 2.3"):
                st_torch.load_file(path)
        self.assertEqual(st_numpy.load_file(path)["w"].tolist(), [0, 1, 2])

    def test_keys_metadata_and_null_metadata(self):
        path = self.path("k.safetensors")
        st_numpy.save_file({"b": numpy.zeros(2, numpy.uint8), "a": numpy.zeros(1, numpy.float32)}, path)
        with safe_open(path, framework="np") as f:
            self.assertEqual(f.keys(), ["a", "b"])
            self.assertEqual(f.offset_keys(), ["a", "b"])
            self.assertIsNone(f.metadata())
        st_numpy.save_file({"a": numpy.zeros(1, numpy.float32)}, path, metadata={})
        with safe_open(path, framework="np") as f:
            self.assertEqual(f.metadata(), {})
        header = b'{"__metadata__":null,"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
        with safe_open(raw_file(self.path("mlx.safetensors"), header, b"\0" * 4), framework="pt") as f:
            self.assertIsNone(f.metadata(), "an MLX adapter's null metadata is no metadata")
            self.assertEqual(f.get_tensor("w").tolist(), [0.0])

    def test_slices(self):
        path = self.path("s.safetensors")
        a = numpy.arange(50, dtype=numpy.float32).reshape(10, 5)
        st_numpy.save_file({"a": a}, path)
        for framework in ("np", "pt"):
            with safe_open(path, framework=framework) as f:
                view = f.get_slice("a")
            self.assertEqual((view.get_shape(), view.get_dtype()), ([10, 5], "F32"))
            for index in (numpy.s_[:2], numpy.s_[:, 1:3], numpy.s_[2:, -1], numpy.s_[..., 4], numpy.s_[1:9:3]):
                got = view[index]
                self.assertEqual(numpy.asarray(got).tolist(), a[index].tolist(), (framework, index))
        with safe_open(path, framework="np") as f:
            view = f.get_slice("a")
            with self.assertRaisesRegex(SafetensorError, r"Error during slicing \[2:, 20\] with shape \[10, 5\]: "
                                                         r"index 20 out of bounds for tensor dimension #1 of size 5"):
                view[2:, 20]
            with self.assertRaisesRegex(SafetensorError, "Invalid index -6 for dimension 1 of size 5"):
                view[2:, -6]
            self.assertEqual(f.get_strided_slice("a", 1, [(3, 5), (0, 1)]).tolist(),
                             numpy.concatenate([a[:, 3:5], a[:, 0:1]], axis=1).tolist())


class TensorParallelTypes(Folder):
    def test_load_shard_hands_torch_every_type_it_has(self):
        import rootspan.torch
        tensors = {"flag": torch.tensor([True, False, True, True]), "w": torch.arange(8.0).reshape(4, 2)}
        if hasattr(torch, "float8_e4m3fn"):
            tensors["f8"] = torch.ones(4, 2).to(torch.float8_e4m3fn)
        path = self.path("tp.safetensors")
        st_torch.save_file(tensors, path)
        for strategy in ("read", "mmap"):
            shard = rootspan.torch.load_shard(path, 1, 2, split={"*": 0}, strategy=strategy)
            for name, tensor in tensors.items():
                self.assertEqual(shard[name].dtype, tensor.dtype, name)
                self.assertEqual(shard[name].reshape(-1).view(torch.uint8).tolist(),
                                 tensor[2:].reshape(-1).view(torch.uint8).tolist(), (strategy, name))


class TorchLoad(Folder):
    def test_iter_tensors_yields_file_order_and_gives_each_tensor_back_when_dropped(self):
        import rootspan.torch
        path = self.path("it.safetensors")
        st_torch.save_file({"b": torch.ones(1024), "a": torch.zeros(2, 0), "c": torch.arange(4),
                            "odd name!": torch.ones(2)}, path)
        with safe_open(path, framework="np") as f:
            order = f.offset_keys()
        iterator = rootspan.torch.iter_tensors(path)
        name, first = next(iterator)  # kept
        seen = [name] + [name for name, _ in iterator]  # each of the others dropped at once
        self.assertEqual(seen, order, "file order, the file's own names (one that is not an id included)")
        gc.collect()
        self.assertGreater(mappings_of(path), 0, "the first tensor is still held")
        self.assertEqual(first.numpy().tobytes(), read_safetensors(path)[seen[0]][2], "the bytes of the file")
        del first
        gc.collect()
        self.assertEqual(mappings_of(path), 0, "every tensor dropped, nothing of the file is left")
        loaded = rootspan.torch.load(path, tensors=["b", "c"])
        self.assertEqual(list(loaded), [n for n in order if n in ("b", "c")])
        self.assertEqual(rootspan.torch.load(path)["a"].shape, (2, 0))

    def test_iter_tensors_of_copies_holds_no_lease_of_a_tensor_it_gave_out(self):
        # Copied tensors each hold their own lease (one mapping of their memory); the iterator, suspended
        # between tensors, holds only those of the tensors still to come. An empty tensor (no lease) sends the
        # iterator down its other path, the one that describes the file first.
        import rootspan.torch
        from rootspan import _contexts
        leases = lambda: _contexts.host()._state.leases  # noqa: E731
        written = {"a": torch.ones(8), "b": torch.arange(4), "c": torch.zeros(3)}
        for case, tensors in (("every tensor with bytes", written), ("an empty one too", {**written, "e": torch.ones(0)})):
            with self.subTest(case):
                path = self.path(f"copies-{len(tensors)}.safetensors")
                st_torch.save_file(tensors, path)
                gc.collect()
                before = leases()
                iterator = rootspan.torch.iter_tensors(path, strategy="read")
                to_come, seen = 3, []
                for _ in tensors:
                    name, tensor = next(iterator)
                    self.assertTrue(torch.equal(tensor, tensors[name]), name)
                    to_come -= tensor.numel() > 0
                    seen.append(name)
                    del tensor
                    gc.collect()
                    self.assertEqual(leases() - before, to_come, f"a dropped tensor's lease ({name}) must be gone")
                self.assertEqual(sorted(seen), sorted(tensors))
                self.assertEqual(list(iterator), [])

    def test_load_hands_views_of_one_mapping_per_file_kept_until_its_last_tensor_goes(self):
        import hashlib
        import rootspan.torch
        folder = self.path("sharded")
        os.mkdir(folder)
        shards = {"model-00001-of-00002.safetensors": {"w": torch.arange(12, dtype=torch.float32).reshape(3, 4),
                                                       "h": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
                                                       "m": torch.tensor([True, False, True]),
                                                       "s": torch.tensor(7, dtype=torch.int64)},
                  "model-00002-of-00002.safetensors": {"q": torch.tensor([[1, -2], [3, -4]], dtype=torch.int8),
                                                       "f": torch.tensor([0.25, 8.0], dtype=torch.float16)}}
        if hasattr(torch, "float8_e4m3fn"):
            shards["model-00002-of-00002.safetensors"]["e"] = torch.tensor([0.5, -1.0]).to(torch.float8_e4m3fn)
        weight_map = {}
        for file, tensors in shards.items():
            st_torch.save_file(tensors, os.path.join(folder, file))
            weight_map.update({name: file for name in tensors})
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": weight_map}, f)
        files = {file: os.path.join(folder, file) for file in shards}

        def digests():
            return {file: hashlib.sha256(pathlib.Path(p).read_bytes()).hexdigest() for file, p in files.items()}
        before = digests()

        from rootspan import _contexts
        in_use = _contexts.host().memory_in_use
        state = rootspan.torch.load(folder, strategy="mmap")
        self.assertEqual(sorted(state), sorted(weight_map))
        self.assertEqual(_contexts.host().memory_in_use - in_use, len(files), "one lease per file, not per tensor")
        for file, tensors in shards.items():
            for name, tensor in tensors.items():
                self.assertEqual(state[name].dtype, tensor.dtype, name)
                self.assertEqual(tuple(state[name].shape), tuple(tensor.shape), name)
                self.assertTrue(torch.equal(state[name].reshape(-1).view(torch.uint8),
                                            tensor.reshape(-1).view(torch.uint8)), name)
        state["w"][0, 0] = 100.0  # writable, copy-on-write: the file never changes
        state["q"][1, 1] = 5
        self.assertEqual(state["w"][0, 0].item(), 100.0)
        self.assertEqual(digests(), before)
        gc.collect()
        self.assertTrue(all(mappings_of(p) > 0 for p in files.values()))
        # One file's memory goes when the last of its tensors goes, whatever the other file's tensors do.
        second = [name for name in shards["model-00002-of-00002.safetensors"]]
        kept = state.pop(second[0])
        for name in second[1:]:
            del state[name]
        gc.collect()
        self.assertGreater(mappings_of(files["model-00002-of-00002.safetensors"]), 0, "one tensor of it is kept")
        del kept
        gc.collect()
        self.assertEqual(mappings_of(files["model-00002-of-00002.safetensors"]), 0, "its last tensor went")
        self.assertGreater(mappings_of(files["model-00001-of-00002.safetensors"]), 0)
        state.clear()
        gc.collect()
        self.assertEqual(mappings_of(files["model-00001-of-00002.safetensors"]), 0, "every tensor dropped")
        # Copies (read) and read-only loads each hold their own memory, as before.
        copied = rootspan.torch.load(folder, strategy="read")
        self.assertTrue(torch.equal(copied["w"], shards["model-00001-of-00002.safetensors"]["w"]))
        self.assertTrue(torch.equal(rootspan.torch.load(folder, read_only=True)["s"], torch.tensor(7)))


    def test_safe_open_refuses_tensors_that_changed_after_it_was_opened(self):
        # What a handle loads is checked against the header it read at open: a tensor of another shape, or
        # one that is gone, is refused by name, whether the handle loads every tensor at once (mmap) or one
        # by one first (pread).
        path = self.path("changing.safetensors")
        for backend in ("mmap", "pread"):
            for changed, expected in (({"a": torch.arange(4.0), "b": torch.arange(8.0)}, "F32[6] of 24 bytes"),
                                      ({"a": torch.arange(4.0), "b": torch.arange(6.0).reshape(2, 3)},
                                       "F32[6] of 24 bytes"),  # its bytes the same, its shape not
                                      ({"a": torch.arange(4.0), "c": torch.arange(6.0)}, "F32[6] of 24 bytes")):
                with self.subTest(backend=backend, changed={n: list(t.shape) for n, t in changed.items()}):
                    st_torch.save_file({"a": torch.arange(4.0), "b": torch.arange(6.0)}, path)
                    with safe_open(path, "pt", backend=backend) as f:
                        st_torch.save_file(changed, path)
                        with self.assertRaises(SafetensorError) as refused:
                            f.get_tensor("b")
                        self.assertIn(f"changed since it was opened: tensor b is no longer {expected}",
                                      str(refused.exception))
                        if backend == "mmap":  # a, checked and kept before b was refused, was let go with the load
                            with self.assertRaisesRegex(SafetensorError, "changed since it was opened"):
                                f.get_tensor("a")
                        self.assertEqual(f.keys(), ["a", "b"])  # the handle keeps serving what it read
                    gc.collect()

    def test_safe_open_names_the_tensor_a_later_load_lost_even_if_an_earlier_load_had_it(self):
        # A tensor read on its own first (pread), then gone from the file when the rest are loaded at once: the
        # refusal names that tensor, not one the later load brought, and the handle still serves what it read.
        path = self.path("losing.safetensors")
        st_torch.save_file({"a": torch.arange(4.0), "b": torch.arange(6.0), "c": torch.arange(2.0)}, path)
        with safe_open(path, "pt", backend="pread") as f:
            self.assertTrue(torch.equal(f.get_tensor("a"), torch.arange(4.0)))
            st_torch.save_file({"b": torch.arange(6.0), "c": torch.arange(2.0)}, path)
            with self.assertRaises(SafetensorError) as refused:
                f.get_tensors()
            self.assertIn("changed since it was opened: tensor a is no longer F32[4] of 16 bytes",
                          str(refused.exception))
            self.assertTrue(torch.equal(f.get_tensor("a"), torch.arange(4.0)))
        gc.collect()

    def test_drop_in_load_file_with_empty_tensors_checks_its_load_against_the_header(self):
        # A file with an empty tensor is loaded, then its header read for the empty ones: a header that no
        # longer matches what was loaded (the file changed in between) is refused, naming the tensor.
        from unittest import mock
        from rootspan.safetensors import _open
        path = self.path("empty-and-dense.safetensors")
        st_torch.save_file({"w": torch.arange(4, dtype=torch.float32), "e": torch.zeros(0, 3)}, path)
        real = _open.safetensors_file_table

        def changed(p):
            metadata, tensors = real(p)
            return metadata, {n: (code, (8,), offset, 32) if n == "w" else (code, shape, offset, nbytes)
                              for n, (code, shape, offset, nbytes) in tensors.items()}

        with mock.patch.object(_open, "safetensors_file_table", changed):
            with self.assertRaises(SafetensorError) as refused:
                st_torch.load_file(path)
        self.assertIn("changed since it was opened: tensor w is no longer F32[8] of 32 bytes", str(refused.exception))
        loaded = st_torch.load_file(path)  # as written: both, in the header's order
        self.assertEqual(list(loaded), list(read_safetensors(path)))
        self.assertEqual(tuple(loaded["e"].shape), (0, 3))
        if hasattr(torch, "float4_e2m1fn_x2"):  # torch packs two values a byte: its bytes, not its shape, match
            packed = self.path("f4-and-empty.safetensors")
            header = json.dumps({"f": {"dtype": "F4", "shape": [2, 4], "data_offsets": [0, 4]},
                                 "e": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]}}).encode()
            header += b" " * (-(8 + len(header)) % 8)
            raw_file(packed, header, bytes([0x21, 0x43, 0x65, 0x07]))
            loaded = st_torch.load_file(packed)
            self.assertEqual(tuple(loaded["f"].shape), (2, 2))
            self.assertEqual(loaded["f"].view(torch.uint8).flatten().tolist(), [0x21, 0x43, 0x65, 0x07])

    def test_drop_in_load_file_hands_views_of_one_mapping_and_a_kept_handle_still_slices(self):
        from rootspan import _contexts
        path = self.path("views.safetensors")
        tensors = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.tensor([1.5], dtype=torch.bfloat16),
                   "e": torch.zeros(0, 4)}
        st_torch.save_file(tensors, path)
        before = pathlib.Path(path).read_bytes()
        in_use = _contexts.host().memory_in_use
        loaded = st_torch.load_file(path)
        self.assertEqual(_contexts.host().memory_in_use - in_use, 1, "one lease for the file, not one a tensor")
        self.assertEqual(list(loaded), list(read_safetensors(path)))
        for name, tensor in tensors.items():
            self.assertTrue(torch.equal(loaded[name], tensor), name)
        loaded["w"][1, 2] = -1.0  # writable, copy-on-write
        self.assertEqual(loaded["w"][1, 2].item(), -1.0)
        self.assertEqual(pathlib.Path(path).read_bytes(), before)
        del loaded
        gc.collect()
        self.assertEqual(mappings_of(path), 0)
        # Without an empty tensor the load alone says everything: no header read, the same answer.
        dense = self.path("dense.safetensors")
        st_torch.save_file({"z": torch.ones(3, dtype=torch.float16), "a": torch.arange(5)}, dense)
        in_use = _contexts.host().memory_in_use
        loaded = st_torch.load_file(dense)
        self.assertEqual(_contexts.host().memory_in_use - in_use, 1)
        self.assertEqual(list(loaded), list(read_safetensors(dense)), "file order")
        self.assertTrue(torch.equal(loaded["a"], torch.arange(5)))
        del loaded
        # A tensor the load copies (an F32 at an odd offset) keeps its own lease; its neighbours are still
        # views of the one mapping, in two runs of indices around it.
        mixed = self.path("mixed.safetensors")
        header = json.dumps({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
                             "b": {"dtype": "F32", "shape": [2], "data_offsets": [1, 9]},
                             "c": {"dtype": "U8", "shape": [7], "data_offsets": [9, 16]},
                             "d": {"dtype": "F32", "shape": [4], "data_offsets": [16, 32]}}).encode()
        header += b" " * (-(8 + len(header)) % 8)
        data = bytes([7]) + struct.pack("<2f", 1.5, -2.0) + bytes(range(7)) + struct.pack("<4f", 1, 2, 3, 4)
        raw_file(mixed, header, data)
        in_use = _contexts.host().memory_in_use
        loaded = st_torch.load_file(mixed)
        self.assertEqual(_contexts.host().memory_in_use - in_use, 2, "the file's lease and b's own")
        self.assertEqual(loaded["b"].tolist(), [1.5, -2.0])
        self.assertEqual(loaded["c"].tolist(), list(range(7)))
        self.assertEqual(loaded["d"].tolist(), [1.0, 2.0, 3.0, 4.0])
        self.assertEqual(loaded["a"].tolist(), [7])
        del loaded
        # A file that does not load is refused in the reference's words, as safe_open refuses it.
        broken = self.path("broken.safetensors")
        raw_file(broken, b'{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}', b"\0" * 8)
        with self.assertRaises(SafetensorError) as opened:
            safe_open(broken, framework="pt")
        with self.assertRaises(SafetensorError) as loading:
            st_torch.load_file(broken)
        self.assertEqual(str(loading.exception), str(opened.exception))
        # A handle the caller keeps gives each tensor a lease of its own, so its slices still copy through one.
        with safe_open(path, framework="pt") as f:
            every = f.get_tensors()
            self.assertTrue(torch.equal(f.get_slice("w")[1:], tensors["w"][1:]))
            self.assertTrue(torch.equal(f.get_tensor("w"), every["w"]))
            self.assertEqual(f.get_tensor("w").data_ptr(), every["w"].data_ptr(), "one memory per tensor")


class WritableAndKept(Folder):
    def write(self):
        path = self.path("w.safetensors")
        st_numpy.save_file({"w": numpy.arange(1024, dtype=numpy.float32), "v": numpy.ones(7, numpy.int64)}, path)
        with open(path, "rb") as f:
            return path, f.read()

    def test_writes_change_the_tensor_never_the_file(self):
        path, original = self.write()
        for framework in ("np", "pt"):
            with safe_open(path, framework=framework) as f:
                w = f.get_tensor("w")
                w[:] = 7  # a torch user's first in-place update; must not crash
                self.assertEqual(float(f.get_tensor("w")[3]), 7.0, "one handle's tensors share memory")
            with open(path, "rb") as f:
                self.assertEqual(f.read(), original, f"{framework}: the file is unchanged")
            with safe_open(path, framework=framework) as f:
                self.assertEqual(float(f.get_tensor("w")[3]), 3.0, "a new handle sees the file's bytes")

    def test_tensors_outlive_the_handle_and_the_with_block(self):
        path, _ = self.write()
        with safe_open(path, framework="pt") as f:
            w = f.get_tensor("w")
            array = safe_open(path, framework="np").get_tensor("v")
        gc.collect()
        self.assertEqual(w.sum().item(), sum(range(1024)))
        w.add_(1)
        self.assertEqual(array.tolist(), [1] * 7)
        self.assertGreater(mappings_of(path), 0)
        del w, array
        gc.collect()
        self.assertEqual(mappings_of(path), 0, "the last tensor gone, the file is unmapped")

    def test_closing_keeps_only_what_is_used(self):
        from rootspan.safetensors import _open
        path, _ = self.write()
        # A whole load: v and w are views of one mapping of the file, which v keeps (the reference's tensors
        # keep their file's storage so); a tensor loaded alone (the first of a file of many) holds its own.
        for whole_up_to, held_with_v in ((_open._MAPPED_WHOLE_UP_TO, ["v", "w"]), (0, ["v"])):
            with self.subTest(whole_up_to=whole_up_to), mock.patch.object(_open, "_MAPPED_WHOLE_UP_TO", whole_up_to):
                f = safe_open(path, framework="np")
                kept = f.get_tensor("v")
                f.get_tensor("w")  # dropped at once
                loads = list(f._loads)
                f.__exit__(None, None, None)

                def held():
                    return sorted(c.source_name for weights in loads for c in weights._components
                                  if not weights._wstate.released[c.index])
                self.assertEqual(held(), held_with_v)
                with self.assertRaisesRegex(SafetensorError, "File is closed"):
                    f.get_tensor("v")
                self.assertEqual(kept.tolist(), [1] * 7)
                del kept
                gc.collect()
                self.assertEqual(held(), [], "nothing is held once no tensor is used")

    def test_a_thousand_handles_leave_no_mapping(self):
        path, _ = self.write()
        before = mappings_of(path)
        for _ in range(1000):
            with safe_open(path, framework="pt") as f:
                f.get_tensor("w").sum()
        gc.collect()
        self.assertEqual(mappings_of(path), before)

    def test_threads_reading_while_a_handle_closes(self):
        path, _ = self.write()
        for _ in range(20):
            f = safe_open(path, framework="np")
            f.get_tensor("w")
            errors = []

            def read():
                try:
                    for _ in range(50):
                        f.get_tensor("v")
                except SafetensorError as e:  # closed under it: refused, never freed memory
                    if "File is closed" not in str(e):
                        errors.append(e)
            close_while_reading(f, [read, read])
            self.assertEqual(errors, [])


class BadInput(Folder):
    def test_arguments(self):
        path = self.path("a.safetensors")
        st_numpy.save_file({"a": numpy.zeros(1, numpy.float32)}, path)
        with self.assertRaisesRegex(SafetensorError, "framework jaxx is invalid"):
            safe_open(path, framework="jaxx")
        with self.assertRaisesRegex(SafetensorError, "device gpu is invalid"):
            safe_open(path, framework="pt", device="gpu")
        with self.assertRaisesRegex(SafetensorError, "Device cuda:0 is not supported for framework numpy"):
            safe_open(path, framework="np", device="cuda")
        with self.assertRaisesRegex(SafetensorError, 'backend "fast" is invalid'):
            safe_open(path, framework="np", backend="fast")
        with self.assertRaisesRegex(FileNotFoundError, "No such file or directory: .*nothere"):
            safe_open(self.path("nothere"), framework="np")
        with self.assertRaises(TypeError):
            safe_open(b"a.safetensors", framework="np")
        with self.assertRaises(TypeError):
            safe_open(path, framework=3)
        with safe_open(path, framework="np") as f:
            with self.assertRaisesRegex(SafetensorError, "File does not contain tensor b"):
                f.get_tensor("b")

    def test_headers_are_refused_with_the_reference_words(self):
        def entry(shape, offsets):
            text = json.dumps({"a": {"dtype": "F32", "shape": shape, "data_offsets": offsets}}).encode()
            return struct.pack("<Q", len(text)) + text

        cases = {
            "header too small": b"\x01\x02",
            "header too large": struct.pack("<Q", 10 ** 9) + b"{}",
            "invalid header length": struct.pack("<Q", 100) + b"{}",
            "incomplete metadata, file not fully covered": entry([2], [0, 8]) + b"\0" * 4,
            "invalid offset for tensor `a`": entry([2], [4, 12]) + b"\0" * 12,
            "invalid shape, data type, or offset for tensor": entry([3], [0, 8]) + b"\0" * 8,
            "invalid JSON in header": struct.pack("<Q", 2) + b"{x",
        }
        for words, blob in cases.items():
            path = self.path("bad.safetensors")
            with open(path, "wb") as f:
                f.write(blob)
            with self.assertRaises(SafetensorError, msg=words) as caught:
                safe_open(path, framework="np")
            self.assertEqual(str(caught.exception).split(": ", 1)[0], "Error while deserializing header", words)
            self.assertIn(words, str(caught.exception))
            self.assertIsNotNone(caught.exception.__cause__, "rootspan's own error stays attached")
            with self.assertRaisesRegex(SafetensorError, "Error while deserializing: " + words.split(" `")[0]):
                safetensors.deserialize(blob)

    def test_a_nul_in_a_tensor_name_is_refused_everywhere(self):
        # C reads a name up to its NUL: "a\0x" would load as "a", in place of the real "a" (issue 35 item 5).
        path = self.path("nul.safetensors")
        st_numpy.save_file({"a": numpy.zeros(1, numpy.float32), "a\0x": numpy.ones(1, numpy.float32)}, path)
        with open(path, "rb") as f:
            blob = f.read()
        at = blob.index(b'"a\\u0000x"')
        words = (r'tensor "a\\x00x": the name holds a NUL byte at position 1 \(the name begins at byte '
                 rf'{at} of the file\); C reads a name up to its first NUL, so it would read as "a"')
        with self.assertRaisesRegex(SafetensorError, "rootspan refuses what the reference library accepts.*" +
                                    words) as caught:
            safe_open(path, framework="np")
        self.assertNotIn("\0", str(caught.exception))
        with self.assertRaisesRegex(SafetensorError, "Error while deserializing: .*" + words):
            safetensors.deserialize(blob)
        import rootspan.inspect
        import rootspan.torch
        for call in (rootspan.torch.load, rootspan.inspect.inspect):
            with self.assertRaisesRegex(rootspan.errors.InvalidCheckpointError, words):
                call(path)
        gguf = self.path("nul.gguf")
        with open(gguf, "wb") as f:  # two F32 tensors of one value, "a" and "a\0x", and no metadata
            f.write(b"GGUF" + struct.pack("<IQQ", 3, 2, 0))
            for name, offset in ((b"a", 0), (b"a\0x", 32)):
                f.write(struct.pack("<Q", len(name)) + name + struct.pack("<IQIQ", 1, 1, 0, offset))
            f.write(b"\0" * (-f.tell() % 32) + struct.pack("<f", 1.0) + b"\0" * 28 + struct.pack("<f", 2.0))
        with self.assertRaisesRegex(rootspan.errors.InvalidCheckpointError,
                                    r'at byte 57: tensor #1 name: "a\\x00x" holds a NUL byte at position 1'):
            rootspan.torch.load(gguf)

    def test_names_in_messages_have_their_control_characters_escaped(self):
        path = self.path("a.safetensors")
        st_numpy.save_file({"a": numpy.zeros(1, numpy.float32)}, path)
        with safe_open(path, framework="np") as f:
            with self.assertRaises(SafetensorError) as caught:
                f.get_tensor("x\ny\x1b[2J\x00")
        self.assertEqual(str(caught.exception), "File does not contain tensor x\\ny\\x1b[2J\\x00")

    def test_stricter_rules_say_so(self):
        header = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],' \
                 b'"data_offsets":[0,4]}}'
        path = raw_file(self.path("dup.safetensors"), header + b" " * (-len(header) % 8), b"\0" * 4)
        with self.assertRaisesRegex(SafetensorError, "rootspan refuses what the reference library accepts.*"
                                                     "duplicate key"):
            safe_open(path, framework="np")


class LoadsWhatIsAsked(Folder):
    """A tensor asked for loads that tensor, not the file (issue 35 item 12); a few asked one by one, the
    rest is loaded at once; load_file and get_tensors load everything once."""

    def write(self):
        path = self.path("many.safetensors")
        names = ["a*", "b[0]", "c?d", "e\\f"] + [f"t{i}" for i in range(50)]  # the first four: glob characters
        st_numpy.save_file({name: numpy.full(3, i, numpy.int32) for i, name in enumerate(names)}, path)
        return path, names

    def test_threads_taking_the_made_tensors_while_the_handle_closes(self):
        # get_tensor hands out the tensors the whole load made without the handle's lock: threads racing a
        # close get each tensor with its own values, or "File is closed"; never another's, never a crash.
        path, names = self.write()
        for _ in range(20):
            f = safe_open(path, framework="pt")
            f.get_tensor(f.offset_keys()[0])  # loads all the rest, and makes their tensors
            failures = []

            def read(order):
                try:
                    for name in order:
                        values = f.get_tensor(name).tolist()
                        if values != [names.index(name)] * 3:
                            failures.append(f"{name}: {values}")
                except SafetensorError as e:
                    if "File is closed" not in str(e):
                        failures.append(str(e))
            close_while_reading(f, [lambda: read(names), lambda: read(names[::-1])])
            self.assertEqual(failures, [])
            self.assertEqual(f._ready, {})

    def test_one_tensor_at_a_time_then_the_rest_at_once(self):
        for backend in ("mmap", "pread"):
            with self.subTest(backend=backend):
                self.one_tensor_at_a_time_then_the_rest_at_once(backend)

    def one_tensor_at_a_time_then_the_rest_at_once(self, backend):
        from rootspan.safetensors import _open
        path, names = self.write()
        with safe_open(path, framework="np", backend=backend) as f:  # a file of few tensors
            f.get_tensor("t7")
            self.assertEqual([len(w) for w in f._loads], [len(names)] if backend == "mmap" else [1],
                             "mapped, a file of few tensors is loaded whole at the first tensor; read, one tensor")
        with mock.patch.object(_open, "_MAPPED_WHOLE_UP_TO", len(names) - 1):  # a file of many, as it were
            self.singles_then_the_rest(path, names, backend)

    def singles_then_the_rest(self, path, names, backend):
        from rootspan.safetensors import _open
        singles = names[:_open._SINGLE_LOADS[_open._BACKENDS[backend]]]
        self.assertEqual(len(singles), 1 if backend == "mmap" else 4)
        with safe_open(path, framework="np", backend=backend) as f:
            first = f.get_tensor(singles[0])
            first[0] = 99  # a write every later array of that tensor shows
            for count, name in enumerate(singles, start=1):
                self.assertEqual(f.get_tensor(name)[1], names.index(name), name)
                self.assertEqual([len(w) for w in f._loads], [1] * count, f"{name}: that tensor only")
            self.assertEqual(f.get_tensor("t7").tolist(), [names.index("t7")] * 3)
            self.assertEqual([len(w) for w in f._loads], [1] * len(singles) + [len(names)], "then all at once")
            rest = set(names) - set(singles)
            if backend == "mmap":  # mapped on the CPU: views of one mapping of the file, kept with the handle
                self.assertEqual((set(f._views), f._leases), (rest, {}),
                                 "the whole load handed out views of the file's mapping for every tensor it kept")
            else:  # read: no file mapping to share, a lease each
                self.assertEqual((set(f._leases), f._views), (rest - {"t7"}, {}),
                                 "the whole load leased every tensor it kept at once; t7's array took its lease")
            self.assertEqual(f.get_tensor(singles[0])[0], 99, "a tensor keeps the memory it was first given")
            self.assertEqual({n: f.get_tensor(n)[2] for n in names}, {n: i for i, n in enumerate(names)})
            self.assertEqual(len(f._loads), len(singles) + 1, "nothing loaded a third time")
            loads = list(f._loads)
        gc.collect()
        self.assertEqual((f._leases, f._views), ({}, {}), "closing drops the leases and views no tensor took")
        self.assertEqual([c.source_name for w in loads for c in w._components if not w._wstate.released[c.index]],
                         [singles[0]], "only the tensor still held keeps its memory")
        with safe_open(path, framework="pt") as f:
            self.assertEqual(len(f.get_tensors()), len(names))
            self.assertEqual([len(w) for w in f._loads], [len(names)], "get_tensors loads everything, once")

    def test_the_load_of_all_the_rest_makes_every_torch_tensor_at_once(self):
        path, names = self.write()
        with safe_open(path, framework="pt") as f:
            f.get_tensor("t7")  # a file of few tensors: loaded whole
            self.assertEqual(f._ready, {}, "a caller asking for one tensor gets only that one made")
        with safe_open(path, framework="pt") as f:
            listed = f.keys()
            self.assertEqual(f.get_tensor(listed[0]).tolist(), [names.index(listed[0])] * 3)  # a loop over them
            self.assertEqual(set(f._ready), set(names) - {listed[0]}, "every other tensor made with that load")
            first = f.get_tensor("t8")
            self.assertNotIn("t8", f._ready, "a made tensor is handed out once")
            again = f.get_tensor("t8")
            self.assertIsNot(first, again)
            first[0] = 99
            self.assertEqual(again.tolist(), [99] + [names.index("t8")] * 2, "both share the tensor's memory")
            self.assertEqual({n: f.get_tensor(n)[2].item() for n in names}, {n: i for i, n in enumerate(names)})
            self.assertEqual(f._ready, {})
            self.assertEqual(len(f._loads), 1, "one load")
        with safe_open(path, framework="pt") as f:
            f.get_tensor(f.offset_keys()[0])
            self.assertGreater(len(f._ready), 0)
            made = next(iter(f._ready))
        self.assertEqual(f._ready, {}, "closing drops the tensors no caller took")
        with self.assertRaisesRegex(SafetensorError, "File is closed"):  # not one made before the close
            f.get_tensor(made)
        with safe_open(path, framework="pt") as f:
            with torch.inference_mode():
                self.assertTrue(f.get_tensor(f.keys()[0]).is_inference())  # the others made in inference mode
            second = f.get_tensor(f.keys()[1])
            self.assertFalse(second.is_inference(), "outside inference mode, no tensor made in it is handed out")
            self.assertEqual(second.tolist(), [names.index(f.keys()[1])] * 3)

    def test_loads_of_every_tensor_populate_a_cold_file_and_loads_of_one_do_not(self):
        from rootspan import _contexts
        from rootspan.safetensors import _open
        path, names = self.write()
        context = _contexts.host()
        asked = []  # (tensors, populate_when_cold) of each load the drop-in makes

        def spy(*args, **kwargs):
            asked.append((kwargs.get("tensors"), kwargs.get("populate_when_cold", False)))
            return load(*args, **kwargs)

        load = context.load
        with mock.patch.object(context, "load", spy):
            for call, expected in [
                    (lambda: st_torch.load_file(path), [(None, True)]),
                    (lambda: st_numpy.load_file(path), [(None, True)]),
                    (lambda: safe_open(path, framework="pt").get_tensors(), [(None, True)]),
                    # a file of few tensors loads whole at the first tensor, for a caller reading them all
                    (lambda: safe_open(path, framework="pt").get_tensor("t7"), [(None, True)])]:
                asked.clear()
                self.assertTrue(len(call()) > 0)
                self.assertEqual(asked, expected)
            with mock.patch("rootspan.safetensors._open._MAPPED_WHOLE_UP_TO", len(names) - 1):
                asked.clear()
                with safe_open(path, framework="np") as f:
                    f.get_tensor("t7")
                    f.get_tensor("t8")
                self.assertEqual(asked, [(["t7"], False), (None, True)], "one tensor alone, then all the rest")
                def pattern(name):  # the tensor selection naming just that tensor
                    return name.translate(_open._GLOB_SPECIAL)
                # a caller looping over the names it took (keys() or offset_keys()) asks their first one first:
                # mapped, everything is loaded at once then; read, and a name not first, one tensor alone
                for backend, listing, first_asked, expected in [
                        ("mmap", "keys", 0, [(None, True)]), ("mmap", "offset_keys", 0, [(None, True)]),
                        ("mmap", "keys", 1, [([pattern(sorted(names)[1])], False)]),
                        ("pread", "keys", 0, [([pattern(sorted(names)[0])], False)])]:
                    with self.subTest(backend=backend, listing=listing, first_asked=first_asked):
                        asked.clear()
                        with safe_open(path, framework="pt", backend=backend) as f:
                            f.get_tensor(getattr(f, listing)()[first_asked])
                        self.assertEqual(asked, expected)
                # read, such a loop's second tensor loads all the rest; a second tensor out of that order, or
                # asked before the first, loads itself alone
                for listing, order, expected in [
                        ("keys", (0, 1), [0, None]), ("offset_keys", (0, 1), [0, None]), ("keys", (0, 2), [0, 2]),
                        ("keys", (1, 0), [1, 0])]:
                    with self.subTest(backend="pread", listing=listing, order=order):
                        asked.clear()
                        with safe_open(path, framework="pt", backend="pread") as f:
                            listed = getattr(f, listing)()
                            for at in order:
                                f.get_tensor(listed[at])
                        self.assertEqual(
                            [tensors for tensors, _ in asked],
                            [None if at is None else [pattern(listed[at])] for at in expected])
        gc.collect()


class TruncatedFile(Folder):
    """Reads of a file truncated after it was loaded (issue 35 item 7): what the drop-in itself reads (a numpy
    slice, a strided slice) is an IoError, as the C side's reads are; in a child process, which a SIGBUS
    would kill."""

    def test_slices_of_a_truncated_file_are_io_errors(self):
        # w loaded alone (as the first tensor of a file of many), a lease of its own; or in a whole load, a view
        # of the file's one mapping, copied out through its share of that mapping's lease
        for how in ("lease", "view"):
            with self.subTest(how=how):
                path = self.path(f"{how}.safetensors")
                st_numpy.save_file({"w": numpy.arange(1024 * 256, dtype=numpy.float32).reshape(1024, 256)}, path)
                status, output = run_python(TRUNCATED_SLICES, path, how)
                self.assertEqual(status, 0, output)
                lines = output.splitlines()
                self.assertEqual(len(lines), 7, output)
                self.assertEqual(lines[0], f"w is a {how}")
                self.assertEqual(lines[1], "row 0: True", "rows the file still holds read as before")
                for line in lines[2:6]:
                    self.assertRegex(line, r"^(np|pt) .+: IoError .*the file was truncated to \d+ bytes")
                self.assertEqual(lines[6], "the process goes on")

    def test_a_move_to_a_device_checks_the_file_first(self):
        # torch's copy to a device reads the mapped file, which no one can guard: the library checks it first.
        import rootspan.torch
        path = self.path("two.safetensors")
        st_torch.save_file({"a": torch.zeros(1024), "b": torch.ones(1024)}, path)
        tensors = rootspan.torch.iter_tensors(path, device="meta", strategy="mmap")  # "meta": torch reads nothing
        self.assertEqual(next(tensors)[0], "a")
        os.truncate(path, os.path.getsize(path) - 4096)  # b's bytes are gone
        with self.assertRaisesRegex(rootspan.errors.IoError, "the file was truncated to"):
            next(tensors)
        tensors.close()


TRUNCATED_SLICES = """
import os, sys, numpy, rootspan
from rootspan.safetensors import safe_open
path = sys.argv[1]
expected = numpy.arange(1024 * 256, dtype=numpy.float32).reshape(1024, 256)
from rootspan.safetensors import _open
if sys.argv[2] == "lease":
    _open._MAPPED_WHOLE_UP_TO = 0  # as if the file held many tensors: w is loaded alone
with safe_open(path, "np") as n, safe_open(path, "pt") as t:
    view = n.get_slice("w")
    t.get_slice("w")  # loaded before the truncation
    print("w is a", "view" if "w" in n._views and "w" in t._views else "lease")
    data = os.path.getsize(path) - expected.nbytes  # w's bytes are the file's last
    os.truncate(path, data + 1024)  # the file now ends after row 0, inside a page: row 1 would read as zeros
    print("row 0:", bool((view[0:1] == expected[0:1]).all()))
    calls = (("np [1:2]", lambda: view[1:2]), ("np [:, 3]", lambda: view[:, 3]),
             ("np strided", lambda: n.get_strided_slice("w", 0, [(1, 3)])),
             ("pt strided", lambda: t.get_strided_slice("w", 1, [(0, 1)])))
    for what, call in calls:
        try:
            call()
            print(what + ": read")
        except rootspan.errors.IoError as e:
            print(what + ":", type(e).__name__, e)
print("the process goes on")
"""


if __name__ == "__main__":
    unittest.main()
