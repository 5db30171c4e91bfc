"""Roots, claims and mappings.

A Root is one allocation of a provider. Its bytes are reached through a
Claim (shared: read; exclusive: read and write) over a range, and on the host
through a Mapping of that claim, whose memory Python sees as a memoryview
(read-only unless mapped for writing) or a numpy array.

Claims and mappings are context managers. A mapping's memory stays mapped
while any view or consumer of it lives, even after Mapping.close(); the claim
it was made under then refuses to be released (BusyError) until they are gone.
"""
import collections
import ctypes

from . import _abi, _memory, dtypes, errors
from ._arguments import check_bool, check_int
from .errors import Span


RootInfo = collections.namedtuple("RootInfo", (
    "root_id",
    "key",  # (domain, local)
    "byte_offset",
    "byte_length",
    "alignment",
    "dtype",  # "NONE" for an untyped root
    "read_only",
    "host_accessible",
    "device",
    "provider",
), module=__name__)
RootInfo.__doc__ = ("A root's identity and extent: dtype and provider are str, read_only and host_accessible bool, "
                    "key (domain, local), the rest int.")


def _span(value):
    return Span(value.root_id, value.offset, value.length, value.alignment)


_HOST = None  # host_device()'s answer, made on its first call


def host_device():
    """(DLDeviceType.kDLCPU, 0): what __dlpack_device__ says of host memory. rootspan.dlpack is imported on the
    first call only (rootspan/__init__.py); `from . import dlpack` costs some 0.5 µs each time it runs, which
    numpy() of every component of a load would pay twice a component."""
    global _HOST
    if _HOST is None:
        from . import dlpack
        _HOST = (dlpack.DLDeviceType.kDLCPU, 0)
    return _HOST


class _Exportable:
    """numpy() and DLPack for objects whose memory is one host range (roots, mappings, components)."""
    __slots__ = ()  # no instance dict of its own: a subclass with slots (Component) has none at all

    def _export_layout(self):
        """(dtype name, shape, read-only) of the exported tensor."""
        raise NotImplementedError

    def _export_lease(self):
        """A lease on exactly the exported bytes."""
        raise NotImplementedError

    def _export_root(self):
        raise NotImplementedError

    def __dlpack_device__(self):
        """(DLDeviceType, device id) of the memory."""
        return self._export_root()._dlpack_device()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule over the memory (see rootspan.dlpack for the rules)."""
        from . import dlpack  # imported on first use (rootspan/__init__.py)
        dtype_name, shape, readonly = self._export_layout()
        return dlpack.export(self._export_lease, dtype_name, shape, readonly, self.__dlpack_device__(),
                             stream=stream, max_version=max_version, dl_device=dl_device, copy=copy,
                             what=self._export_what())

    def _export_what(self):
        return repr(self)

    def _in_host_memory(self):
        """Whether the memory is host memory, which numpy() serves."""
        return self.__dlpack_device__()[0] == host_device()[0]

    def numpy(self, dtype=None):
        """A numpy array over the memory, with no copy; read-only when the memory is.

        dtype (optional) reinterprets the bytes, as ndarray.view does; it is
        needed for element types numpy lacks (BF16, F8, F6, F4)."""
        import numpy
        dtype_name, shape, readonly = self._export_layout()
        if not self._in_host_memory():
            raise TypeError(f"{self._export_what()} is device memory; numpy() needs host-accessible memory")
        typestr = dtypes.numpy_typestr(dtype_name)
        if dtype is None and typestr is None:
            raise TypeError(f"{dtype_name} has no numpy dtype; pass dtype= (e.g. numpy.uint16 for BF16 bits), "
                            "or use DLPack (torch.from_dlpack) for the real type")
        lease = self._export_lease()
        if typestr is None or dtypes.bits(dtype_name) % 8:
            array = _memory.ndarray(lease, 0, "|u1", (lease.nbytes,), readonly)
        else:
            array = _memory.ndarray(lease, 0, typestr, shape, readonly)
        return array if dtype is None else array.view(dtype)


class Root(_Exportable):
    """One allocation of a provider, owned uniquely. Release it with release() or a with block.

    Roots of loaded weights belong to the weights: claim them, do not release them."""

    def __init__(self, context, handle, owner=None):
        self._context = context
        self._state = context._state
        self._handle = handle
        self._owner = owner  # the weights that own this root, or None
        self._owner_index = None  # the component it is, when owned
        self._state.children.add(self)

    def _live(self, operation):
        return self._state.live(self._handle, operation, "root")

    @property
    def info(self):
        """A RootInfo snapshot."""
        info = _abi.sized(_abi.RootInfo)
        with self._state.lock:  # a close on another thread cannot release the root during the call
            handle = self._live("root_get_info")
            errors.check_plain(self._state.lib.rootspan_root_get_info(handle, ctypes.byref(info)), "root_info",
                               "rootspan_root_get_info failed")
        return RootInfo(info.root_id, (info.key.domain, info.key.local), info.byte_offset, info.byte_length,
                        info.alignment, dtypes.name(info.dtype), bool(info.read_only), bool(info.host_accessible),
                        info.device, _abi.text(info.provider) or "")

    @property
    def released(self):
        return self._handle is None or self._state.handle is None

    def span(self, offset, length):
        """The Span [offset, offset + length) of this root resolves to."""
        out = _abi.sized(_abi.Span)
        with self._state.lock:
            handle = self._live("span_derive")
            errors.check(self._state.lib, self._state.lib.rootspan_span_derive, handle, check_int(offset, "offset"),
                         check_int(length, "length"), ctypes.byref(out))
        return _span(out)

    def claim(self, offset=0, length=None, exclusive=False):
        """Claims [offset, offset + length) (length None: to the end), shared or exclusive."""
        check_int(offset, "offset")
        check_bool(exclusive, "exclusive")
        with self._state.lock:
            handle = self._live("claim_acquire")
            if self._owner is not None:  # a component's: a lease a walk made ahead of its caller gives way
                self._owner.leased_ahead.pop(self._owner_index, None)
            if length is None:
                length = max(self.info.byte_length - offset, 0)
            check_int(length, "length")
            out = ctypes.c_void_p()
            mode = _abi.CLAIM_EXCLUSIVE if exclusive else _abi.CLAIM_SHARED
            errors.check(self._state.lib, self._state.lib.rootspan_claim_acquire, handle, offset, length, mode,
                         ctypes.byref(out))
            return Claim(self, out.value, exclusive)

    def read(self, offset=0, length=None):
        """A copy of [offset, offset + length) as bytes, through a shared claim (works for device memory)."""
        with self.claim(offset, length) as c:
            return c.read()

    def write(self, offset, data):
        """Copies data into the root at offset, through an exclusive claim (works for device memory)."""
        data = memoryview(data).cast("B")
        with self.claim(offset, data.nbytes, exclusive=True) as c:
            c.write(0, data)

    def release(self):
        """Releases the allocation through its provider. BusyError while claims are live."""
        handle = self._live("root_release")
        if self._owner is not None:
            raise ValueError("root_release: this root belongs to loaded weights; close the weights instead")
        with self._state.lock:
            errors.check(self._state.lib, self._state.lib.rootspan_root_release, handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if not self.released and self._owner is None:
            if exc_type is None:
                self.release()
            else:
                self._release_quietly()

    def _release_quietly(self):
        with self._state.lock:
            if self._handle is not None and self._state.handle is not None and self._owner is None:
                if self._state.lib.rootspan_root_release(self._handle, None) == _abi.OK:
                    self._handle = None

    def __del__(self):
        try:
            self._release_quietly()
        except Exception:
            pass

    def _dlpack_device(self):
        info = self.info
        if info.host_accessible:
            return host_device()
        from . import dlpack
        kind = self._context._provider_kind(info.provider)
        device_type = {"cuda": dlpack.DLDeviceType.kDLCUDA, "rocm": dlpack.DLDeviceType.kDLROCM}.get(
            kind, dlpack.DLDeviceType.kDLExtDev)
        return (device_type, info.device)

    def _export_root(self):
        return self

    def _export_layout(self):
        info = self.info
        dtype_name = info.dtype if info.dtype != "NONE" else "U8"
        count = info.byte_length * 8 // dtypes.bits(dtype_name)
        return dtype_name, (count,), info.read_only

    def _export_lease(self):
        claim = self.claim()
        try:
            return claim._lease(_abi.DTYPE_NONE, 0, claim.span.length, write=False, own_claim=True)
        except BaseException:
            claim._release_quietly()
            raise

    def _export_what(self):
        return f"root {self.info.root_id}"

    def __repr__(self):
        if self.released:
            return "<rootspan.Root released>"
        info = self.info
        return (f"<rootspan.Root {info.root_id} {info.provider} {info.byte_length} bytes "
                f"{info.dtype}{' read-only' if info.read_only else ''}>")


class Claim:
    """A shared or exclusive claim on a range of a root. Release it with release() or a with block."""

    def __init__(self, root, handle, exclusive, parent=None):
        self.root = root
        self._state = root._state
        self._handle = handle
        self.exclusive = exclusive
        self._parent = parent  # a split parent stays alive while its children do
        self._state.children.add(self)

    def _live(self, operation):
        return self._state.live(self._handle, operation, "claim")

    @property
    def span(self):
        """The Span claimed."""
        handle = self._live("claim_get_span")
        out = _abi.sized(_abi.Span)
        mode = ctypes.c_int32()
        errors.check_plain(self._state.lib.rootspan_claim_get_span(handle, ctypes.byref(out), ctypes.byref(mode)),
                           "claim_span", "rootspan_claim_get_span failed")
        return _span(out)

    @property
    def released(self):
        return self._handle is None or self._state.handle is None

    def _range(self, offset, length):
        check_int(offset, "offset")
        if length is None:
            length = max(self.span.length - offset, 0)
        return offset, check_int(length, "length")

    def _lease(self, dtype_code, offset, length, write, own_claim):
        with self._state.lock:
            handle = self._live("map_write" if write else "map_read")
            lib = self._state.lib
            if dtype_code == _abi.DTYPE_NONE:  # a typed root is mapped as its own elements
                dtype_code = dtypes.code(self.root.info.dtype)
            out = ctypes.c_void_p()
            fn = lib.rootspan_map_write if write else lib.rootspan_map_read
            errors.check(lib, fn, handle, dtype_code, offset, length, ctypes.byref(out))
            return _memory._Lease(self._state, self, out.value, own_claim, offset)

    def map(self, offset=0, length=None, *, write=False, dtype=None):
        """Maps [offset, offset + length) of the claim (length None: to its end) on the host.

        write=True needs an exclusive claim on a writable root and gives a
        writable view; dtype (a name such as "F32"; None: the root's own)
        checks the range holds whole, aligned elements of that type."""
        check_bool(write, "write")
        offset, length = self._range(offset, length)
        code = dtypes.code(dtype)
        if code == _abi.DTYPE_NONE:
            code = dtypes.code(self.root.info.dtype)
        return Mapping(self, self._lease(code, offset, length, write, own_claim=False), write, dtypes.name(code))

    def split(self, ranges):
        """Splits an exclusive claim into disjoint exclusive children, ranges (offset, length) relative to it."""
        handle = self._live("claim_split")
        try:
            pairs = [(int(o), int(n)) for o, n in ranges]
        except (TypeError, ValueError):
            raise TypeError("ranges must be a sequence of (offset, length) pairs of ints") from None
        for o, n in pairs:
            check_int(o, "range offset")
            check_int(n, "range length")
        count = len(pairs)
        c_ranges = (_abi.Range * max(count, 1))(*[_abi.Range(o, n) for o, n in pairs])
        children = (ctypes.c_void_p * max(count, 1))()
        errors.check(self._state.lib, self._state.lib.rootspan_claim_split, handle, c_ranges, count, children)
        return [Claim(self.root, children[i], True, parent=self) for i in range(count)]

    def read(self, offset=0, length=None):
        """A copy of [offset, offset + length) of the claim as bytes."""
        handle = self._live("copy_to_host")
        offset, length = self._range(offset, length)
        out = ctypes.create_string_buffer(length)
        errors.check(self._state.lib, self._state.lib.rootspan_copy_to_host, handle, offset, out, length)
        return out.raw

    def write(self, offset, data):
        """Copies data (any bytes-like object) into the claim at offset; needs an exclusive claim."""
        handle = self._live("copy_from_host")
        check_int(offset, "offset")
        try:
            source = memoryview(data).cast("B")
        except TypeError:
            raise TypeError(f"data must be a bytes-like object, got {type(data).__name__}") from None
        buffer = (ctypes.c_char * source.nbytes).from_buffer_copy(source) if source.nbytes else None
        errors.check(self._state.lib, self._state.lib.rootspan_copy_from_host, handle, offset, buffer,
                     source.nbytes)

    def release(self):
        """Releases the claim. BusyError while mappings, children or device accesses are live."""
        handle = self._live("claim_release")
        with self._state.lock:
            errors.check(self._state.lib, self._state.lib.rootspan_claim_release, handle)
            self._handle = None
            self._after_release()

    def _after_release(self):
        """(holding the lock) This claim, or a mapping of it, went."""
        self._state.after_release(self.root._owner, self.root._owner_index)

    def _release_quietly(self):
        with self._state.lock:
            if self._handle is not None and self._state.handle is not None:
                if self._state.lib.rootspan_claim_release(self._handle, None) == _abi.OK:
                    self._handle = None
                    self._after_release()

    def _lease_ended(self, own_claim):
        """(holding the context's lock) A lease over this claim was unmapped: the claim goes too when the
        lease owned it (an export's). after_release runs once: by _release_quietly when it released the claim."""
        if own_claim and self._handle is not None:
            self._release_quietly()
            if self._handle is None:
                return
        self._after_release()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.released:
            return
        if exc_type is None:
            self.release()
        else:  # an exception is unwinding: release what can be, never mask it
            self._release_quietly()

    def __del__(self):
        try:
            self._release_quietly()
        except Exception:
            pass

    def __repr__(self):
        if self.released:
            return "<rootspan.Claim released>"
        s = self.span
        return f"<rootspan.Claim {'exclusive' if self.exclusive else 'shared'} root {s.root_id} [{s.offset}, " \
               f"{s.offset + s.length})>"


class Mapping(_Exportable):
    """Host memory of a claim. `view` is a memoryview of it: read-only unless mapped with write=True.

    close() gives the mapping up; the memory stays mapped while any view,
    array or DLPack consumer of it still lives."""

    def __init__(self, claim, lease, writable, dtype_name):
        self.claim = claim
        self._lease_ref = lease
        self.writable = writable
        self.dtype = dtype_name
        self.address = lease.address
        self.nbytes = lease.nbytes

    def _live_lease(self):
        if self._lease_ref is None:
            raise ValueError("the mapping was closed")
        self.claim._state.require_open("mapping")
        return self._lease_ref

    @property
    def view(self):
        """A new memoryview (format 'B') of the mapped bytes."""
        return _memory.view(self._live_lease(), 0, self.nbytes, not self.writable)

    @property
    def closed(self):
        return self._lease_ref is None

    def close(self):
        """Gives up the mapping (unmapped now, or when the last view or consumer of it goes)."""
        self._lease_ref = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __len__(self):
        return self.nbytes

    def _export_root(self):
        return self.claim.root

    def _export_layout(self):
        dtype_name = self.dtype if self.dtype != "NONE" else "U8"
        return dtype_name, (self.nbytes * 8 // dtypes.bits(dtype_name),), not self.writable

    def _export_lease(self):
        return self._live_lease()

    def _export_what(self):
        return "this mapping"

    def __repr__(self):
        state = "closed" if self.closed else ("writable" if self.writable else "read-only")
        return f"<rootspan.Mapping {state} {self.nbytes} bytes {self.dtype} at {self.address:#x}>"
