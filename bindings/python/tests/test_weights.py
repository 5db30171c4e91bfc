#!/usr/bin/python3
"""ctx.load from Python: every component of the example checkpoint against
the file's own bytes (read here with json + struct) under both strategies,
the component layout fields, read-only zero-copy regions, the lifetime of
weights held by consumers, progress and cancellation, bad input, and no
leak over repeated loads."""
import ctypes
import gc
import importlib.machinery
import json
import math
import os
import shutil
import struct
import sys
import tempfile
import threading
import unittest
import unittest.mock
import weakref

try:
    import numpy
    import torch
    import torch.utils.dlpack
except ImportError as missing:
    print(f"skipped: {missing} (the weights suite needs numpy and torch)")
    sys.exit(77)

import rootspan
from rootspan import _abi, _compiled, dlpack
from support import (ELEMENT_BYTES, EXAMPLE, EXAMPLE_SCHEMA, VERSIONED_NUMPY, VERSIONED_TORCH, Consumed,
                     checkpoint_tensors, context, rss_kib, run_python,
                     schema_components, write_safetensors)


class Base(unittest.TestCase):
    def setUp(self):
        self.ctx = context()
        self.exports_before = dlpack.live_exports()

    def tearDown(self):
        gc.collect()
        self.assertEqual(dlpack.live_exports(), self.exports_before, "an export was never deleted")
        self.assertEqual(self.ctx.close(), 0, "a test left a root live")


class ExampleCheckpoint(Base):
    def test_components_match_the_files_bytes(self):
        tensors = checkpoint_tensors(EXAMPLE)
        schema = schema_components(EXAMPLE_SCHEMA)
        for strategy in ("mmap", "read"):
            with self.subTest(strategy=strategy), self.ctx.load(EXAMPLE, schema=EXAMPLE_SCHEMA,
                                                                strategy=strategy) as weights:
                self.assertEqual(weights.provider, "host")
                self.assertEqual(list(weights), [c["id"] for c in schema.values() if c["id"] in weights])
                self.assertEqual(set(weights.skipped), {"layers.0.attn.q.scales"})
                self.assertNotIn("layers.0.attn.q.scales", weights)
                for cid, component in weights.items():
                    spec = schema[cid]
                    expected = b"".join(tensors[name][2] for name in spec["sources"])
                    array = component.numpy()
                    self.assertEqual(array.tobytes(), expected, cid)
                    self.assertEqual(component.nbytes, len(expected))
                    self.assertEqual(component.segments, len(spec["sources"]))
                    self.assertEqual(component.shape, tuple(spec["dimensions"]))
                    self.assertEqual(component.role, spec["role"])
                    if "dense" in spec["encoding"]:
                        element = spec["encoding"]["dense"]["element_type"]
                        self.assertEqual((component.encoding, component.dtype), ("dense", element))
                        self.assertEqual(component.numpy_dtype, numpy.dtype(array.dtype))
                        self.assertEqual(array.shape, component.shape)
                        self.assertIsNone(component.format_id)
                    else:
                        block = spec["encoding"]["block_quantized"]
                        self.assertEqual((component.encoding, component.dtype, component.format_id,
                                          component.values_per_block, component.bytes_per_block),
                                         ("block_quantized", "U8", block["format_id"], block["values_per_block"],
                                          block["bytes_per_block"]))
                        self.assertEqual(array.shape, component.shape + (block["bytes_per_block"],))
                    zero_copy = strategy == "mmap" and len(spec["sources"]) == 1
                    self.assertEqual(component.zero_copy, zero_copy, cid)
                    # Known without the Root for a zero-copy component; the Root's own answer, either way.
                    self.assertEqual(component.__dlpack_device__(), (dlpack.DLDeviceType.kDLCPU, 0), cid)
                    self.assertEqual(component.__dlpack_device__(), component.root.__dlpack_device__(), cid)
                    self.assertFalse(component.read_only, cid)  # zero-copy regions are copy-on-write
                    self.assertTrue(array.flags.writeable, cid)
                    self.assertEqual(component.sha256(), __import__("hashlib").sha256(expected).hexdigest())
                    del array

    def test_default_schema_is_one_component_per_tensor(self):
        tensors = checkpoint_tensors(EXAMPLE)
        with self.ctx.load(EXAMPLE) as weights:
            self.assertEqual(set(weights), set(tensors))
            for name, (dtype, shape, data) in tensors.items():
                component = weights[name]
                self.assertEqual((component.dtype, component.shape, component.role, component.encoding),
                                 (dtype, shape, "values", "dense"))
                tensor = torch.utils.dlpack.from_dlpack(component.__dlpack__(copy=True))
                self.assertEqual(tensor.numpy().tobytes(), data)
                del tensor

    def test_torch_and_numpy_share_a_copied_component(self):
        with self.ctx.load(EXAMPLE, strategy="read") as weights:
            component = weights["model.norm.weight"]
            self.assertFalse(component.read_only)
            array = numpy.from_dlpack(component)  # numpy < 2.1 marks every DLPack import read-only
            tensor = torch.utils.dlpack.from_dlpack(component)
            self.assertEqual(array.ctypes.data, tensor.data_ptr())
            tensor[0] = 42.0
            self.assertEqual(array[0], 42.0)
            del array, tensor

    def test_tensors_load_a_subset_and_revision_needs_a_cache(self):
        every = set(checkpoint_tensors(EXAMPLE))
        with self.ctx.load(EXAMPLE, tensors=["model.layers.0.mlp.*", "model.norm.weight"]) as weights:
            expected = {t for t in every if t.startswith("model.layers.0.mlp.")} | {"model.norm.weight"}
            self.assertEqual(set(weights), expected)
        with self.assertRaises(rootspan.NotFoundError) as caught:
            self.ctx.load(EXAMPLE, tensors=["no.such.*"])
        self.assertIn('tensor pattern "no.such.*" matches no component id', str(caught.exception))
        with self.assertRaises(rootspan.InvalidCheckpointError) as caught:
            self.ctx.load(EXAMPLE, revision="main")
        self.assertIn("applies only to a Hugging Face cache repository folder", str(caught.exception))
        with self.assertRaises(TypeError):
            self.ctx.load(EXAMPLE, tensors="model.*")  # one string, not a list of patterns
        with self.assertRaises(TypeError):
            self.ctx.load(EXAMPLE, revision=7)

    def test_mapping_protocol_and_lookups(self):
        with self.ctx.load(EXAMPLE, schema=EXAMPLE_SCHEMA) as weights:
            self.assertEqual(len(weights), 4)
            self.assertIn("norm", weights)
            with self.assertRaisesRegex(KeyError, "skipped: 1 of its 1 source tensors"):
                weights["layers.0.attn.q.scales"]
            with self.assertRaisesRegex(KeyError, r'no loaded component has the id or tensor name "nope" \(4 loaded: '):
                weights["nope"]
            with self.assertRaisesRegex(KeyError, r'"norn" \(4 loaded; closest: "norm"\)'):
                weights["norn"]
            with self.assertRaisesRegex(TypeError, "component ids are str, got int"):
                weights[0]
            self.assertIsNone(weights.get("nope"))

    def test_a_tensor_name_outside_the_id_rule_finds_its_component(self):
        # "a b" loads as "tensor.<n>"; w["a b"], `in` and tensors= take its own name too.
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.safetensors")
            write_safetensors(path, {"a b": ("F32", (2,), struct.pack("<2f", 1.0, 2.0)),
                                     "caf\u00e9": ("F32", (1,), struct.pack("<f", 3.0))})
            with self.ctx.load(path) as weights:
                component = weights["a b"]
                self.assertTrue(component.id.startswith("tensor."), component.id)
                self.assertEqual(component.source_name, "a b")
                self.assertIs(weights[component.id], component)
                self.assertIn("caf\u00e9", weights)
                self.assertEqual(weights["caf\u00e9"].numpy().tolist(), [3.0])
            with self.ctx.load(path, tensors=["a b"]) as subset:
                self.assertEqual([c.source_name for c in subset.values()], ["a b"])

    def test_components_say_where_their_bytes_lie_and_hash_them_as_read(self):
        import hashlib
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "model.safetensors")
            data = {"a": struct.pack("<3f", 1.0, 2.0, 3.0), "b": struct.pack("<2f", 4.0, 5.0)}
            write_safetensors(path, {name: ("F32", (len(raw) // 4,), raw) for name, raw in data.items()})
            with open(path, "rb") as f:
                blob = f.read()
            for strategy in ("mmap", "read"):
                with self.ctx.load(path, strategy=strategy, source_digests=True) as weights:
                    for name, raw in data.items():
                        component = weights[name]
                        self.assertEqual(component.source_file, "model.safetensors")
                        self.assertTrue(component.source_contiguous)
                        start = component.source_offset
                        self.assertEqual(blob[start:start + component.nbytes], raw)
                        self.assertEqual(component.source_sha256(), hashlib.sha256(raw).hexdigest())
                        self.assertEqual(component.source_sha256(), component.sha256())
            with self.ctx.load(path) as weights:
                with self.assertRaises(rootspan.NotFoundError) as caught:
                    weights["a"].source_sha256()
                self.assertIn("source_digests", str(caught.exception))
            with self.assertRaises(TypeError):
                self.ctx.load(path, source_digests="yes")


class FileRegions(Base):
    def test_copy_on_write_regions_change_memory_never_the_file(self):
        tensors = checkpoint_tensors(EXAMPLE)
        shard = os.path.join(EXAMPLE, "model-00001-of-00002.safetensors")
        with open(shard, "rb") as f:
            before = f.read()
        with self.ctx.load(EXAMPLE) as weights:
            component = weights["model.embed_tokens.weight"]
            self.assertTrue(component.zero_copy)
            self.assertFalse(component.read_only)
            array = component.numpy()
            tensor = torch.utils.dlpack.from_dlpack(component)  # a legacy consumer: fine, the memory is writable
            self.assertEqual(array.ctypes.data, tensor.data_ptr(), "every export shares the one mapping")
            self.assertEqual(numpy.from_dlpack(component).ctypes.data, array.ctypes.data, "no copy for numpy")
            if hasattr(torch, "from_dlpack"):  # torch >= 1.10's entry point; versioned capsules from 2.4 on
                self.assertEqual(torch.from_dlpack(component).data_ptr(), array.ctypes.data, "no copy for torch")
            tensor.fill_(3.0)
            self.assertEqual(float(array[0, 0]), 3.0)
            self.assertEqual(component.sha256(), __import__("hashlib").sha256(array.tobytes()).hexdigest())
            del array, tensor
        with open(shard, "rb") as f:
            self.assertEqual(f.read(), before, "the file is unchanged")
        with self.ctx.load(EXAMPLE) as weights:  # a new load sees the file's bytes again
            self.assertEqual(weights["model.embed_tokens.weight"].root.read(),
                             tensors["model.embed_tokens.weight"][2])

    def test_nothing_writes_into_a_read_only_load(self):
        tensors = checkpoint_tensors(EXAMPLE)
        with self.ctx.load(EXAMPLE, read_only=True) as weights:
            component = weights["model.embed_tokens.weight"]
            self.assertTrue(component.zero_copy and component.read_only)
            array = component.numpy()
            self.assertFalse(array.flags.writeable)
            with self.assertRaises(ValueError):
                array[0, 0] = 1
            with self.assertRaises(ValueError):
                array.flags.writeable = True
            if VERSIONED_NUMPY:  # a versioned capsule flagged READ_ONLY: a read-only array
                self.assertFalse(numpy.from_dlpack(component).flags.writeable)
            else:  # a legacy capsule would lose the mark
                with self.assertRaises(BufferError):
                    numpy.from_dlpack(component)
            if not VERSIONED_TORCH:
                with self.assertRaises(BufferError):
                    torch.utils.dlpack.from_dlpack(component)
            with self.assertRaises(rootspan.ReadOnlyError):
                component.root.claim(exclusive=True)
            with component.root.claim() as claim, claim.map() as mapping:
                self.assertEqual(mapping.address, array.ctypes.data)
                with self.assertRaises(rootspan.ReadOnlyError) as caught:
                    claim.map(write=True)
                self.assertIn("root is read-only", str(caught.exception))
                view = mapping.view
                with self.assertRaises(TypeError):
                    view[0] = 0
                del view
            consumed = Consumed(component.__dlpack__(max_version=(1, 1)), versioned=True)
            self.assertEqual(consumed.flags, dlpack.FLAG_READ_ONLY)
            self.assertEqual(consumed.data, array.ctypes.data)
            self.assertEqual(consumed.shape, (256, 32))
            self.assertEqual(consumed.dtype, (2, 16, 1))
            consumed.delete()
            copy = torch.utils.dlpack.from_dlpack(component.__dlpack__(copy=True))
            copy.fill_(7)
            self.assertEqual(array.tobytes(), tensors["model.embed_tokens.weight"][2])
            self.assertIsNotNone(component._lease().mapping, "a copy leaves the lease the array shares mapped")
            with self.assertRaisesRegex(ValueError, "belongs to loaded weights"):
                component.root.release()
            del array, copy
        with open(os.path.join(EXAMPLE, "model-00001-of-00002.safetensors"), "rb") as f:
            self.assertIn(tensors["model.embed_tokens.weight"][2], f.read())


class Lifetime(Base):
    def test_numpy_of_a_released_zero_copy_component_says_it_was_released(self):
        # Before any other refusal, a type numpy lacks included: the liveness check comes first.
        path = os.path.join(tempfile.mkdtemp(prefix="rootspan-released-"), "bf16.safetensors")
        self.addCleanup(shutil.rmtree, os.path.dirname(path))
        write_safetensors(path, {"b": ("BF16", (2,), bytes(4)), "f": ("F32", (1,), bytes(4))})
        weights = self.ctx.load(path, strategy="mmap")
        components = [weights[name] for name in ("b", "f")]
        self.assertTrue(all(c.zero_copy for c in components))
        weights.close()
        for component in components:
            with self.subTest(component=component.id), self.assertRaisesRegex(ValueError, "was released"):
                component.numpy()

    def test_numpy_of_a_zero_copy_component_is_the_general_ways_array(self):
        # Component.numpy's short way (a zero-copy component in its own numpy type, which it takes without
        # _Exportable.numpy) against _Exportable.numpy's: the same memory, type, shape and writability, and one
        # lease whichever asks first, for every type numpy has that a file holds, read-only loads too.
        path = os.path.join(tempfile.mkdtemp(prefix="rootspan-numpy-"), "types.safetensors")
        self.addCleanup(shutil.rmtree, os.path.dirname(path))
        # each a multiple of 8 bytes: every tensor stays aligned for its type, so every one is zero-copy
        values = {"BOOL": (8,), "U8": (2, 4), "I8": (8,), "I16": (4, 1), "U16": (4,), "I32": (2,), "U32": (2,),
                  "I64": (1,), "U64": (1,), "F16": (4,), "F32": (2, 2), "F64": (), "C64": (1,)}
        width = {**ELEMENT_BYTES, "C64": 8}
        data = {name: bytes(range(width[name] * math.prod(shape))) for name, shape in values.items()}
        data["BOOL"] = bytes([1, 0] * 4)  # a bool is 0 or 1
        write_safetensors(path, {name.lower(): (name, shape, data[name]) for name, shape in values.items()})
        general_way = rootspan.root._Exportable.numpy
        for read_only in (False, True):
            with self.ctx.load(path, strategy="mmap", read_only=read_only) as weights:
                for name, shape in values.items():
                    component = weights[name.lower()]
                    with self.subTest(type=name, read_only=read_only):
                        self.assertTrue(component.zero_copy)
                        general_first = read_only  # the lease made by either way serves the other
                        general = general_way(component) if general_first else None
                        with unittest.mock.patch.object(rootspan.root._Exportable, "numpy",
                                                        wraps=general_way) as took_general_way:
                            short = component.numpy()
                        self.assertEqual(took_general_way.call_count, 0, "the short way must serve this call")
                        if not general_first:
                            general = general_way(component)
                        self.assertEqual((short.__array_interface__["data"], short.dtype, short.shape),
                                         (general.__array_interface__["data"], general.dtype, general.shape))
                        self.assertEqual((short.shape, short.flags.writeable), (shape, not read_only))
                        self.assertEqual(short.tobytes(), data[name])
                        self.assertIs(short.base.lease, general.base.lease)  # one lease for both exports

    def test_close_keeps_what_a_consumer_holds_and_releases_the_rest(self):
        weights = self.ctx.load(EXAMPLE, strategy="read")
        held = weights["model.norm.weight"]
        other = weights["model.embed_tokens.weight"]
        tensor = torch.utils.dlpack.from_dlpack(held)
        weights.close()  # no BusyError: the held root waits for the tensor
        self.assertTrue(weights.closed)
        state = weights._wstate
        self.assertEqual([i for i, released in enumerate(state.released) if not released], [held.index])
        self.assertTrue(other.root.released, "a root nothing uses goes back at once")
        with self.assertRaisesRegex(ValueError, "was released"):
            other.numpy()
        tensor.add_(1)  # still valid memory
        again = torch.utils.dlpack.from_dlpack(held)  # the held component still exports its memory
        self.assertEqual(again.data_ptr(), tensor.data_ptr())
        del tensor, again
        gc.collect()
        self.assertIsNone(state.handle, "the last consumer gone, the weights are freed")
        self.assertTrue(held.root.released)
        weights.close()  # a second close does nothing
        with self.assertRaisesRegex(ValueError, "the weights are closed"):
            weights["model.norm.weight"]
        with self.assertRaisesRegex(ValueError, "the weights are closed"):
            len(weights)
        for view in (weights.values(), weights.items()):
            with self.assertRaisesRegex(ValueError, "the weights are closed"):
                list(view)

    def test_an_export_of_a_claimed_component_says_conflict_and_leaves_nothing(self):
        # An export claims and maps the component in one library call; where that fails, the steps one by
        # one say what is wrong, and nothing is left claimed or mapped.
        for strategy in ("read", "mmap"):
            with self.subTest(strategy=strategy), self.ctx.load(EXAMPLE, strategy=strategy) as weights:
                component = weights["model.norm.weight"]
                claim = component.root.claim(exclusive=True)
                with self.assertRaisesRegex(rootspan.ConflictError, r"conflict with exclusive claim \[0,128\)") as caught:
                    component.numpy()
                self.assertEqual(caught.exception.operation, "claim_acquire")
                claim.release()
                array = component.numpy()  # the refused export left no claim behind
                self.assertEqual(array.nbytes, component.nbytes)
                del array

    def test_an_export_claims_and_maps_step_by_step_where_its_one_call_fails_and_a_failed_map_leaves_no_claim(self):
        # Where the one call that claims and maps a component fails, the steps go one by one: the export has the
        # component's bytes; a map that fails after its claim says why and releases that claim.
        from rootspan import weights as weights_module
        lib = self.ctx._state.lib
        for strategy in ("read", "mmap"):
            with self.subTest(strategy=strategy), self.ctx.load(EXAMPLE, strategy=strategy) as weights:
                component = weights["model.norm.weight"]
                expected = component.numpy().tobytes()  # its lease goes with the array
                name = "rootspan_map_read" if component.read_only else "rootspan_map_write"
                real_map = getattr(lib, name)

                def past_the_end(claim, code, offset, length, out, error):  # the library refuses it
                    return real_map(claim, code, offset + length, length, out, error)

                with unittest.mock.patch.object(weights_module, "_map_one", return_value=None):
                    array = component.numpy()
                    self.assertEqual(array.tobytes(), expected)
                    self.assertTrue(weights._wstate.exported[component.index])
                    del array
                    self.assertFalse(weights._wstate.exported[component.index])
                    with unittest.mock.patch.object(lib, name, side_effect=past_the_end), \
                            self.assertRaises(rootspan.errors.Error) as caught:
                        component.numpy()
                self.assertIn("map", caught.exception.operation)
                self.assertFalse(weights._wstate.exported[component.index])
                self.assertEqual(self.ctx._state.leases, 0)
                claim = component.root.claim(exclusive=True)  # the failed export left no claim behind
                claim.release()
                self.assertEqual(component.numpy().tobytes(), expected)

    def test_values_and_items_are_the_components_by_id_in_load_order(self):
        with self.ctx.load(EXAMPLE, schema=EXAMPLE_SCHEMA) as weights:
            ids = list(weights)
            self.assertEqual([c.id for c in weights.values()], ids)
            self.assertEqual([(cid, c) for cid, c in weights.items()], [(cid, weights[cid]) for cid in ids])
            self.assertTrue(all(weights[c.id] is c for c in weights.values()))
            self.assertEqual(len(weights.values()), len(ids))
            self.assertIn(weights[ids[0]], weights.values())
            self.assertIn((ids[0], weights[ids[0]]), weights.items())

    def test_a_walk_that_leased_ahead_gives_way_to_a_close_and_to_a_components_root(self):
        """The leases a walk made ahead go when the weights or the context are closed, and none is made after
        (what the caller exports after is refused, as without them); a component's lease made ahead goes when
        its root is claimed (the lease's exclusive claim would refuse the root's), through a Root taken before
        the walk too."""
        tensors = checkpoint_tensors(EXAMPLE)
        for strategy in ("mmap", "read"):
            for closing in ("weights", "context"):
                for ahead in (1, 2):
                    # Position 2 is taken, then the close. Leasing two at a time, position 3 was leased ahead
                    # and must go with the close; one at a time, the walk (its caller holding the two before)
                    # would lease position 3 next and must not.
                    with self.subTest(strategy=strategy, closing=closing, ahead=ahead), \
                            unittest.mock.patch.object(rootspan.weights, "_LEASED_AHEAD", ahead):
                        ctx = rootspan.Context()
                        weights = ctx.load(EXAMPLE, strategy=strategy)
                        state, count = weights._wstate, len(weights)
                        taken, refused = [], []
                        for at, c in enumerate(weights.values()):
                            try:
                                taken.append(c.numpy(dtype="uint8"))
                            except ValueError as e:
                                refused.append(str(e))
                            if at == 2:
                                self.assertEqual(sorted(state.leased_ahead), list(range(2, 2 + ahead)))
                                (weights if closing == "weights" else ctx).close()
                                self.assertEqual(state.leased_ahead, {}, "the close dropped what was leased ahead")
                                self.assertFalse(any(state.exported[3:]), "nothing past position 2 is claimed")
                        self.assertEqual(len(taken), 3)
                        expected = "was released" if closing == "weights" else "the context is closed"
                        self.assertEqual(len(refused), count - 3)
                        self.assertTrue(all(expected in text for text in refused), refused)
                        with self.assertRaisesRegex(ValueError, "closed"):
                            iter(weights.values())  # refused at iter(), as a list's iterator was
                        del taken
                        gc.collect()
                        self.assertIsNone(state.handle, "the last export dropped: the weights are freed")
                        ctx.close()
            with self.subTest(strategy=strategy, root="claimed"), \
                    unittest.mock.patch.object(rootspan.weights, "_LEASED_AHEAD", 2), \
                    self.ctx.load(EXAMPLE, strategy=strategy) as weights:
                roots = {c.index: c.root for c in weights.values()}  # taken before the walk leases anything
                kept, read = [], []
                for at, c in enumerate(weights.values()):
                    if at >= 2:
                        self.assertIn(c.index, weights._wstate.leased_ahead)
                        read.append(bytes(roots[c.index].read(0, 4)))  # no ConflictError: the lease ahead went
                        self.assertNotIn(c.index, weights._wstate.leased_ahead)
                    kept.append(c.numpy(dtype="uint8"))
                self.assertEqual(read, [tensors[c.source_name][2][:4] for c in list(weights.values())[2:]])
                self.assertEqual([a.tobytes() for a in kept], [tensors[c.source_name][2] for c in weights.values()])
                del kept, roots
                gc.collect()

    def test_a_walk_leases_ahead_only_for_a_caller_that_keeps_what_it_exports(self):
        """values() and items() make the next components' leases in one call once their caller holds an export
        of the two components handed to it last, and give back each lease the caller did not take as the walk
        moves past it, or when the walk is dropped."""
        tensors = checkpoint_tensors(EXAMPLE)
        made = []  # weak references to the leases each map_leases call made (the walk alone holds them)

        def leases_of(components):
            leases = rootspan.weights._map_leases(components, False)
            made.append([weakref.ref(lease) for lease in leases if lease is not None])
            return leases

        def lease_under(array):  # numpy's views down to the owner holding the lease
            while not hasattr(array, "lease"):
                array = array.base
            return array.lease

        for strategy in ("mmap", "read"):
            with self.subTest(strategy=strategy), unittest.mock.patch.object(rootspan.weights, "_LEASED_AHEAD", 2), \
                    unittest.mock.patch.object(rootspan.weights, "map_leases", side_effect=leases_of) as ahead:
                weights = self.ctx.load(EXAMPLE, strategy=strategy)
                state, count = weights._wstate, len(weights)
                made.clear()
                kept = {cid: c.numpy(dtype="uint8") for cid, c in weights.items()}  # every export kept
                self.assertEqual([len(leases) for leases in made], [min(2, count - at) for at in range(2, count, 2)],
                                 "two at a time from position 2")
                for c in list(weights.values())[2:]:
                    lease = next(lease() for leases in made for lease in leases if lease()._index == c.index)
                    self.assertIs(lease_under(kept[c.id]), lease, "each export took the lease made ahead for it")
                self.assertEqual({cid: a.tobytes() for cid, a in kept.items()},
                                 {c.id: tensors[c.source_name][2] for c in weights.values()})
                del kept, lease
                gc.collect()
                ahead.reset_mock()
                self.assertEqual([c.id for c in weights.values()], list(weights))
                ahead.assert_not_called()  # a walk that exports nothing leases nothing ahead
                one = [c.numpy(dtype="uint8") for c in weights.values() if c.index == 1]
                ahead.assert_not_called()  # nor one whose caller kept one export: two in a row, kept, are asked
                del one
                gc.collect()
                made.clear()
                walked = []
                for c in weights.values():  # the first two kept, then nothing taken
                    walked.append(c.numpy(dtype="uint8") if len(walked) < 2 else None)
                self.assertEqual([len(leases) for leases in made], [2], "leased ahead once, then not again")
                gc.collect()
                self.assertEqual(state.exported, [True, True] + [False] * (count - 2),
                                 "the leases the caller did not take went back as the walk moved past them")
                walked.clear()
                gc.collect()
                made.clear()
                walk = iter(weights.items())
                early = [next(walk)[1].numpy(dtype="uint8") for _ in range(3)]  # stopped inside a leased run
                self.assertTrue(state.exported[3], "position 3 is leased ahead, held by the walk")
                del walk
                gc.collect()
                self.assertEqual(state.exported, [True] * 3 + [False] * (count - 3), "the walk dropped: back")
                del early
                gc.collect()
                with self.ctx.load(EXAMPLE, strategy=strategy) as given:  # position 3 given up, still claimed
                    claim = given._components[3].root.claim()
                    given._components[3]._hand_over()
                    made.clear()
                    kept = [c.numpy(dtype="uint8") for c in given.values() if c.index != 3]
                    self.assertEqual([len(leases) for leases in made], [1], "position 2, not 3")
                    del kept
                    claim.release()
                    gc.collect()
                if strategy == "mmap":  # position 3 held by a view of its file: the rest are leased ahead all the same
                    with self.ctx.load(EXAMPLE, strategy=strategy) as viewed_weights:
                        viewed = rootspan.weights.map_file_views([viewed_weights._components[3]])
                        self.assertEqual(len(viewed), 1)
                        made.clear()
                        kept = [c.numpy(dtype="uint8") for c in viewed_weights.values() if c.index != 3]
                        self.assertEqual([len(leases) for leases in made], [1, 1], "positions 2, then 4")
                        del kept, viewed
                        gc.collect()
                weights.close()
                gc.collect()
                self.assertIsNone(state.handle, "nothing held: the weights are freed")

    def test_a_file_lease_let_go_frees_the_weights_in_one_call(self):
        """The components a file's views hold (rootspan.weights.map_file_views, how the loaders hand out zero-copy
        CPU tensors) go back together when the last view goes: with every component given up and none held
        otherwise, the handle is freed at once, not a release call per root; a component still exported,
        or claimed by hand, makes them go one by one and keeps the handle until it goes too."""
        from unittest import mock
        from rootspan.weights import map_file_views
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "w.safetensors")
            write_safetensors(path, {f"t{i}": ("F32", [4], struct.pack("<4f", i, i, i, i)) for i in range(6)})
            for held_by in (None, "export", "hand"):
                with self.subTest(held_by=held_by):
                    weights = self.ctx.load(path, strategy="mmap")
                    components = list(weights.values())
                    kept = None
                    if held_by == "export":
                        kept = components[-1].numpy()  # a lease of its own: not one of the file's views
                    elif held_by == "hand":
                        kept = components[-1].root.claim()  # nothing exported: the free call refuses (Busy)
                    views = map_file_views(components if held_by is None else components[:-1])
                    self.assertEqual(len(views), len(components) - (held_by is not None))
                    state = weights._wstate
                    weights.close()
                    self.assertIsNotNone(state.handle, "the views hold the weights")
                    lib = state.context_state.lib
                    release = lib.rootspan_weights_release_component
                    calls = []
                    with mock.patch.object(lib, "rootspan_weights_release_component",
                                           side_effect=lambda *a: calls.append(a[1]) or release(*a)):
                        del views
                        gc.collect()
                    if held_by is None:
                        self.assertEqual(calls, [], "one free call, no release per root")
                        self.assertIsNone(state.handle)
                    else:
                        self.assertEqual(calls, list(range(len(components) - 1)), "one by one")
                        self.assertEqual([i for i, r in enumerate(state.released) if not r], [len(components) - 1])
                        if held_by == "hand":
                            kept.release()
                        del kept
                        gc.collect()
                        self.assertIsNone(state.handle, "the last one gone, the weights are freed")

    def test_a_file_lease_ends_its_mappings_in_one_call_per_run(self):
        """A file lease ends the claims and mappings of each run it mapped in one call
        (rootspan_weights_unmap_components) where the run holds only that file's components, and one by one
        where a run of consecutive components spans files (a sharded checkpoint whose names interleave
        across shards), and one by one what a call stopped by a claim still in use left; either way nothing
        stays claimed or mapped."""
        import json
        from unittest import mock
        from rootspan import _abi
        from rootspan.weights import map_file_views
        with tempfile.TemporaryDirectory() as folder:
            one = os.path.join(folder, "one.safetensors")
            write_safetensors(one, {f"t{i}": ("F32", [2], struct.pack("<2f", i, i)) for i in range(4)})
            sharded = os.path.join(folder, "sharded")
            os.mkdir(sharded)
            weight_map = {}
            for shard, names in (("a.safetensors", ["t0", "t2"]), ("b.safetensors", ["t1", "t3"])):
                write_safetensors(os.path.join(sharded, shard),
                                  {n: ("F32", [2], struct.pack("<2f", 1, 2)) for n in names})
                weight_map.update((n, shard) for n in names)
            with open(os.path.join(sharded, "model.safetensors.index.json"), "w") as f:
                json.dump({"weight_map": weight_map}, f)
            def stops_after_the_first(real, mappings, count, error):  # as a Busy claim at index 1 would
                real(mappings, 1, error)
                return _abi.ERR_BUSY

            for path, bulk_calls, unmaps, bulk in ((one, 1, 0, None), (sharded, 0, 4, None),
                                                   (one, 1, 3, stops_after_the_first)):
                with self.subTest(path=os.path.basename(path), stopped=bulk is not None):
                    weights = self.ctx.load(path, strategy="mmap")
                    views = map_file_views(list(weights.values()))
                    self.assertEqual(len(views), 4)
                    state = weights._wstate
                    weights.close()
                    lib = state.context_state.lib
                    calls = {"rootspan_weights_unmap_components": [], "rootspan_unmap": []}
                    real = {name: getattr(lib, name) for name in calls}
                    act = dict(real)  # what each call does: the library's, or the bulk call made to stop
                    if bulk:
                        act["rootspan_weights_unmap_components"] = lambda *a: bulk(real[
                            "rootspan_weights_unmap_components"], *a)
                    patches = [mock.patch.object(lib, name, side_effect=lambda *a, name=name: calls[name].append(a)
                                                 or act[name](*a)) for name in calls]
                    for patch in patches:
                        patch.start()
                    try:
                        del views
                        gc.collect()
                    finally:
                        for patch in patches:
                            patch.stop()
                    self.assertEqual(len(calls["rootspan_weights_unmap_components"]), bulk_calls)
                    self.assertEqual(len(calls["rootspan_unmap"]), unmaps)
                    self.assertIsNone(state.handle, "every claim ended: the weights are freed")

    def test_leases_mapped_at_once_are_each_components_own(self):
        """rootspan.weights.map_leases (how the loaders map every tensor of a load in one call): each lease is
        the one its component exports under; a component with a lease already keeps it; a run that cannot be
        mapped is left to each component alone, which says what is wrong; a tensor dropped gives its
        component back at once."""
        from rootspan import _tensors, errors
        from rootspan.weights import map_leases
        tensors = checkpoint_tensors(EXAMPLE)
        weights = self.ctx.load(EXAMPLE, strategy="read")
        components = list(weights.values())
        earlier = components[1].numpy()  # leased alone, before
        blocker = components[4].root.claim(exclusive=True)  # its run [3, ...) cannot be mapped
        leases = map_leases(components)
        self.assertIsNone(leases[1], "a component with a lease keeps it")
        self.assertTrue(all(lease is not None for lease in leases[:1]), "the run before the leased one is mapped")
        self.assertEqual(leases[2:], [None] * (len(components) - 2), "the run with the claimed one is left alone")
        first = _tensors.tensor_of(components[0])
        self.assertEqual(first.data_ptr(), leases[0].address, "the tensor is made under the lease mapped for it")
        name = components[0].source_name
        self.assertEqual(first.numpy().tobytes(), tensors[name][2])
        self.assertEqual(_tensors.tensor_of(components[1]).data_ptr(), earlier.ctypes.data)
        with self.assertRaises(errors.ConflictError):
            _tensors.tensor_of(components[4])  # alone, it says what is wrong
        blocker.release()
        del leases
        components[0]._hand_over()
        self.assertFalse(weights._wstate.released[0], "the tensor still holds component 0")
        del first
        gc.collect()
        self.assertTrue(weights._wstate.released[0], "the tensor dropped: component 0 went back")
        del earlier
        weights.close()

    def test_leased_components_handed_over_at_once_go_back_with_their_tensors(self):
        """rootspan.weights.map_leases(hand_over=True) (how the loaders give up every copied tensor of a load in
        one pass): a component whose lease it made goes back when its tensor goes, not before, while the weights
        stay open; one without such a lease is left to be handed over on its own."""
        from rootspan import _tensors
        from rootspan.weights import map_leases
        weights = self.ctx.load(EXAMPLE, strategy="read")
        components = list(weights.values())
        earlier = components[1].numpy()  # leased alone, before: map_leases gives it none
        state = weights._wstate
        kept = map_leases(components[2:])  # without hand_over: leased, none given up
        self.assertFalse(any(state.given_up), "map_leases alone hands nothing over")
        del kept
        gc.collect()
        leases = map_leases(components, hand_over=True)
        self.assertFalse(state.given_up[1], "a component without a lease from map_leases is not given up")
        self.assertTrue(all(state.given_up[i] for i in range(len(components)) if i != 1))
        self.assertFalse(any(state.released), "the leases still claim every component")
        first = _tensors.tensor_of(components[0])
        del leases
        gc.collect()
        self.assertFalse(state.released[0], "the tensor holds component 0")
        self.assertTrue(all(state.released[i] for i in range(2, len(components))),
                        "the leases no tensor took went, and their components with them, the weights still open")
        del first
        gc.collect()
        self.assertTrue(state.released[0], "the tensor dropped: component 0 went back")
        self.assertFalse(state.released[1], "component 1 was never given up: its array's lease is not the end")
        del earlier
        gc.collect()
        self.assertFalse(state.released[1], "not given up: it stays until the weights close")
        weights.close()
        self.assertTrue(all(state.released))

    def test_leases_mapped_at_once_for_two_loads_in_any_order_each_lie_over_their_own_component(self):
        """map_leases of the components of two loads, mixed and out of index order: each lease is its own
        component's (its bytes), whichever load it is of; a component that went back gets none."""
        from rootspan.weights import map_leases
        tensors = checkpoint_tensors(EXAMPLE)
        first, second = (self.ctx.load(EXAMPLE, strategy="read") for _ in range(2))
        gone = first[list(first)[1]]
        gone._hand_over()  # nothing uses it: back at once
        self.assertTrue(first._wstate.released[gone.index])
        ones, others = first._components, second._components  # the one that went back too
        for mixed in (ones[::-1] + others, [c for pair in zip(others, ones) for c in pair]):  # one reversed; mixed
            leases = map_leases(mixed)
            for component, lease in zip(mixed, leases):
                if component is gone:
                    self.assertIsNone(lease, "a component that went back is not leased")
                    continue
                self.assertIsNotNone(lease, component.id)
                self.assertIs(lease._wstate, component._wstate, component.id)
                self.assertEqual(ctypes.string_at(lease.address, lease.nbytes), tensors[component.source_name][2],
                                 component.id)
            del leases, lease  # each goes: the next round leases every component again
            gc.collect()
        first.close()
        second.close()

    def test_consumer_outlives_the_weights_object(self):
        tensors = checkpoint_tensors(EXAMPLE)
        weights = self.ctx.load(EXAMPLE)
        component = weights["model.layers.0.mlp.up_proj.weight"]
        array = component.numpy()
        consumed = Consumed(component.__dlpack__(max_version=(1, 1)), versioned=True)
        del weights, component
        gc.collect()
        self.assertEqual(array.tobytes(), tensors["model.layers.0.mlp.up_proj.weight"][2])
        del array
        worker = threading.Thread(target=consumed.delete)  # the last user lets go on another thread
        worker.start()
        worker.join()
        gc.collect()
        # tearDown: the weights were freed, so the context has no root left

    def test_exception_in_with_block_frees_when_the_consumer_goes(self):
        class Boom(Exception):
            pass
        kept = []
        with self.assertRaises(Boom):
            with self.ctx.load(EXAMPLE) as weights:
                kept.append(weights["model.norm.weight"].numpy())
                raise Boom()
        self.assertTrue(weights.closed)
        self.assertIsNotNone(weights._wstate.handle)  # held: the array's root waits for it
        kept.clear()
        gc.collect()
        self.assertIsNone(weights._wstate.handle)

    def test_a_released_component_refuses_use_and_never_reads_freed_memory(self):
        weights = self.ctx.load(EXAMPLE)
        component = weights["model.norm.weight"]
        root = component.root
        weights.close()  # nothing held it: released at once
        for call in (lambda: root.info, root.claim, component.numpy, component.__dlpack__, component.sha256):
            with self.assertRaisesRegex(ValueError, "released"):
                call()

    def test_exports_racing_a_close_on_another_thread(self):
        for _ in range(30):
            weights = self.ctx.load(EXAMPLE)
            components = list(weights.values())
            failures = []

            def export():
                for c in components * 20:
                    try:
                        del_me = c.numpy()
                        del del_me
                    except ValueError as e:  # released under it: refused, never a crash
                        if "released" not in str(e) and "closed" not in str(e):
                            failures.append(e)
            threads = [threading.Thread(target=export) for _ in range(2)]
            for t in threads:
                t.start()
            weights.close()
            for t in threads:
                t.join()
            self.assertEqual(failures, [])
            gc.collect()
            self.assertIsNone(weights._wstate.handle)

    def test_closed_context_refuses_weights(self):
        ctx = context()
        weights = ctx.load(EXAMPLE)
        component = weights["model.norm.weight"]
        self.assertEqual(ctx.close(), 0)  # the open weights were freed first
        self.assertTrue(weights.closed)
        for call in (lambda: weights["model.norm.weight"], component.numpy, component.__dlpack__,
                     lambda: ctx.load(EXAMPLE)):
            with self.assertRaisesRegex(ValueError, "closed"):
                call()


class Progress(Base):
    def test_progress_reports_every_component(self):
        seen = []
        with self.ctx.load(EXAMPLE, schema=EXAMPLE_SCHEMA, progress=seen.append) as weights:
            self.assertEqual(len(weights), 4)
        self.assertEqual([p.component for p in seen][:1], ["embed"])
        self.assertTrue(all(p.count == 4 for p in seen))
        self.assertEqual(seen[-1].bytes_done, seen[-1].bytes_total)
        self.assertEqual(seen[-1].bytes_total, 16384 + 16384 + 9216 + 128)

    def test_returning_false_cancels(self):
        with self.assertRaises(rootspan.CancelledError) as caught:
            self.ctx.load(EXAMPLE, progress=lambda p: p.index < 2)
        self.assertEqual(caught.exception.code, 30)
        # tearDown: no root was left behind

    def test_an_exception_in_progress_cancels_and_propagates(self):
        def progress(p):
            raise KeyError("from the callback")
        with self.assertRaisesRegex(KeyError, "from the callback") as caught:
            self.ctx.load(EXAMPLE, progress=progress)
        self.assertIsInstance(caught.exception.__cause__, rootspan.CancelledError)


class CompiledDescribe(Base):
    """rootspan._describe, the package's compiled module, describes components exactly as its ctypes path."""

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def compiled(self):
        module = _compiled.describe()
        if os.environ.get("ROOTSPAN_COMPILED_MODULE") == "built":  # meson's tests: the build made it
            self.assertIsNotNone(module, "the build made rootspan._describe, but the package did not find it")
        if module is None:
            self.skipTest("rootspan._describe is not built for this Python")
        return module

    def write_gguf(self, path):
        """A GGUF file of a Q8_0 tensor (two blocks of 32 values in 34 bytes) and an F32 one, no metadata."""
        with open(path, "wb") as f:
            f.write(b"GGUF" + struct.pack("<IQQ", 3, 2, 0))
            for name, dims, ggml_type, offset in ((b"blk.0.q", (64,), 8, 0), (b"blk.0.f", (4, 1), 0, 96)):
                f.write(struct.pack("<Q", len(name)) + name + struct.pack("<I", len(dims)) +
                        b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", ggml_type, offset))
            f.write(b"\0" * (-f.tell() % 32) + bytes(range(68)) + b"\0" * 28 + struct.pack("<4f", 1, 2, 3, 4))

    def both_ways(self, weights, count):
        """(compiled, ctypes) _component_values of count components of weights."""
        lib = self.ctx._state.lib
        handle = weights._wstate.handle
        compiled = rootspan.weights._component_values(lib, handle, count)
        with unittest.mock.patch.object(_compiled, "describe", return_value=None):
            by_ctypes = rootspan.weights._component_values(lib, handle, count)
        return compiled, by_ctypes

    def test_the_build_made_it_and_it_is_used(self):
        # The module this build made, where it made one that this Python can import.
        folder = os.path.join(os.environ.get("ROOTSPAN_BUILD_ROOT", ""), "bindings", "python")
        built = [s for s in importlib.machinery.EXTENSION_SUFFIXES
                 if os.path.isfile(os.path.join(folder, "_describe" + s))]
        if not built:
            self.skipTest(f"no rootspan._describe in {folder!r}")
        self.assertEqual(os.path.dirname(self.compiled().__file__), folder)

    def test_the_same_tuples_as_ctypes(self):
        self.compiled()
        other = os.path.join(self.tmp.name, "other.safetensors")
        write_safetensors(other, {"a b": ("F32", (2,), struct.pack("<2f", 1.0, 2.0)),  # an id of its own
                                  "caf\u00e9.w": ("F16", (1, 2, 1), bytes(4)),
                                  "scalar": ("I64", (), struct.pack("<q", -3))})
        gguf = os.path.join(self.tmp.name, "q.gguf")
        self.write_gguf(gguf)
        # Between them: two shards, block-quantized components by schema and by GGUF type (format_id, values and
        # bytes per block, gguf_type), copied and zero-copy ones, a scalar, a name that is not an id.
        for path, schema, strategy in ((EXAMPLE, EXAMPLE_SCHEMA, "mmap"), (EXAMPLE, EXAMPLE_SCHEMA, "read"),
                                       (other, None, "mmap"), (gguf, None, "mmap")):
            with self.subTest(path=os.path.basename(path), strategy=strategy), \
                    self.ctx.load(path, schema=schema, strategy=strategy) as weights:
                compiled, by_ctypes = self.both_ways(weights, len(weights))
                self.assertEqual(compiled, by_ctypes)
                types = [[type(value) for value in values] for values in compiled[0]]  # True == 1: the types too
                self.assertEqual(types, [[type(value) for value in values] for values in by_ctypes[0]])
                self.assertEqual(compiled[1], _abi.OK)
                self.assertEqual(len(compiled[0]), len(weights))
                self.assertEqual([values[0] for values in compiled[0]], list(weights))
                # A call that fails stops both where it failed, with its status.
                compiled, by_ctypes = self.both_ways(weights, len(weights) + 2)
                self.assertEqual(compiled, by_ctypes)
                self.assertEqual(len(compiled[0]), len(weights))
                self.assertNotEqual(compiled[1], _abi.OK)
        with self.ctx.load(gguf) as weights:
            self.assertEqual([(c.id, c.gguf_type, c.format_id, c.values_per_block, c.bytes_per_block, c.shape)
                              for c in weights.values()],
                             [("blk.0.f", 0, None, 0, 0, (1, 4)), ("blk.0.q", 8, "gguf.q8_0", 32, 34, (2,))])
        with self.ctx.load(other) as weights:
            names = {c.source_name: c for c in weights.values()}
            self.assertEqual((names["a b"].shape, names["caf\u00e9.w"].shape, names["scalar"].shape),
                             ((2,), (1, 2, 1), ()))
            self.assertTrue(names["a b"].id.startswith("tensor."))

    def test_a_module_this_python_cannot_load_leaves_the_ctypes_path(self):
        # A build folder whose compiled module is broken (here: not a shared object at all): loads still work.
        build = os.path.join(self.tmp.name, "build")
        os.makedirs(os.path.join(build, "bindings", "python"))
        library = os.path.join(build, "librootspan.so")
        shutil.copyfile(os.environ.get("ROOTSPAN_LIBRARY") or rootspan.library_path(), library)
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            with open(os.path.join(build, "bindings", "python", "_describe" + suffix), "wb") as f:
                f.write(b"not a shared object")
        code = ("import sys, rootspan; from rootspan import _compiled\n"
                "assert _compiled.describe() is None, _compiled.describe()\n"
                "with rootspan.Context(manifests=[]) as ctx, ctx.load(sys.argv[1]) as weights:\n"
                "    print(len(weights), 'components through ctypes')\n")
        with unittest.mock.patch.dict(os.environ, {"ROOTSPAN_LIBRARY": library}):
            status, output = run_python(code, EXAMPLE)
        self.assertEqual(status, 0, output)
        self.assertIn(" components through ctypes", output)

    def test_a_module_built_from_another_copy_of_its_source_is_not_used(self):
        # Its INTERFACE_VERSION says what its functions take and give: one that differs from the package's
        # (an older build folder's module has none) leaves the ctypes path, with a warning naming both.
        import types
        for found in (None, _compiled.INTERFACE_VERSION + 1):
            module = types.SimpleNamespace() if found is None else types.SimpleNamespace(INTERFACE_VERSION=found)
            with self.subTest(found=found), self.assertWarnsRegex(
                    RuntimeWarning, rf"at /old/build/_describe\.so has interface version {found}, this package "
                                    rf"expects {_compiled.INTERFACE_VERSION} "):
                self.assertIsNone(_compiled._usable(module, "/old/build/_describe.so"))
        current = types.SimpleNamespace(INTERFACE_VERSION=_compiled.INTERFACE_VERSION)
        self.assertIs(_compiled._usable(current, "here"), current)
        self.assertEqual(self.compiled().INTERFACE_VERSION, _compiled.INTERFACE_VERSION, "the build's own module")

    def test_bad_calls_are_refused(self):
        compiled = self.compiled()
        with self.ctx.load(EXAMPLE) as weights:
            function = ctypes.cast(self.ctx._state.lib.rootspan_weights_component, ctypes.c_void_p).value
            handle = weights._wstate.handle
            with self.assertRaisesRegex(ValueError, "got 0"):
                compiled.components(0, handle, 1)
            with self.assertRaisesRegex(ValueError, "got 0"):
                compiled.components(function, 0, 1)
            with self.assertRaisesRegex(ValueError, "at least 0, got -1"):
                compiled.components(function, handle, -1)
            with self.assertRaises(TypeError):
                compiled.components(str(function), handle, 1)
            self.assertEqual(compiled.components(function, handle, 0), ([], _abi.OK))

    def map_functions(self):
        lib = self.ctx._state.lib
        return lib.address("rootspan_weights_map_components"), lib.address("rootspan_weights_unmap_components")

    def test_an_export_maps_its_component_in_one_compiled_call(self):
        # numpy() of a component claims and maps it through map_component: the same memory the ctypes way maps.
        compiled = self.compiled()
        for strategy in ("read", "mmap"):
            with self.subTest(strategy=strategy), self.ctx.load(EXAMPLE, strategy=strategy) as weights:
                component = weights["model.norm.weight"]
                with unittest.mock.patch.object(compiled, "map_component", wraps=compiled.map_component) as mapped:
                    array = component.numpy()
                self.assertEqual(mapped.call_count, 1)
                compiled_way = (array.__array_interface__["data"][0], array.nbytes, array.tobytes())
                del array  # its lease ends: the claim and mapping go
                with unittest.mock.patch.object(_compiled, "describe", return_value=None):
                    array = component.numpy()
                self.assertEqual((array.__array_interface__["data"][0], array.nbytes, array.tobytes()), compiled_way)
                self.assertEqual(compiled_way[1], component.nbytes)
                del array

    def test_map_component_refuses_bad_calls_and_leaves_nothing_when_the_map_fails(self):
        compiled = self.compiled()
        map_address, unmap_address = self.map_functions()
        lib = self.ctx._state.lib
        with self.ctx.load(EXAMPLE) as weights:
            handle = weights._wstate.handle
            for addresses in ((0, unmap_address, handle), (map_address, 0, handle), (map_address, unmap_address, 0)):
                with self.subTest(addresses=addresses), self.assertRaisesRegex(ValueError, "got 0"):
                    compiled.map_component(*addresses, 0)
            with self.assertRaisesRegex(ValueError, "an index of at least 0, got -1"):
                compiled.map_component(map_address, unmap_address, handle, -1)
            with self.assertRaises(TypeError):
                compiled.map_component(str(map_address), unmap_address, handle, 0)
            self.assertIsNone(compiled.map_component(map_address, unmap_address, handle, len(weights)))  # past the end
            component = weights["model.norm.weight"]
            claim = component.root.claim(exclusive=True)
            self.assertIsNone(compiled.map_component(map_address, unmap_address, handle, component.index))
            claim.release()  # the refused call claimed nothing: the next one gets the whole component
            claim_handle, mapping, data, nbytes = compiled.map_component(map_address, unmap_address, handle,
                                                                         component.index)
            self.assertEqual((nbytes, data != 0), (component.nbytes, True))
            self.assertEqual(lib.rootspan_unmap(mapping), _abi.OK)
            self.assertEqual(lib.rootspan_claim_release(claim_handle, None), _abi.OK)

    def test_lease_memory_exports_the_memory_read_only_where_asked_and_keeps_its_lease(self):
        # lease_memory (numpy's arrays of exported memory): the bytes at the address as a buffer, read-only where
        # asked, holding the lease (.lease) until the last array over it goes; bad calls refused by name.
        make = getattr(self.compiled(), "lease_memory", None)
        if make is None:
            if os.environ.get("ROOTSPAN_COMPILED_MODULE") == "built" and sys.version_info >= (3, 11):
                self.fail("the build makes lease_memory for Python 3.11 and later, but the module has none")
            self.skipTest("the compiled module has no lease_memory here (a limited API without buffers)")

        class Lease:  # what the memory is kept alive by
            pass

        for readonly in (False, True):
            with self.subTest(readonly=readonly):
                data = ctypes.create_string_buffer(struct.pack("<4f", 1.0, 2.0, 3.0, 4.0), 16)
                lease = Lease()
                gone = weakref.ref(lease)
                memory = make(lease, ctypes.addressof(data) + 4, 8, readonly)
                self.assertIs(memory.lease, lease)
                del lease
                view = memoryview(memory)
                self.assertEqual((view.format, view.shape, view.readonly), ("B", (8,), readonly))
                self.assertEqual(view.tobytes(), struct.pack("<2f", 2.0, 3.0))
                view.release()
                array = numpy.ndarray((2,), "<f4", memory)
                self.assertIs(array.base, memory)
                self.assertEqual((array.tolist(), array.flags.writeable), ([2.0, 3.0], not readonly))
                if readonly:
                    with self.assertRaises((BufferError, TypeError)):  # a writable request is refused
                        struct.pack_into("<f", memory, 0, 9.0)
                else:
                    array[0] = 9.0  # writes the memory itself
                    self.assertEqual(struct.unpack_from("<f", data, 4)[0], 9.0)
                del memory
                self.assertIsNotNone(gone(), "the array keeps the lease alive")
                del array
                self.assertIsNone(gone(), "the last array went: so did the lease")
        with self.assertRaisesRegex(ValueError, "nbytes of at least 0, got -1"):
            make(None, ctypes.addressof(data), -1, False)
        with self.assertRaisesRegex(ValueError, "the address of 8 bytes, got 0"):
            make(None, 0, 8, False)
        with self.assertRaisesRegex(TypeError, "the address as an int, got <class 'str'>"):
            make(None, str(ctypes.addressof(data)), 8, False)
        with self.assertRaises(OverflowError):  # not an address
            make(None, -1, 8, False)
        self.assertEqual(memoryview(make(None, 0, 0, True)).nbytes, 0)
        with self.assertRaisesRegex(TypeError, "made by lease_memory"):  # only lease_memory makes one
            type(make(None, 0, 0, True))()

    def test_a_safetensors_header_table_is_the_one_its_description_gives(self):
        # safetensors_table (the drop-in's safe_open) builds, from the library's walk, the table the JSON
        # description gives: metadata or none, a scalar, an empty tensor, a sub-byte type, names JSON escapes.
        self.compiled()
        with_metadata = os.path.join(self.tmp.name, "meta.safetensors")
        header = {"__metadata__": {"format": "pt", "note": "caf\u00e9"},
                  "w": {"dtype": "F32", "shape": [2, 1], "data_offsets": [0, 8]},
                  'a "quoted"\\name': {"dtype": "I64", "shape": [], "data_offsets": [8, 16]},
                  "empty": {"dtype": "U8", "shape": [0, 3], "data_offsets": [16, 16]},
                  "caf\u00e9.q": {"dtype": "F4", "shape": [4], "data_offsets": [16, 18]}}
        write_safetensors(with_metadata, {"w": ("U8", (18,), bytes(range(18)))}, header_text=json.dumps(header))
        plain = os.path.join(self.tmp.name, "plain.safetensors")
        write_safetensors(plain, {"x": ("BF16", (3,), bytes(6)), "y": ("F64", (1,), bytes(8))})
        for path in (with_metadata, plain):
            with self.subTest(path=os.path.basename(path)):
                with unittest.mock.patch.object(_compiled.describe(), "safetensors_table",
                                                wraps=_compiled.describe().safetensors_table) as walked:
                    compiled = rootspan.inspect.safetensors_file_table(path)
                self.assertEqual(walked.call_count, 1)
                with unittest.mock.patch.object(_compiled, "describe", return_value=None):
                    by_json = rootspan.inspect.safetensors_file_table(path)
                self.assertEqual(compiled, by_json)
                self.assertEqual(list(compiled[1]), list(by_json[1]), "file order, both ways")
        metadata, tensors = rootspan.inspect.safetensors_file_table(with_metadata)
        self.assertEqual(metadata, {"format": "pt", "note": "caf\u00e9"})
        self.assertEqual(tensors['a "quoted"\\name'], ("I64", (), 8 + os.path.getsize(with_metadata) - 18, 8))
        self.assertEqual(list(tensors), ["w", 'a "quoted"\\name', "empty", "caf\u00e9.q"])

    def test_a_refused_header_says_why_as_its_description_does(self):
        # The walk of a file the library refuses gives None; the table then comes from the description, whose
        # error says what is wrong, the same either way.
        compiled = self.compiled()
        broken = os.path.join(self.tmp.name, "cut.safetensors")
        write_safetensors(broken, {"w": ("F32", (4,), bytes(16))})
        with open(broken, "r+b") as f:
            f.truncate(os.path.getsize(broken) - 1)
        lib = self.ctx._state.lib
        addresses = (lib.address("rootspan_safetensors_each_tensor"), lib.address("rootspan_string_free"))
        self.assertIsNone(compiled.safetensors_table(*addresses, os.fsencode(broken)))
        messages = []
        for describe in (_compiled.describe, lambda: None):
            with unittest.mock.patch.object(_compiled, "describe", describe), \
                    self.assertRaises(rootspan.InvalidCheckpointError) as caught:
                rootspan.inspect.safetensors_file_table(broken)
            messages.append(str(caught.exception))
        self.assertEqual(messages[0], messages[1])
        self.assertIn("cut.safetensors", messages[0])
        with self.assertRaisesRegex(ValueError, "got 0"):
            compiled.safetensors_table(0, addresses[1], os.fsencode(broken))
        with self.assertRaisesRegex(ValueError, "got 0"):
            compiled.safetensors_table(addresses[0], 0, os.fsencode(broken))
        with self.assertRaises(TypeError):
            compiled.safetensors_table(*addresses, broken)  # str: the path crosses as bytes

    def test_the_setting_turns_it_off_or_is_refused(self):
        self.compiled()  # "off" means something only where the module is there
        self.addCleanup(setattr, _compiled, "_found", _compiled._found)
        for value, expected in (("off", None), ("on", _compiled.describe())):
            with self.subTest(value=value), unittest.mock.patch.dict(os.environ,
                                                                     {"ROOTSPAN_PYTHON_EXTENSION": value}):
                _compiled._found = None
                self.assertIs(_compiled.describe(), expected)
        with unittest.mock.patch.dict(os.environ, {"ROOTSPAN_PYTHON_EXTENSION": "fast"}):
            _compiled._found = None
            with self.assertRaisesRegex(ValueError, "ROOTSPAN_PYTHON_EXTENSION: expected on or off, got 'fast'"):
                _compiled.describe()
            with self.assertRaisesRegex(ValueError, "ROOTSPAN_PYTHON_EXTENSION"):
                self.ctx.load(EXAMPLE)
            # memory the caller's own root holds still goes to numpy, the way without the module
            with unittest.mock.patch.object(rootspan._memory, "_memory_of", None), \
                    self.ctx.import_host(bytearray(struct.pack("<2f", 1.5, 2.5)), dtype="F32") as root:
                self.assertEqual(root.numpy().tolist(), [1.5, 2.5])


class BadInput(Base):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()
        super().tearDown()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def test_missing_file(self):
        with self.assertRaises(rootspan.IoError) as caught:
            self.ctx.load(self.path("absent.safetensors"))
        self.assertIn("absent.safetensors", str(caught.exception))
        self.assertEqual(caught.exception.operation, "open_checkpoint")
        self.assertIsInstance(caught.exception, OSError)

    def test_hostile_headers(self):
        data = numpy.arange(4, dtype="<f4").tobytes()
        cases = {
            "offsets past the end": '{"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 4096]}}',
            "not json": '{"w": [',
            "shape and bytes disagree": '{"w": {"dtype": "F32", "shape": [5], "data_offsets": [0, 16]}}',
            "unknown dtype": '{"w": {"dtype": "F33", "shape": [4], "data_offsets": [0, 16]}}',
        }
        for what, header in cases.items():
            with self.subTest(what):
                write_safetensors(self.path("bad.safetensors"), {"w": ("F32", (4,), data)}, header_text=header)
                with self.assertRaises(rootspan.InvalidCheckpointError) as caught:
                    self.ctx.load(self.path("bad.safetensors"))
                self.assertIn("bad.safetensors", str(caught.exception))
        with open(self.path("huge.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", 1 << 62) + b"{}")
        with self.assertRaises(rootspan.InvalidCheckpointError):
            self.ctx.load(self.path("huge.safetensors"))

    def test_wrong_schema(self):
        wrong = self.path("schema.json")
        with open(wrong, "w") as f:
            f.write('{"schema_version": "1.0.0", "components": [{"id": "norm", "role": "values", '
                    '"sources": ["model.norm.weight"], "dimensions": [33], '
                    '"encoding": {"dense": {"element_type": "F32"}}, "required": true}]}')
        with self.assertRaises(rootspan.Error) as caught:
            self.ctx.load(EXAMPLE, schema=wrong)
        self.assertIn(caught.exception.name, ("InvalidSchema", "InvalidPayload"))
        self.assertIn("norm", str(caught.exception))
        with open(wrong, "w") as f:
            f.write('{"schema_version": "1.0.0", "components": [{"id": "x"}]}')
        with self.assertRaises(rootspan.InvalidSchemaError):
            self.ctx.load(EXAMPLE, schema=wrong)

    def test_wrong_argument_types(self):
        with self.assertRaisesRegex(TypeError, "path must be a path"):
            self.ctx.load(42)
        with self.assertRaisesRegex(TypeError, "schema must be a path"):
            self.ctx.load(EXAMPLE, schema=["s"])
        with self.assertRaisesRegex(ValueError, "strategy must be 'auto', 'mmap', 'read' or 'direct'"):
            self.ctx.load(EXAMPLE, strategy="fast")
        with self.assertRaisesRegex(TypeError, "progress must be callable"):
            self.ctx.load(EXAMPLE, progress=5)
        with self.assertRaisesRegex(TypeError, "provider must be a provider name"):
            self.ctx.load(EXAMPLE, provider=None)
        with self.assertRaisesRegex(ValueError, "device must lie in"):
            self.ctx.load(EXAMPLE, device=-1)
        with self.assertRaisesRegex(ValueError, r"device must lie in \[0, 2\*\*32\), got 4294967296"):
            self.ctx.load(EXAMPLE, device=2**32)  # never truncated to device 0
        with self.assertRaisesRegex(TypeError, "staging_buffer_bytes must be an int, got str"):
            self.ctx.load(EXAMPLE, staging_buffer_bytes="16M")
        with self.assertRaisesRegex(ValueError, r"staging_buffer_count must lie in \[0, 2\*\*32\)"):
            self.ctx.load(EXAMPLE, staging_buffer_count=-1)
        # In range for Python, refused by the library, which names the option and its limit.
        with self.assertRaisesRegex(rootspan.InvalidArgumentError, "options.staging_buffer_count is 100000"):
            self.ctx.load(EXAMPLE, staging_buffer_count=100000)
        with self.assertRaises(rootspan.NotFoundError) as caught:
            self.ctx.load(EXAMPLE, provider="nonesuch")
        self.assertIn("nonesuch", str(caught.exception))


class NoLeak(Base):
    def test_repeated_loads_leave_nothing(self):
        def cycle():
            with self.ctx.load(EXAMPLE, schema=EXAMPLE_SCHEMA) as weights:
                for component in weights.values():
                    array = component.numpy()
                    capsule = component.__dlpack__(max_version=(1, 1))
                    del array, capsule
        for _ in range(20):  # warm up allocator pools and caches
            cycle()
        gc.collect()
        before = rss_kib()
        for _ in range(300):
            cycle()
        gc.collect()
        grown = rss_kib() - before
        self.assertLess(grown, 2048, f"RSS grew by {grown} KiB over 300 loads")
        self.assertEqual(self.ctx._state.leases, 0)
        self.assertEqual([w for w in self.ctx._state.weights if w.handle is not None], [])
        # tearDown: no export and no root left



class TruncatedFile(unittest.TestCase):
    """The package's own reads of a zero-copy component whose file was truncated after the load (issue 35
    item 7): an IoError naming the file, as the C side's, never a SIGBUS. Each runs in a child process, which
    a SIGBUS would kill."""

    def test_hashing_and_copying_an_exported_component_are_io_errors(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "m.safetensors")
            write_safetensors(path, {"w": ("F32", (1024, 256), bytes(range(256)) * 4096)})
            status, output = run_python(TRUNCATED_COMPONENT, path)
        self.assertEqual(status, 0, output)
        lines = output.splitlines()
        self.assertEqual(len(lines), 4, output)
        self.assertEqual(lines[0], "before: True")
        for line, what in zip(lines[1:3], ("sha256", "dlpack copy")):
            self.assertRegex(line, rf"^{what}: IoError .*the file was truncated to \d+ bytes")
            self.assertIn(path, line)
        self.assertEqual(lines[3], "after: the process goes on")


TRUNCATED_COMPONENT = """
import os, sys, hashlib, rootspan
path = sys.argv[1]
with rootspan.Context(manifests=[]) as ctx, ctx.load(path, provider="host", strategy="mmap") as weights:
    c = weights["w"]
    assert c.zero_copy, c
    array = c.numpy()  # exported: sha256 hashes the memory under the export's claim
    print("before:", c.sha256() == hashlib.sha256(bytes(range(256)) * 4096).hexdigest())
    os.truncate(path, os.path.getsize(path) // 2)
    for what, call in (("sha256", c.sha256), ("dlpack copy", lambda: c.__dlpack__(copy=True))):
        try:
            call()
            print(what + ": read")
        except rootspan.errors.IoError as e:
            print(what + ":", type(e).__name__, e)
    del array
    print("after: the process goes on")
"""


if __name__ == "__main__":
    unittest.main()
