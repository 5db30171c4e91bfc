"""Host memory handed to Python: a lease on one mapping, and the views over it.

A `_Lease` holds one rootspan mapping (and, for exports, the shared claim it
was made under) for as long as anything uses the memory: a Mapping object,
a memoryview, a numpy array, or a DLPack consumer. Every view keeps its lease
alive by reference, so the mapping is unmapped — and an owned claim released —
when the last of them is garbage, on whatever thread drops it. A loaded
component's exports share a lease that holds the claim's handle itself
(weights._ExportLease: the claim and its mapping in one object).

The package's own reads of that memory (hashing it, copying a slice or a
whole tensor out of it) go through the library's protected copy (copy_out):
memory over a file mapping faults once the file is truncated, and the
library turns that into an IoError instead of a dead process.

Read-only memory is only ever handed out read-only: with numpy, views are
read-only ndarrays whose base object exports a read-only buffer or none at
all, so neither `flags.writeable = True` nor a new buffer over `.base` can
make it writable.
"""
import contextlib
import ctypes
import gc

from . import errors

try:
    import numpy
except ImportError:  # numpy is optional; views fall back to ctypes
    numpy = None


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector held off while a load hands out thousands of objects at once (issue
    33): each Component, claim, lease and tensor is a tracked object that survives, so the collector would
    otherwise walk every live object of the process (all of torch's) again and again during the load, about
    a third of the time per tensor. It runs again, as it was, when the block ends; a no-op when it was off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class _Lease:
    """One live mapping of a claim; unmapped when the lease is garbage or released."""
    # slots: a load of thousands of tensors makes a lease for each it copies (weights._ExportLease), to which
    # the components keep weak references
    __slots__ = ("state", "claim", "offset", "mapping", "own_claim", "address", "nbytes", "__weakref__")

    def __init__(self, state, claim, mapping, own_claim, offset=0, address=None, nbytes=None):
        self.state = state  # the context's state (library, lock, open/closed)
        self.claim = claim  # the Claim object the mapping was made under (an export lease: the claim's handle)
        self.offset = offset  # where the mapping starts in the claim
        self.mapping = mapping  # rootspan_mapping * (int)
        self.own_claim = own_claim  # release the claim with the mapping (exports)
        if nbytes is None:  # not known already (rootspan_weights_map_components says both): ask the library
            lib = state.lib
            address, nbytes = lib.rootspan_mapping_data(mapping), lib.rootspan_mapping_length(mapping)
        self.address = address or 0
        self.nbytes = nbytes
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
                self._mapping_ended()

    def _mapping_ended(self):
        """(holding the lock, the context open) The mapping went: the claim's turn, which an export's lease
        owns (own_claim)."""
        self.claim._lease_ended(self.own_claim)

    def _claim_handle(self, operation):
        """The handle of the claim the mapping was made under, for a library call on it (copy_out)."""
        return self.claim._live(operation)

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


# rootspan._describe.lease_memory (the lease's memory as a buffer) once an array found it (_lease_memory)
_memory_of = None


def _lease_memory():
    """rootspan._describe.lease_memory, kept for the arrays after; or None, asked again at the next array, where
    the compiled module has none, is turned off, or its setting is wrong (which every load reports: an array
    is made the other way)."""
    global _memory_of
    from . import _compiled  # here: the compiled module is found once the library is
    try:
        found = getattr(_compiled.describe(), "lease_memory", None)
    except ValueError:  # ROOTSPAN_PYTHON_EXTENSION is neither on nor off
        return None
    _memory_of = found
    return found


def ndarray(lease, offset, typestr, shape, readonly):
    """A numpy array over the lease's memory from offset, with no copy. Its base holds the lease: the compiled
    lease_memory's buffer (read-only where readonly), in one numpy call; else an owner object with an array
    interface, which exports no buffer."""
    memory_of = _memory_of or _lease_memory()
    nbytes = lease.nbytes - offset
    if memory_of is not None and nbytes > 0:  # numpy checks that shape and typestr fit in nbytes
        return numpy.ndarray(shape, typestr, memory_of(lease, lease.address + offset, nbytes, readonly))
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


def copy_out(lease, offset, nbytes, address):
    """Copies nbytes of the lease's memory from offset to the host address, through the library
    (rootspan_copy_to_host on the lease's claim): where the memory maps a file truncated since, an IoError
    naming the file, never a SIGBUS that kills the process or the zeros a page past the file's end reads as.
    A typed root copies whole elements: offset and nbytes must be multiples of its element size."""
    if nbytes == 0:
        return
    state = lease.state
    with state.lock:  # against a close on another thread
        if lease.mapping is None:
            raise ValueError("copy_to_host: the memory was released")
        handle = lease._claim_handle("copy_to_host")
        errors.check(state.lib, state.lib.rootspan_copy_to_host, handle, lease.offset + offset,
                     ctypes.c_void_p(address), nbytes)


def check_covered(lease):
    """Reads the lease's last bytes through the library (copy_out): an IoError if the file its memory maps
    was truncated short of them. For the reads the package leaves to torch (a copy to a device), which no
    one can guard: a check just before them, not a guard during them."""
    tail = min(16, lease.nbytes)  # whole elements of any type: every element size divides 16
    out = ctypes.create_string_buffer(max(tail, 1))
    copy_out(lease, lease.nbytes - tail, tail, ctypes.addressof(out))
