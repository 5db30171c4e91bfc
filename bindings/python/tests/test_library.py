#!/usr/bin/python3
"""How the package finds librootspan.so (ROOTSPAN_LIBRARY, next to the
package, the libdir recorded at install time, the system path), the error
that lists every place tried, and the package as `meson install` lays it out."""
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import rootspan

SOURCE_PACKAGE = os.path.dirname(os.path.abspath(rootspan.__file__))
BUILD_LIBRARY = os.environ["ROOTSPAN_LIBRARY"]

PROBE = """
import sys, rootspan
try:
    with rootspan.Context(manifests=[]) as ctx:
        names = [p.name for p in ctx.providers()]
    print("LOADED", rootspan.library_path(), names)
except rootspan.LibraryNotFoundError as e:
    print("NOTFOUND", len(e.attempts))
    print(e)
"""


def system_has_rootspan():
    try:
        ctypes.CDLL("librootspan.so.0")
        return True
    except OSError:
        return False


class Finder(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rootspan-finder-")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def copy_package(self):
        """A copy of the package, outside the source tree, with no library beside it."""
        target = os.path.join(self.tmp, "site", "rootspan")
        shutil.copytree(SOURCE_PACKAGE, target, ignore=shutil.ignore_patterns("__pycache__", "*.in"))
        return target

    def probe(self, pythonpath, **env_changes):
        env = {k: v for k, v in os.environ.items() if k not in ("ROOTSPAN_LIBRARY", "LD_LIBRARY_PATH")}
        env["PYTHONPATH"] = pythonpath
        env.update(env_changes)
        done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        return done.stdout

    def test_explicit_library_that_is_missing_is_the_only_candidate(self):
        out = self.probe(os.path.dirname(SOURCE_PACKAGE), ROOTSPAN_LIBRARY="/nonexistent/librootspan.so")
        self.assertIn("NOTFOUND 1", out)
        self.assertIn("ROOTSPAN_LIBRARY: /nonexistent/librootspan.so: no such file", out)
        self.assertIn("Set ROOTSPAN_LIBRARY to the library's path", out)

    def test_explicit_file_that_is_not_a_library(self):
        fake = os.path.join(self.tmp, "librootspan.so")
        with open(fake, "w") as f:
            f.write("this text file is long enough to hold an ELF header, but it is not one\n" * 4)
        out = self.probe(os.path.dirname(SOURCE_PACKAGE), ROOTSPAN_LIBRARY=fake)
        self.assertIn(f"ROOTSPAN_LIBRARY: {fake}: ", out)
        self.assertIn("invalid ELF header", out)

    def test_explicit_foreign_library(self):
        out = self.probe(os.path.dirname(SOURCE_PACKAGE), ROOTSPAN_LIBRARY="libm.so.6")
        self.assertIn("ROOTSPAN_LIBRARY: libm.so.6: does not export rootspan_version", out)

    def test_nothing_found_lists_every_place(self):
        if system_has_rootspan():
            self.skipTest("librootspan.so.0 is installed on this system's library path")
        package = self.copy_package()
        out = self.probe(os.path.dirname(package), LD_LIBRARY_PATH="")
        self.assertIn("NOTFOUND", out)
        self.assertIn(f"next to the package: {package}/librootspan.so.0: no such file", out)
        self.assertIn(f"next to the package: {package}/librootspan.so: no such file", out)
        self.assertIn("system search path: librootspan.so.0: librootspan.so.0: cannot open shared object file", out)

    def test_found_next_to_the_package(self):
        package = self.copy_package()
        shutil.copy(BUILD_LIBRARY, os.path.join(package, "librootspan.so.0"))
        out = self.probe(os.path.dirname(package))
        self.assertIn(f"LOADED {package}/librootspan.so.0 ['host']", out)

    def test_found_in_the_recorded_libdir(self):
        package = self.copy_package()
        libdir = os.path.join(self.tmp, "prefix", "lib")
        os.makedirs(libdir)
        shutil.copy(BUILD_LIBRARY, os.path.join(libdir, "librootspan.so.0"))
        with open(os.path.join(package, "_install_paths.py"), "w") as f:
            f.write(f"LIBDIR = {libdir!r}\n")
        out = self.probe(os.path.dirname(package))
        self.assertIn(f"LOADED {libdir}/librootspan.so.0 ['host']", out)


class Declarations(unittest.TestCase):
    """Each function the package calls takes its ctypes prototype when first used; the release functions that
    finalizers call are declared when the library is opened."""

    def test_every_function_takes_the_prototype_the_package_declares(self):
        from rootspan import _abi
        lib = rootspan._library.get()
        for name in _abi.PROTOTYPES:
            with self.subTest(name=name):
                restype, argtypes = _abi.prototype(name)  # every pointer type resolves
                function = getattr(lib, name)
                self.assertEqual((function.restype, tuple(function.argtypes)), (restype, tuple(argtypes)))
                self.assertTrue(all(hasattr(t, "from_param") for t in argtypes), argtypes)  # ctypes types, no names
                self.assertIs(getattr(lib, name), function, "declared once, then an attribute")

    def test_the_release_functions_are_declared_at_the_open(self):
        code = ("import rootspan\nfrom rootspan import _library\nlib = _library.get()\n"
                "print(sorted(n for n in _library._DECLARED_AT_OPEN if n not in vars(lib)))\n"
                "print('rootspan_weights_load' in vars(lib))\n")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(done.stdout.split("\n")[:2], ["[]", "False"])


class MesonInstall(unittest.TestCase):
    """`meson install` of this build into a staging folder: the package, its recorded libdir, and a load."""

    def test_installed_package(self):
        meson, build = os.environ.get("MESON"), os.environ.get("ROOTSPAN_BUILD_ROOT")
        if not meson or not build:
            self.skipTest("MESON and ROOTSPAN_BUILD_ROOT are set by meson test")
        stage = tempfile.mkdtemp(prefix="rootspan-stage-")
        self.addCleanup(shutil.rmtree, stage)
        done = subprocess.run([meson, "install", "-C", build, "--no-rebuild", "--destdir", stage],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        staged = lambda path: os.path.join(stage, path.lstrip("/"))  # noqa: E731
        package = staged(os.environ["ROOTSPAN_PYTHON_INSTALL_DIR"])
        libdir = os.environ["ROOTSPAN_PREFIX_LIBDIR"]
        for name in os.listdir(SOURCE_PACKAGE):
            if name.endswith(".py"):
                self.assertTrue(os.path.isfile(os.path.join(package, name)), f"{name} was not installed")
        with open(os.path.join(package, "_install_paths.py")) as f:
            self.assertIn(f"LIBDIR = '{libdir}'", f.read())
        self.assertTrue(os.path.exists(os.path.join(staged(libdir), "librootspan.so.0")))
        env = {k: v for k, v in os.environ.items() if k != "ROOTSPAN_LIBRARY"}
        env.update(PYTHONPATH=os.path.dirname(package), LD_LIBRARY_PATH=staged(libdir))
        code = ("import rootspan, sys\n"
                "assert rootspan.__file__.startswith(sys.argv[1]), rootspan.__file__\n"
                "with rootspan.Context(manifests=[]) as ctx, ctx.load(sys.argv[2]) as w:\n"
                "    print(rootspan.library_path(), sorted(w)[0], w['model.norm.weight'].numpy().shape)\n")
        done = subprocess.run([sys.executable, "-c", code, package, os.environ["ROOTSPAN_EXAMPLE_CHECKPOINT"]],
                              env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("model.embed_tokens.weight (32,)", done.stdout)


if __name__ == "__main__":
    unittest.main()
