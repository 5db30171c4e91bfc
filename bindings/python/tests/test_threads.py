#!/usr/bin/python3
"""Weights used from several threads (issue 35 items 3 and 8), without numpy:
close() on one thread while others hash components, read the digests and the
read report and look up missing names gives those threads clean exceptions
(the binding's ValueError once closed, KeyError for a miss), never a crash
nor a call that reaches the library with freed weights; and the search
for close names that explains a miss runs outside the context's lock, so a
miss among long names holds up no other thread."""
import os
import sys
import tempfile
import threading
import unittest

import rootspan
from support import context, write_safetensors


def write_checkpoint(folder, names, nbytes=4096):
    path = os.path.join(folder, "model.safetensors")
    write_safetensors(path, {name: ("U8", (nbytes,), bytes([i % 251]) * nbytes) for i, name in enumerate(names)})
    return path


class CloseRacingCalls(unittest.TestCase):
    def setUp(self):
        self.interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)  # threads take turns between any two bytecodes: the races happen

    def tearDown(self):
        sys.setswitchinterval(self.interval)

    def test_calls_on_other_threads_see_clean_exceptions(self):
        with tempfile.TemporaryDirectory() as folder:
            path = write_checkpoint(folder, [f"t{i}" for i in range(6)])
            with context() as ctx:
                for round_ in range(100):
                    weights = ctx.load(path, provider="host", strategy="mmap" if round_ % 2 else "read")
                    components = list(weights.values())
                    unexpected = []
                    started = threading.Barrier(5)

                    def hammer(call):
                        started.wait()
                        while True:
                            try:
                                call()
                            except KeyError:
                                continue
                            except rootspan.Error as e:  # the library refused: the binding let a call through
                                unexpected.append(repr(e))
                                return
                            except ValueError:
                                return  # closed: the clean end
                            except BaseException as e:  # anything else is a failure of the test
                                unexpected.append(repr(e))
                                return

                    calls = [lambda: [c.sha256() for c in components], lambda: weights.digests,
                             lambda: weights.read_report, lambda: weights["t0x"]]
                    threads = [threading.Thread(target=hammer, args=(call,)) for call in calls]
                    for t in threads:
                        t.start()
                    started.wait()
                    weights.close()
                    for t in threads:
                        t.join(60)
                        self.assertFalse(t.is_alive(), "a thread never saw the weights closed")
                    self.assertEqual(unexpected, [], f"round {round_}")
                    del weights, components
                self.assertEqual(ctx.close(), 0)


class _NoLookupUnderTheLock:
    """The library, except that rootspan_weights_lookup fails the test when called holding the context's
    lock."""

    def __init__(self, lib, lock, called_locked):
        self._lib, self._lock, self._called_locked = lib, lock, called_locked

    def __getattr__(self, name):
        target = getattr(self._lib, name)
        if name != "rootspan_weights_lookup":
            return target

        def lookup(*args):
            self._called_locked.append(self._lock._is_owned())
            return target(*args)
        return lookup


class MissAmongLongNames(unittest.TestCase):
    def test_the_explanation_is_searched_outside_the_lock(self):
        long = "x" * 20000
        with tempfile.TemporaryDirectory() as folder:
            path = write_checkpoint(folder, [long + str(i) for i in range(20)], nbytes=8)
            with context() as ctx, ctx.load(path, provider="host") as weights:
                state = ctx._state
                called_locked = []
                state.lib = _NoLookupUnderTheLock(state.lib, state.lock, called_locked)
                try:
                    with self.assertRaises(KeyError) as missed:
                        weights[long + "zz"]
                    self.assertIn("20 loaded", str(missed.exception))
                    self.assertEqual(called_locked, [False], "the lookup ran holding the context's lock")
                    self.assertIsNotNone(weights.get(long + "3"))
                finally:
                    state.lib = state.lib._lib


if __name__ == "__main__":
    unittest.main()
