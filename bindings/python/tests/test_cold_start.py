#!/usr/bin/python3
"""The read strategies from Python (docs/cold-start.md): "auto" is the
default and weights.read_report says what it chose and why; "read" and
"direct" give the file's bytes at unaligned offsets; direct reads on tmpfs
fall back to buffered and say so; populate=True reads a mapping in, and
populate_when_cold=True only a cold one; a wrong strategy or populate is
refused naming the argument. Runs with numpy alone
(Debian's python3 included).
"""
import json
import os
import struct
import tempfile
import unittest

import rootspan


def write_checkpoint(folder, pad=1):
    """Tensors at odd offsets (the data section starts `pad` bytes past a 4096 boundary) and lengths that end
    mid-block; returns the path and {name: bytes}."""
    tensors = {"a": os.urandom(1), "b": os.urandom(4095), "c": os.urandom(70001), "d": os.urandom(1 << 20)}
    header, offset = {}, 0
    for name, data in tensors.items():
        header[name] = {"dtype": "U8", "shape": [len(data)], "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    raw = json.dumps(header).encode()
    raw += b" " * ((pad - 8 - len(raw)) % 4096)
    path = os.path.join(folder, "model.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw + b"".join(tensors.values()))
    return path, tensors


class ColdStart(unittest.TestCase):
    def setUp(self):
        self._dir = tempfile.TemporaryDirectory(prefix="rootspan-cold-")
        self.path, self.tensors = write_checkpoint(self._dir.name)
        self.ctx = rootspan.Context(manifests=[])

    def tearDown(self):
        self.assertEqual(self.ctx.close(), 0, "a load left a root live")
        self._dir.cleanup()

    def check_bytes(self, weights):
        for name, data in self.tensors.items():
            self.assertEqual(weights[name].numpy().tobytes(), data, name)

    def test_auto_is_the_default_and_says_why(self):
        with self.ctx.load(self.path, provider="host") as weights:
            self.check_bytes(weights)
            report = weights.read_report
            self.assertEqual(report["requested"], "auto")
            self.assertIn(report["strategy"], ("mmap", "read", "direct"))
            self.assertTrue(report["reason"].startswith('auto: "model.safetensors" is on '), report["reason"])

    def test_read_and_direct_give_the_files_bytes(self):
        for strategy in ("read", "direct"):
            with self.ctx.load(self.path, provider="host", strategy=strategy) as weights:
                self.check_bytes(weights)
                report = weights.read_report
                self.assertEqual(report["strategy"], strategy)
                self.assertEqual(report["reads"]["bytes"], sum(len(d) for d in self.tensors.values()))
                self.assertLessEqual(report["reads"]["peak_requests_in_flight"], report["reads"]["queue_depth"])
                self.assertTrue(all(not c.zero_copy for c in weights.values()))
                if strategy == "direct" and not report["reads"]["fallbacks"]:
                    # Tensors of 64 KiB or less are read buffered (docs/cold-start.md).
                    large = sum(len(d) for d in self.tensors.values() if len(d) > 64 << 10)
                    self.assertGreater(large, 0)
                    self.assertEqual(report["reads"]["direct_bytes"], large)

    def test_direct_on_tmpfs_falls_back_and_says_so(self):
        if not os.path.isdir("/dev/shm"):
            self.skipTest("no /dev/shm")
        with tempfile.TemporaryDirectory(dir="/dev/shm", prefix="rootspan-cold-") as shm:
            path, tensors = write_checkpoint(shm, pad=4095)
            with self.ctx.load(path, provider="host", strategy="direct") as weights:
                report = weights.read_report
                fallbacks = report["reads"]["fallbacks"]
                if not fallbacks:
                    self.skipTest("/dev/shm takes direct reads here")
                self.assertEqual(fallbacks[0]["file"], path)
                self.assertIn("tmpfs", fallbacks[0]["reason"])
                self.assertEqual(report["reads"]["direct_bytes"], 0)
                for name, data in tensors.items():
                    self.assertEqual(weights[name].numpy().tobytes(), data, name)

    def test_populate_reads_the_mapping_in(self):
        with self.ctx.load(self.path, provider="host", strategy="mmap", populate=True) as weights:
            self.check_bytes(weights)
            zero_copy = sum(c.nbytes for c in weights.values() if c.zero_copy)
            self.assertGreaterEqual(weights.read_report["warmed_bytes"], zero_copy)

    def test_populate_when_cold_populates_only_a_cold_mapping(self):
        # Written back and evicted, the file is cold where the page cache can drop it (a local disk); tmpfs
        # keeps it.
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
        for round in ("after eviction", "warm"):
            with self.ctx.load(self.path, provider="host", strategy="mmap", populate_when_cold=True) as weights:
                self.check_bytes(weights)  # warm from here on
                report = weights.read_report
                self.assertEqual((report["requested"], report["strategy"], report["reads"]), ("mmap", "mmap", None))
                self.assertTrue(report["reason"].startswith('asked for mmap, populate when cold: "model.safetensors"'
                                                            ' is on '), report["reason"])
                zero_copy = sum(c.nbytes for c in weights.values() if c.zero_copy)
                # On a local disk (ext4 /tmp) the evicted file is cold: populated then, and only then.
                if round == "after eviction" and "a local file system" in report["reason"]:
                    self.assertIn(": populated: ", report["reason"])
                if ": populated: " in report["reason"]:
                    self.assertEqual(round, "after eviction", report["reason"])
                    self.assertGreaterEqual(report["warmed_bytes"], zero_copy)
                else:
                    self.assertIn(": not populated: ", report["reason"])
                    self.assertEqual(report["warmed_bytes"], 0, report["reason"])
        # Without it, mmap never populates, cold or not.
        with self.ctx.load(self.path, provider="host", strategy="mmap") as weights:
            self.assertEqual(weights.read_report["reason"], "asked for mmap")
            self.assertEqual(weights.read_report["warmed_bytes"], 0)

    def test_a_wrong_strategy_or_populate_is_refused_by_name(self):
        with self.assertRaisesRegex(ValueError, "strategy must be 'auto', 'mmap', 'read' or 'direct', got 'fast'"):
            self.ctx.load(self.path, provider="host", strategy="fast")
        with self.assertRaisesRegex(TypeError, "strategy must be a str"):
            self.ctx.load(self.path, provider="host", strategy=["read"])
        with self.assertRaisesRegex(TypeError, "populate"):
            self.ctx.load(self.path, provider="host", populate="yes")
        with self.assertRaisesRegex(TypeError, "populate_when_cold must be True or False, got int 1"):
            self.ctx.load(self.path, provider="host", populate_when_cold=1)
        weights = self.ctx.load(self.path, provider="host")
        weights.close()
        with self.assertRaisesRegex(ValueError, "read_report: the weights are closed"):
            weights.read_report


if __name__ == "__main__":
    unittest.main()
