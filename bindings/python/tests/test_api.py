#!/usr/bin/python3
"""The rootspan package without numpy: contexts, providers, roots, claims,
mappings as memoryviews, host imports, and errors as exceptions carrying the
library's diagnostic fields."""
import gc
import os
import subprocess
import sys
import unittest

import rootspan
from support import context


class Version(unittest.TestCase):
    def test_the_package_and_the_library_agree(self):
        self.assertEqual(rootspan.__version__, rootspan.version())


class Imports(unittest.TestCase):
    def test_dlpack_is_imported_on_first_use(self):
        # A fresh process: importing the package and the drop-in builds no DLPack structures; the first use of
        # rootspan.dlpack imports it, and an unknown attribute is still an AttributeError.
        code = ("import sys, rootspan, rootspan.safetensors\n"
                "assert 'rootspan.dlpack' not in sys.modules, 'imported with the package'\n"
                "assert rootspan.dlpack.DLDeviceType.kDLCPU == 1\n"
                "assert 'rootspan.dlpack' in sys.modules\n"
                "try:\n    rootspan.no_such_thing\nexcept AttributeError as e:\n    print(e)\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("module 'rootspan' has no attribute 'no_such_thing'", out.stdout)


class ErrorClasses(unittest.TestCase):
    def test_one_class_per_status_code(self):
        # Every code the library names has its class, named as the library names the code, and no class
        # names a code the library does not know.
        lib = rootspan._library.get()
        code = 1
        while (name := lib.rootspan_status_name(code).decode()) != "Unknown":
            cls = getattr(rootspan, name + "Error")
            self.assertTrue(issubclass(cls, rootspan.Error))
            self.assertEqual(cls.code, code)
            self.assertIs(rootspan.error_class(code), cls)
            self.assertEqual(cls("x").name, name)
            code += 1
        self.assertEqual(code, len(rootspan._abi.STATUS_NAMES), "a Python error class for a code the library lacks")
        self.assertGreaterEqual(code, 32)  # DigestMismatch (31) is the last code of 0.6.0
        self.assertEqual(rootspan.Error("x", code=999).name, "Unknown")
        self.assertTrue(issubclass(rootspan.InvalidArgumentError, ValueError))
        self.assertIs(rootspan.error_class(999), rootspan.Error)


class Providers(unittest.TestCase):
    def test_report_with_devices(self):
        with context() as ctx:
            report = {p.name: p for p in ctx.providers()}
            host = report["host"]
            self.assertEqual((host.kind, host.origin, host.state, host.code), ("host", "static", "loaded", 0))
            self.assertEqual(host.device_count, 1)
            self.assertEqual(len(host.devices), 1)
            self.assertEqual(host.devices[0].ordinal, 0)
            self.assertGreater(host.devices[0].total_memory_bytes, 0)
            self.assertEqual(ctx.manifests(), [])

    def test_no_static_leaves_out_the_host_provider(self):
        with context(no_static=True) as ctx:
            self.assertEqual(ctx.providers(), [])
            with self.assertRaises(rootspan.NotFoundError) as caught:
                ctx.allocate(64)
            self.assertIn("no loaded provider is named 'host'", str(caught.exception))
            self.assertEqual(caught.exception.operation, "root_allocate")

    def test_manifest_named_plugin(self):
        manifest = os.environ["ROOTSPAN_BUILD_MANIFEST"]
        with context(no_static=True) as ctx:
            self.assertEqual(ctx.providers(), [])
        with rootspan.Context(manifests=[manifest], no_static=True) as ctx:
            self.assertEqual(ctx.manifests(), [manifest])
            # The build manifest lists every plugin the build made; the GPU
            # ones report "no device" on a machine without one.
            providers = {p.name: p for p in ctx.providers()}
            host = providers.pop("host")
            self.assertEqual((host.name, host.origin, host.state, host.manifest), ("host", "manifest", "loaded",
                                                                                 manifest))
            for other in providers.values():
                self.assertIn(other.state, ("loaded", "no device"), other)
                if other.state == "no device":
                    self.assertEqual(other.devices, [])
                    self.assertTrue(other.reason, other)
            self.assertTrue(host.library.endswith("librootspan-host.so"))
            self.assertEqual(len(host.devices), 1)
            self.assertIsNone(host.reason)
            if os.path.exists("/sys/kernel/mm/transparent_hugepage/enabled"):
                self.assertTrue(host.note.startswith("transparent huge pages: "), host.note)
            with ctx.allocate(16) as root:
                self.assertEqual(root.info.provider, "host")

    def test_manifests_none_discovers(self):
        manifest = os.environ["ROOTSPAN_BUILD_MANIFEST"]
        saved = os.environ.get("ROOTSPAN_MANIFEST")
        os.environ["ROOTSPAN_MANIFEST"] = manifest
        try:
            with rootspan.Context() as ctx:
                self.assertEqual(ctx.manifests(), [manifest])
                states = {(p.origin, p.state, p.policy) for p in ctx.providers() if p.name == "host"}
                # the plugin's "host" is skipped: the compiled-in one of that name came first
                self.assertEqual(states, {("static", "loaded", None), ("manifest", "skipped", "L6")})
        finally:
            if saved is None:
                del os.environ["ROOTSPAN_MANIFEST"]
            else:
                os.environ["ROOTSPAN_MANIFEST"] = saved

    def test_missing_manifest_is_an_io_error_citing_l1(self):
        with self.assertRaises(rootspan.IoError) as caught:
            rootspan.Context(manifests=["/nonexistent/rootspan.json"])
        e = caught.exception
        self.assertEqual((e.code, e.name, e.policy, e.operation), (26, "Io", "L1", "load_manifest"))
        self.assertIn("/nonexistent/rootspan.json", str(e))

    def test_wrong_argument_types(self):
        with self.assertRaisesRegex(TypeError, "list of paths, not a single str"):
            rootspan.Context(manifests="providers.json")
        with self.assertRaisesRegex(TypeError, "entries must be paths"):
            rootspan.Context(manifests=[3])
        with self.assertRaisesRegex(TypeError, "no_static must be True or False"):
            rootspan.Context(manifests=[], no_static="yes")


class Roots(unittest.TestCase):
    def setUp(self):
        self.ctx = context()

    def tearDown(self):
        gc.collect()
        self.assertEqual(self.ctx.close(), 0, "a test left a root live")

    def test_allocate_info_and_release(self):
        root = self.ctx.allocate(256, alignment=128, dtype="F32")
        info = root.info
        self.assertEqual((info.byte_length, info.dtype, info.provider, info.read_only, info.host_accessible),
                         (256, "F32", "host", False, True))
        self.assertGreaterEqual(info.alignment, 128)
        self.assertNotEqual(info.key[0], 0)
        root.release()
        self.assertTrue(root.released)
        with self.assertRaisesRegex(ValueError, "the root was released"):
            root.claim()

    def test_write_mapping_then_read_mapping(self):
        with self.ctx.allocate(64) as root:
            with root.claim(exclusive=True) as claim, claim.map(write=True) as mapping:
                view = mapping.view
                self.assertFalse(view.readonly)
                view[:4] = b"abcd"
                del view
            with root.claim(0, 8) as claim, claim.map() as mapping:
                view = mapping.view
                self.assertTrue(view.readonly)
                self.assertEqual(view[:4].tobytes(), b"abcd")
                with self.assertRaises(TypeError):
                    view[0] = 1
                del view
            self.assertEqual(root.read(0, 4), b"abcd")
            root.write(4, b"efgh")
            self.assertEqual(root.read(0, 8), b"abcdefgh")

    def test_claim_errors_carry_the_diagnostic(self):
        with self.ctx.allocate(64) as root:
            with self.assertRaises(rootspan.OutsideRootExtentError) as caught:
                root.claim(60, 10)
            e = caught.exception
            self.assertEqual((e.code, e.operation, e.expected, e.actual), (6, "claim_acquire", 64, 70))
            self.assertEqual((e.requested.kind, e.requested.offset, e.requested.length), ("root_key_range", 60, 10))
            self.assertEqual(e.requested.root_id, root.info.root_id)
            self.assertIn("past the root's length 64", e.cause)
            with root.claim(0, 32, exclusive=True):
                with self.assertRaises(rootspan.ConflictError) as caught:
                    root.claim(16, 8)
                self.assertIn("conflict with exclusive claim [0,32)", caught.exception.cause)
                with self.assertRaises(rootspan.BusyError) as caught:
                    root.release()
                self.assertIn("claims are live", str(caught.exception))
                self.assertFalse(root.released)

    def test_map_errors(self):
        with self.ctx.allocate(64) as root, root.claim() as shared:
            with self.assertRaises(rootspan.Error) as caught:
                shared.map(write=True)
            self.assertIn("exclusive", str(caught.exception))
            with self.assertRaises(rootspan.MisalignedOffsetError):
                shared.map(1, 8, dtype="F32")
            with self.assertRaisesRegex(ValueError, "unknown dtype 'Q99'"):
                shared.map(dtype="Q99")

    def test_claim_busy_while_a_view_lives(self):
        with self.ctx.allocate(64) as root:
            root.write(0, b"V")
            claim = root.claim()
            mapping = claim.map()
            view = mapping.view
            mapping.close()  # the view still holds the memory
            with self.assertRaises(rootspan.BusyError):
                claim.release()
            self.assertEqual(view[0], ord("V"))
            del view
            claim.release()

    def test_split(self):
        with self.ctx.allocate(64) as root, root.claim(exclusive=True) as claim:
            left, right = claim.split([(0, 32), (32, 32)])
            self.assertEqual((left.span.offset, right.span.offset, right.span.length), (0, 32, 32))
            right.write(0, b"R")
            with self.assertRaises(rootspan.BusyError):
                claim.release()
            left.release()
            right.release()
        with self.assertRaisesRegex(TypeError, "pairs of ints"):
            with self.ctx.allocate(8) as root, root.claim(exclusive=True) as claim:
                claim.split([1, 2])

    def test_wrong_argument_types(self):
        with self.assertRaisesRegex(TypeError, "nbytes must be an int, got str"):
            self.ctx.allocate("64")
        with self.assertRaisesRegex(ValueError, r"nbytes must lie in \[0, 2\*\*64\), got -1"):
            self.ctx.allocate(-1)
        with self.assertRaisesRegex(TypeError, "provider must be a str"):
            self.ctx.allocate(8, provider=1)
        with self.assertRaisesRegex(ValueError, "memory must be one of"):
            self.ctx.allocate(8, memory="gpu")
        with self.ctx.allocate(8) as root:
            with self.assertRaisesRegex(TypeError, "offset must be an int"):
                root.claim("0")
            with self.assertRaisesRegex(TypeError, "exclusive must be True or False"):
                root.claim(exclusive=1)
            with self.assertRaisesRegex(TypeError, "data must be a bytes-like object"):
                with root.claim(exclusive=True) as c:
                    c.write(0, "text")
        with self.assertRaises(rootspan.InvalidAlignmentError):
            self.ctx.allocate(8, alignment=3)


class HostImport(unittest.TestCase):
    def test_bytearray_is_shared_not_copied(self):
        data = bytearray(b"0123456789abcdef")
        with context() as ctx:
            root = ctx.import_host(data)
            self.assertFalse(root.info.read_only)
            with root.claim(exclusive=True) as c, c.map(write=True) as m:
                v = m.view
                v[0:2] = b"XY"
                del v
            self.assertEqual(data[:2], b"XY")
            with self.assertRaises(BufferError):  # exported while the root lives
                data.extend(b"more")
            root.release()
            data.extend(b"more")  # the root's deleter released the buffer

    def test_bytes_is_read_only(self):
        with context() as ctx, ctx.import_host(b"constant" * 8) as root:
            self.assertTrue(root.info.read_only)
            with self.assertRaises(rootspan.ReadOnlyError) as caught:
                root.claim(exclusive=True)
            self.assertIn("read-only", str(caught.exception))
            with self.assertRaisesRegex(BufferError, "read_only=False needs a writable buffer"):
                ctx.import_host(b"abc", read_only=False)
            with self.assertRaisesRegex(TypeError, "bytes-like object, got int"):
                ctx.import_host(12)

    def test_context_destroy_runs_the_deleter(self):
        data = bytearray(64)
        ctx = context()
        root = ctx.import_host(data)  # never released by hand
        self.assertEqual(ctx.close(), 1)
        data.extend(b"x")
        del root  # its handle went with the context: nothing is released twice


class ContextLifetime(unittest.TestCase):
    def test_closed_context_refuses_everything(self):
        ctx = context()
        root = ctx.allocate(8)
        self.assertEqual(ctx.close(), 1)
        self.assertEqual(ctx.close(), 0)
        for call in (ctx.providers, lambda: ctx.allocate(8), lambda: ctx.load("x"), root.claim,
                     lambda: root.info):
            with self.assertRaisesRegex(ValueError, "the context is closed"):
                call()
        del root  # its handle went with the context: nothing is released twice
        gc.collect()

    def test_close_waits_while_memory_is_in_use(self):
        ctx = context()
        root = ctx.allocate(16)
        root.write(0, b"live")
        claim = root.claim()
        view = claim.map().view
        self.assertIsNone(ctx.close(), "memory in use: the destruction waits for it")
        self.assertTrue(ctx.closed)
        self.assertEqual(ctx.memory_in_use, 1)
        with self.assertRaisesRegex(ValueError, "the context is closed"):
            ctx.allocate(8)  # no new work
        self.assertEqual(view[:4].tobytes(), b"live")
        state = ctx._state
        self.assertIsNotNone(state.handle)
        del view
        gc.collect()
        self.assertIsNone(state.handle, "the last view gone, the context is destroyed")

    def test_exception_in_with_block_is_not_masked(self):
        class Boom(Exception):
            pass
        escaped = []
        with self.assertRaises(Boom):
            with context() as ctx:
                root = ctx.allocate(16)
                root.write(0, b"kept")
                escaped.append(root.claim().map().view)
                raise Boom()
        self.assertTrue(ctx.closed)
        self.assertEqual(escaped[0][:4].tobytes(), b"kept")  # still mapped: the context waits for it
        self.assertIsNotNone(ctx._state.handle)
        escaped.clear()  # the last user lets go: the context is destroyed now
        self.assertIsNone(ctx._state.handle)
        del root


class Library(unittest.TestCase):
    def test_loaded_from_rootspan_library(self):
        self.assertEqual(rootspan.library_path(), os.environ["ROOTSPAN_LIBRARY"])
        self.assertRegex(rootspan.version(), r"^0\.\d+\.\d+$")


if __name__ == "__main__":
    unittest.main()
