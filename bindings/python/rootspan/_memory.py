"""Host memory handed to Python: a lease on one mapping, and the views over it.

A `_Lease` holds one rootspan mapping (and, for exports, the shared claim it
was made under) for as long as anything uses the memory: a Mapping object,
a memoryview, a numpy array, or a DLPack consumer. Every view keeps its lease
alive by reference, so the mapping is unmapped — and an owned claim released —
when the last of them is garbage, on whatever thread drops it.

Read-only memory is only ever handed out read-only: with numpy, views are
read-only ndarrays whose base object exports no buffer at all, so neither
`flags.writeable = True` nor a new buffer over `.base` can make it writable.
"""
import ctypes

try:
    import numpy
except ImportError:  # numpy is optional; views fall back to ctypes
    numpy = None


class _Lease:
    """One live mapping of a claim; unmapped when the lease is garbage or released."""

    def __init__(self, state, claim, mapping, own_claim):
        self.state = state  # the context's state (library, lock, open/closed)
        self.claim = claim  # the Claim object the mapping was made under
        self.mapping = mapping  # rootspan_mapping * (int)
        self.own_claim = own_claim  # release the claim with the mapping (exports)
        lib = state.lib
        self.address = lib.rootspan_mapping_data(mapping) or 0
        self.nbytes = lib.rootspan_mapping_length(mapping)
        with state.lock:
            state.leases += 1

    def release(self):
        state = self.state
        with state.lock:
            if self.mapping is None:
                return
            mapping, self.mapping = self.mapping, None
            state.leases -= 1
            if state.handle is not None:  # a destroyed context already released everything
                state.lib.rootspan_unmap(mapping)
                if self.own_claim:
                    self.claim._release_quietly()
                state.after_release(self.claim.root)

    def __del__(self):
        try:
            self.release()
        except Exception:  # nothing useful to do while being collected
            pass


_byte_types = {}


def _owned_bytes(lease, address, nbytes):
    """A ctypes byte array at address that keeps lease alive."""
    cls = _byte_types.get(nbytes)
    if cls is None:
        # a subclass, so that instances take an attribute
        cls = type("_MappedBytes", (ctypes.c_ubyte * nbytes,), {})
        if len(_byte_types) < 256:
            _byte_types[nbytes] = cls
    array = cls.from_address(address)
    array.lease = lease
    return array


class _ArrayOwner:
    """The base object of a numpy view: keeps the lease alive, exports no buffer."""
    __slots__ = ("lease", "__array_interface__")

    def __init__(self, lease, interface):
        self.lease = lease
        self.__array_interface__ = interface


def ndarray(lease, offset, typestr, shape, readonly):
    """A numpy array over the lease's memory from offset, with no copy."""
    interface = {"version": 3, "shape": tuple(shape), "typestr": typestr,
                 "data": (lease.address + offset, bool(readonly)), "strides": None}
    owner = _ArrayOwner(lease, interface)
    array = numpy.asarray(owner)
    del owner.__array_interface__  # the address is not left lying around on .base
    return array


def view(lease, offset, nbytes, readonly):
    """A memoryview of nbytes bytes of the lease's memory (format 'B'), read-only or writable."""
    if readonly and numpy is not None:
        return memoryview(ndarray(lease, offset, "|u1", (nbytes,), True))
    if nbytes == 0:
        return memoryview(b"") if readonly else memoryview(bytearray())
    mv = memoryview(_owned_bytes(lease, lease.address + offset, nbytes)).cast("B")
    return mv.toreadonly() if readonly else mv
