#!/usr/bin/python3
"""DLPack and numpy over roots and mappings: the same memory seen by numpy
(1.24, a legacy consumer), torch (1.13, legacy too) and a ctypes consumer of
versioned capsules; read-only memory never handed out writable; and the
claim held for exactly as long as a consumer holds the memory, released from
whatever thread lets go."""
import ctypes
import gc
import os
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
    print(f"skipped: {missing} (the DLPack suite needs numpy and torch)")
    sys.exit(77)

import rootspan
import rootspan.torch
from rootspan import _compiled, _memory, _tensors, dlpack
from support import VERSIONED_NUMPY, VERSIONED_TORCH, Consumed, context, write_safetensors


def mapping_address(root):
    with root.claim() as claim, claim.map() as mapping:
        return mapping.address


class Base(unittest.TestCase):
    def setUp(self):
        self.ctx = context()
        self.exports_before = dlpack.live_exports()

    def tearDown(self):
        gc.collect()
        self.assertEqual(dlpack.live_exports(), self.exports_before, "an export was never deleted")
        self.assertEqual(self.ctx.close(), 0, "a test left a root live")

    def read_only_root(self, data=b"read-only bytes!" * 4):
        self.keep = data
        return self.ctx.import_host(data, dtype="F32")


class SameMemory(Base):
    def test_numpy_and_torch_see_the_roots_mapping(self):
        with self.ctx.allocate(64, dtype="F32") as root:
            address = mapping_address(root)
            array = numpy.from_dlpack(root)
            tensor = torch.utils.dlpack.from_dlpack(root)
            self.assertEqual(array.ctypes.data, address)
            self.assertEqual(tensor.data_ptr(), address)
            self.assertEqual((array.dtype, array.shape), (numpy.float32, (16,)))
            self.assertEqual((tensor.dtype, tuple(tensor.shape)), (torch.float32, (16,)))
            self.assertEqual(root.__dlpack_device__(), (dlpack.DLDeviceType.kDLCPU, 0))
            del array, tensor

    def test_write_through_an_exclusive_mapping_is_visible_in_both(self):
        with self.ctx.allocate(64, dtype="F32") as root:
            with root.claim(exclusive=True) as claim, claim.map(write=True) as mapping:
                array = numpy.from_dlpack(mapping)
                tensor = torch.utils.dlpack.from_dlpack(mapping)
                self.assertEqual(array.ctypes.data, mapping.address)
                self.assertEqual(tensor.data_ptr(), mapping.address)
                mapping.view.cast("f")[3] = 2.5
                self.assertEqual(array[3], 2.5)
                self.assertEqual(tensor[3].item(), 2.5)
                with self.assertRaises(rootspan.BusyError):  # the consumers hold the mapping
                    claim.release()
                del array, tensor

    def test_numpy_is_zero_copy_and_typed(self):
        with self.ctx.allocate(32, dtype="I16") as root:
            root.write(0, numpy.arange(16, dtype="<i2").tobytes())
            array = root.numpy()
            self.assertEqual(array.ctypes.data, mapping_address(root))
            self.assertEqual(array.dtype, numpy.int16)
            self.assertTrue(array.flags.writeable)
            self.assertEqual(array.tolist(), list(range(16)))
            del array

    def test_bf16_goes_to_torch_and_numpy_needs_a_dtype(self):
        with self.ctx.allocate(8, dtype="BF16") as root:
            root.write(0, numpy.array([1.0, -2.0, 0.5, 3.0], dtype="<f4").view("<u2")[1::2].tobytes())
            tensor = torch.utils.dlpack.from_dlpack(root)
            self.assertEqual(tensor.dtype, torch.bfloat16)
            self.assertEqual(tensor.tolist(), [1.0, -2.0, 0.5, 3.0])
            with self.assertRaisesRegex(TypeError, "BF16 has no numpy dtype; pass dtype="):
                root.numpy()
            bits = root.numpy(dtype=numpy.uint16)
            self.assertEqual(bits.shape, (4,))
            del tensor, bits

    def test_float8_needs_a_versioned_consumer(self):
        with self.ctx.allocate(4, dtype="F8_E4M3") as root:
            with self.assertRaisesRegex(BufferError, "only DLPack 1.1 consumers know, and the consumer asked for"):
                numpy.from_dlpack(root)  # numpy 1.24 asks for a legacy capsule, 2.x for (1, 0)
            consumed = Consumed(root.__dlpack__(max_version=(1, 1)), versioned=True)
            self.assertEqual(consumed.dtype, (10, 8, 1))  # kDLFloat8_e4m3fn
            consumed.delete()


class ReadOnly(Base):
    def test_numpy_is_not_writeable(self):
        # The array's base is the compiled module's buffer of the memory (lease_memory), read-only, or, without
        # it, an owner with an array interface, which exports no buffer: nothing makes the array writable.
        for way in ("buffer", "interface"):
            lookup = _memory._lease_memory if way == "buffer" else lambda: None  # where ndarray finds lease_memory
            with self.subTest(way=way), unittest.mock.patch.object(_memory, "_memory_of", None), \
                    unittest.mock.patch.object(_memory, "_lease_memory", side_effect=lookup):
                if way == "buffer" and not _memory._lease_memory():
                    self.skipTest("the compiled module has no lease_memory here")
                root = self.read_only_root()
                array = root.numpy()
                self.assertEqual(array.ctypes.data, mapping_address(root))
                self.assertFalse(array.flags.writeable)
                with self.assertRaises(ValueError):
                    array[0] = 1.0
                with self.assertRaisesRegex(ValueError, "cannot set WRITEABLE flag"):
                    array.flags.writeable = True
                if way == "buffer":
                    self.assertTrue(memoryview(array.base).readonly)
                    with self.assertRaisesRegex(TypeError, "not writable"):  # nor writable through the base
                        ctypes.c_char.from_buffer(array.base)
                else:
                    with self.assertRaises(TypeError):  # the base object exports no buffer to get around it
                        memoryview(array.base)
                with self.assertRaises(TypeError):
                    ctypes.c_char.from_buffer(array)
                self.assertTrue(memoryview(array).readonly)
                del array
                root.release()

    def test_read_mapping_view_is_read_only(self):
        root = self.read_only_root()
        with root.claim() as claim, claim.map() as mapping:
            view = mapping.view
            self.assertTrue(view.readonly)
            with self.assertRaises(TypeError):
                view[0] = 0
            with self.assertRaises(TypeError):
                ctypes.c_char.from_buffer(view.obj)
            with self.assertRaises(rootspan.ReadOnlyError):
                root.claim(exclusive=True)
            del view
        root.release()

    def test_legacy_capsule_is_refused_naming_the_fix(self):
        root = self.read_only_root()
        consumers = [lambda r: r.__dlpack__()]
        if not VERSIONED_NUMPY:  # numpy >= 2.1 asks for a versioned capsule and makes a read-only array
            consumers.append(numpy.from_dlpack)
        if not VERSIONED_TORCH:
            consumers.append(torch.utils.dlpack.from_dlpack)
        for consumer in consumers:
            with self.assertRaises(BufferError) as caught:
                consumer(root)
            message = str(caught.exception)
            self.assertIn("read-only", message)
            self.assertIn(".numpy()", message)
            self.assertIn("copy=True", message)
        root.release()  # nothing was left claimed

    def test_versioned_capsule_carries_read_only(self):
        root = self.read_only_root()
        consumed = Consumed(root.__dlpack__(max_version=(1, 1)), versioned=True)
        self.assertEqual(consumed.version, (1, 1))
        self.assertEqual(consumed.flags, dlpack.FLAG_READ_ONLY)
        self.assertEqual(consumed.data, mapping_address(root))
        self.assertEqual(consumed.device, (1, 0))
        self.assertEqual(consumed.dtype, (2, 32, 1))
        self.assertEqual((consumed.shape, consumed.strides, consumed.byte_offset), ((16,), (1,), 0))
        with self.assertRaises(rootspan.BusyError):  # the consumer holds a claim
            root.release()
        consumed.delete()
        root.release()

    def test_a_1_0_consumer_gets_version_1_0(self):
        root = self.read_only_root()
        consumed = Consumed(root.__dlpack__(max_version=(1, 0)), versioned=True)
        self.assertEqual(consumed.version, (1, 0))
        consumed.delete()
        legacy = Consumed(self.ctx.allocate(8).__dlpack__(max_version=(0, 8)), versioned=False)
        legacy.delete()
        root.release()

    def test_copy_gives_a_fresh_writable_copy(self):
        root = self.read_only_root()
        original = root.read()
        tensor = torch.utils.dlpack.from_dlpack(root.__dlpack__(copy=True))
        self.assertNotEqual(tensor.data_ptr(), mapping_address(root))
        tensor.zero_()
        self.assertEqual(root.read(), original)
        consumed = Consumed(root.__dlpack__(max_version=(1, 1), copy=True), versioned=True)
        self.assertEqual(consumed.flags, dlpack.FLAG_IS_COPIED)
        self.assertEqual(ctypes.string_at(consumed.data, 64), original)
        root.release()  # a copy holds no claim
        consumed.delete()
        del tensor


class NumpyInterop(Base):
    def test_dtype_names_and_numpy_dtypes(self):
        cases = {"F32": "F32", "f4": "F32", numpy.float32: "F32", numpy.dtype("<f2"): "F16", "bf16": "BF16",
                 "f8": "F64", "F8_E4M3": "F8_E4M3", bool: "BOOL", numpy.complex64: "C32"}
        for given, expected in cases.items():
            with self.subTest(given=given), self.ctx.allocate(16, dtype=given) as root:
                self.assertEqual(root.info.dtype, expected)
        with self.assertRaisesRegex(ValueError, "numpy dtype >f4 has no rootspan element type"):
            self.ctx.allocate(16, dtype=">f4")
        with self.assertRaisesRegex(TypeError, "dtype must be a rootspan dtype name"):
            self.ctx.allocate(16, dtype=3)

    def test_import_host_shares_a_numpy_array(self):
        source = numpy.arange(8, dtype=numpy.float32)
        with self.ctx.import_host(source, dtype=source.dtype) as root:
            view = root.numpy()
            self.assertEqual(view.ctypes.data, source.ctypes.data)
            source[0] = 9.0
            self.assertEqual(view[0], 9.0)
            del view
        with self.assertRaisesRegex(ValueError, "needs a contiguous bytes-like object"):
            self.ctx.import_host(source[::2])


class Arguments(Base):
    def test_unsupported_arguments(self):
        with self.ctx.allocate(16, dtype="F32") as root:
            with self.assertRaisesRegex(ValueError, "stream must be None for host"):
                root.__dlpack__(stream=1)
            with self.assertRaisesRegex(BufferError, r"dl_device \(2, 0\) differs"):
                root.__dlpack__(dl_device=(2, 0))
            with self.assertRaisesRegex(TypeError, "max_version must be None or a"):
                root.__dlpack__(max_version="1.0")
            with self.assertRaisesRegex(TypeError, "copy must be None, True or False"):
                root.__dlpack__(copy="yes")
            with self.assertRaisesRegex(TypeError, "dl_device must be None or a"):
                root.__dlpack__(dl_device="cpu")
            with self.assertRaises(TypeError):
                root.__dlpack__(None)  # keyword-only
            Consumed(root.__dlpack__(dl_device=(dlpack.DLDeviceType.kDLCPU, 0), copy=False), False).delete()


class Lifetime(Base):
    def test_unconsumed_capsule_deletes_itself(self):
        with self.ctx.allocate(16) as root:
            capsule = root.__dlpack__()
            self.assertEqual(dlpack.live_exports(), self.exports_before + 1)
            with self.assertRaises(rootspan.BusyError):
                root.release()
            del capsule
            self.assertEqual(dlpack.live_exports(), self.exports_before)

    def test_consumed_capsule_is_left_to_the_consumer(self):
        with self.ctx.allocate(16) as root:
            capsule = root.__dlpack__(max_version=(1, 1))
            consumed = Consumed(capsule, versioned=True)
            del capsule  # renamed: its destructor must not delete the tensor
            self.assertEqual(dlpack.live_exports(), self.exports_before + 1)
            consumed.delete()
            self.assertEqual(dlpack.live_exports(), self.exports_before)

    def test_numpy_keeps_the_claim(self):
        with self.ctx.allocate(16) as root:
            array = root.numpy()
            view = array[4:8]
            del array
            with self.assertRaises(rootspan.BusyError):
                root.release()
            del view
            root.release()

    def test_deleter_runs_on_another_thread(self):
        root = self.ctx.allocate(64, dtype="F32")
        holder = [torch.utils.dlpack.from_dlpack(root)]
        versioned = Consumed(root.__dlpack__(max_version=(1, 1)), versioned=True)
        threads = []

        def let_go():
            threads.append(threading.get_ident())
            holder.clear()  # torch runs the legacy deleter here
            versioned.delete()

        worker = threading.Thread(target=let_go)
        worker.start()
        worker.join()
        self.assertNotEqual(threads[0], threading.get_ident())
        self.assertEqual(dlpack.live_exports(), self.exports_before)
        root.release()  # both claims went with the deleters

    def test_concurrent_exports_and_deleters(self):
        root = self.ctx.allocate(4096, dtype="F32")
        failures = []

        def worker():
            try:
                for _ in range(200):
                    array = root.numpy()
                    tensor = torch.utils.dlpack.from_dlpack(root)
                    consumed = Consumed(root.__dlpack__(max_version=(1, 1)), versioned=True)
                    if array.ctypes.data != tensor.data_ptr() or consumed.data != tensor.data_ptr():
                        failures.append("addresses differ")
                    del array, tensor
                    consumed.delete()
            except Exception as e:  # reported below: a thread's exception would be lost
                failures.append(repr(e))

        workers = [threading.Thread(target=worker) for _ in range(8)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        self.assertEqual(failures, [])
        self.assertEqual(self.ctx._state.leases, 0)
        root.release()

    def test_consumer_outlives_the_context_object(self):
        ctx = context()
        root = ctx.allocate(16, dtype="U8")
        root.write(0, bytes(range(16)))
        tensor = torch.utils.dlpack.from_dlpack(root)
        del root
        self.assertIsNone(ctx.close())  # the tensor holds memory: destroyed when it goes
        state = ctx._state
        del ctx
        gc.collect()
        self.assertEqual(tensor.tolist(), list(range(16)))
        self.assertIsNotNone(state.handle)
        del tensor  # the last user: the context goes with it
        gc.collect()
        self.assertIsNone(state.handle)


class _Owner:
    """Something a capsule keeps alive, and that says when it went."""


class CompiledCapsules(Base):
    """Copied tensors reach torch through DLPack capsules the compiled module makes (tensor_capsule): the same
    tensors the numpy way makes, their memory held exactly as long as torch holds it."""

    def setUp(self):
        super().setUp()
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        module = _compiled.describe()
        self.make = getattr(module, "tensor_capsule", None)
        if os.environ.get("ROOTSPAN_COMPILED_CAPSULES") == "built":  # meson's tests: the build made it
            self.assertIsNotNone(self.make, "the build made tensor_capsule, but the package did not find it")
        if self.make is None:
            self.skipTest("the compiled module has no tensor_capsule here (no dlpack/dlpack.h at its build)")

    def capsule(self, owner, nbytes=16, shape=(2, 2), code=2, bits=32, address=None):
        buffer = ctypes.create_string_buffer(nbytes or 1)
        owner.buffer = buffer  # the memory lives as long as the owner
        return self.make(owner, ctypes.addressof(buffer) if address is None else address, nbytes, shape, code,
                         bits)

    def test_the_same_tensors_as_the_numpy_way(self):
        # Every type torch 1.13 has: those the capsule carries, and those it leaves to numpy (bool, complex).
        path = os.path.join(self.tmp.name, "types.safetensors")
        values = {"U8": b"\x01\xff", "I8": b"\x80\x7f", "I16": struct.pack("<2h", -2, 300),
                  "I32": struct.pack("<2i", -7, 1 << 30), "I64": struct.pack("<2q", -1, 1 << 40),
                  "F16": struct.pack("<2e", 1.5, -2.0), "BF16": b"\x80\x3f\x00\xc0",
                  "F32": struct.pack("<2f", 0.25, -3.5), "F64": struct.pack("<2d", 1e300, -0.0),
                  "BOOL": b"\x01\x00", "C64": struct.pack("<4f", 1, 2, 3, 4)}
        tensors = {f"{name}.row": (name, (1, 2) if name != "C64" else (2,), data) for name, data in values.items()}
        tensors["scalar"] = ("F32", (), struct.pack("<f", 9.0))
        tensors["grid"] = ("I32", (2, 1, 3), struct.pack("<6i", *range(6)))
        write_safetensors(path, tensors)
        module = _compiled.describe()
        for strategy in ("read", "direct"):
            with self.subTest(strategy=strategy):
                with unittest.mock.patch.object(module, "tensor_capsule", wraps=self.make) as made:
                    by_capsule = rootspan.torch.load(path, strategy=strategy)
                # every tensor of a type the capsule carries came that way; bool and complex through numpy
                self.assertEqual(made.call_count, len(tensors) - 2)
                with unittest.mock.patch.object(_compiled, "describe", return_value=None):
                    by_numpy = rootspan.torch.load(path, strategy=strategy)
                self.assertEqual(sorted(by_capsule), sorted(tensors))
                for name, tensor in by_capsule.items():
                    other = by_numpy[name]
                    self.assertEqual((tensor.dtype, tensor.shape, tensor.stride()),
                                     (other.dtype, other.shape, other.stride()), name)
                    self.assertTrue(torch.equal(tensor.reshape(-1).view(torch.uint8),
                                                other.reshape(-1).view(torch.uint8)), name)
                    self.assertEqual(bytes(tensor.reshape(-1).view(torch.uint8).tolist()), tensors[name][2], name)
                by_capsule["F32.row"][0, 0] = 7.0  # writable, and its own memory
                self.assertEqual(by_numpy["F32.row"][0, 0].item(), 0.25)

    def test_capsules_reach_torch_through_its_converter_or_else_through_from_dlpack(self):
        # torch's own converter of a capsule (what from_dlpack calls for one) where this torch has it; in a
        # torch without it, from_dlpack: the same tensor either way
        path = os.path.join(self.tmp.name, "one.safetensors")
        write_safetensors(path, {"w": ("F32", (2,), struct.pack("<2f", 1.5, -2.0))})
        converter = getattr(torch._C, "_from_dlpack", None)
        self.assertIsNotNone(converter, f"torch {torch.__version__} has no torch._C._from_dlpack")
        for present in (True, False):
            private = unittest.mock.Mock(side_effect=converter)
            public = unittest.mock.Mock(side_effect=converter)
            with self.subTest(converter_present=present), \
                    unittest.mock.patch.object(_tensors, "_from_dlpack", None), \
                    unittest.mock.patch.object(torch._C, "_from_dlpack", private if present else None), \
                    unittest.mock.patch.object(torch.utils.dlpack, "from_dlpack", public):
                tensor = rootspan.torch.load(path, strategy="read")["w"]
                self.assertEqual((private.call_count, public.call_count), (1, 0) if present else (0, 1))
                self.assertEqual(tensor.tolist(), [1.5, -2.0])

    def test_the_lease_lives_as_long_as_the_tensor(self):
        weights = self.ctx.load(self.write_one(), strategy="read")
        component = weights["w"]
        tensor = rootspan.torch.tensor_of(component)
        lease = weakref.ref(component._export_lease())
        weights.close()  # the held root waits for the tensor
        gc.collect()
        self.assertIsNotNone(lease(), "torch holds the tensor: its lease must be live")
        self.assertFalse(component.root.released)
        self.assertEqual(tensor.tolist(), [1.0, 2.0, 3.0, 4.0])
        del tensor
        gc.collect()
        self.assertIsNone(lease(), "the tensor went: its lease must have gone with it")
        self.assertTrue(component.root.released)

    def test_a_tensor_dropped_on_another_thread_lets_its_owner_go(self):
        owner = _Owner()
        gone = weakref.ref(owner)
        tensors = [torch.utils.dlpack.from_dlpack(self.capsule(owner))]
        del owner
        self.assertIsNotNone(gone())
        worker = threading.Thread(target=tensors.clear)
        worker.start()
        worker.join()
        gc.collect()
        self.assertIsNone(gone(), "the deleter, run on the worker thread, must drop the owner")

    def test_a_capsule_no_one_takes_lets_its_owner_go(self):
        owner = _Owner()
        gone = weakref.ref(owner)
        capsule = self.capsule(owner)
        del owner
        self.assertIsNotNone(gone())
        del capsule
        self.assertIsNone(gone())

    def test_strides_are_always_set_row_major(self):
        tensor = torch.utils.dlpack.from_dlpack(self.capsule(_Owner(), nbytes=24, shape=(2, 1, 3), code=0,
                                                             bits=32))
        self.assertEqual((tensor.shape, tensor.stride(), tensor.dtype), ((2, 1, 3), (3, 3, 1), torch.int32))
        scalar = torch.utils.dlpack.from_dlpack(self.capsule(_Owner(), nbytes=8, shape=(), code=2, bits=64))
        self.assertEqual((scalar.shape, scalar.dtype), ((), torch.float64))

    def test_bad_calls_are_refused(self):
        owner = _Owner()
        references = sys.getrefcount(owner)
        with self.assertRaisesRegex(ValueError, r"the shape holds 6 elements of 32 bits, but the memory holds 16 "
                                                r"bytes, room for 4"):
            self.capsule(owner, nbytes=16, shape=(2, 3))
        with self.assertRaisesRegex(ValueError, r"dimension 1 of the shape is -2, expected at least 0"):
            self.capsule(owner, shape=(2, -2))
        with self.assertRaisesRegex(ValueError, r"multiply past 2\^63 at dimension 1"):
            self.capsule(owner, shape=(1 << 40, 1 << 40))
        with self.assertRaisesRegex(ValueError, r"multiply past 2\^63 at dimension 2"):  # strides count a 0 as 1
            self.capsule(owner, shape=(0, 1 << 62, 4))
        with self.assertRaisesRegex(ValueError, r"got code 2, 12 bits"):
            self.capsule(owner, bits=12)
        with self.assertRaisesRegex(ValueError, r"16 bytes at address 0"):
            self.capsule(owner, address=0)
        with self.assertRaisesRegex(ValueError, r"expected a rank of at most 64, got 65"):
            self.capsule(owner, shape=(1,) * 65)
        with self.assertRaises(OverflowError):  # never wrapped modulo 2^64
            self.make(owner, 4096, -1, (2, 2), 2, 32)
        with self.assertRaises(OverflowError):
            self.make(owner, 1 << 64, 16, (2, 2), 2, 32)
        with self.assertRaises(TypeError):  # a shape is a tuple
            self.capsule(owner, shape=[2, 2])
        self.assertEqual(sys.getrefcount(owner), references, "a refused call must not keep the owner")
        empty = torch.utils.dlpack.from_dlpack(self.capsule(owner, nbytes=0, shape=(0, 3), address=0))
        self.assertEqual((empty.shape, empty.numel()), ((0, 3), 0))

    def write_one(self):
        path = os.path.join(self.tmp.name, "one.safetensors")
        write_safetensors(path, {"w": ("F32", (4,), struct.pack("<4f", 1, 2, 3, 4))})
        return path


if __name__ == "__main__":
    unittest.main()
