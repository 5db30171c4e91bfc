#!/usr/bin/python3
"""DLPack and numpy over roots and mappings: the same memory seen by numpy
(1.24, a legacy consumer), torch (1.13, legacy too) and a ctypes consumer of
versioned capsules; read-only memory never handed out writable; and the
claim held for exactly as long as a consumer holds the memory, released from
whatever thread lets go."""
import ctypes
import gc
import sys
import threading
import unittest

try:
    import numpy
    import torch
    import torch.utils.dlpack
except ImportError as missing:
    print(f"skipped: {missing} (the DLPack suite needs numpy and torch)")
    sys.exit(77)

import rootspan
from rootspan import dlpack
from support import VERSIONED_NUMPY, VERSIONED_TORCH, Consumed, context


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
        root = self.read_only_root()
        array = root.numpy()
        self.assertEqual(array.ctypes.data, mapping_address(root))
        self.assertFalse(array.flags.writeable)
        with self.assertRaises(ValueError):
            array[0] = 1.0
        with self.assertRaisesRegex(ValueError, "cannot set WRITEABLE flag"):
            array.flags.writeable = True
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


if __name__ == "__main__":
    unittest.main()
