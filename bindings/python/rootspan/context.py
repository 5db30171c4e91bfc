"""Contexts: the providers rootspan loaded, and the roots made from them.

close() (or the end of a with block) frees every open Weights, releases the
roots still live and shuts the providers down. While a memoryview, numpy
array or DLPack consumer still uses memory of the context, the context stops
taking new work at once and is destroyed when the last such user lets go, so
that an array or tensor may outlive the with block it came from.
"""
import collections
import ctypes
import threading
import weakref

from . import _abi, _library, dtypes, errors
from ._abi import text as _text
from ._arguments import check_bool, check_int, paths
from .root import Root


DeviceInfo = collections.namedtuple("DeviceInfo", (
    "ordinal",
    "name",
    "pci_bus_id",  # "" when the device has none
    "total_memory_bytes",
    "free_memory_bytes",
), module=__name__)
DeviceInfo.__doc__ = "One device of a provider: name and pci_bus_id are str, the rest int."


class ProviderReport(collections.namedtuple("ProviderReport", (
    "name",
    "kind",
    "origin",  # "static", "manifest" or "embedded"
    "state",  # "loaded", "skipped", "failed" or "no device" (started, but the runtime found no device)
    "library",  # the plugin library's path, or None (the built-in host provider has none)
    "manifest",  # the manifest it was found through, or None
    "abi",  # (major, minor); (0, 0) when never negotiated
    "device_count",
    "priority",
    "policy",  # the loader rule that skipped it ("L4"), or None
    "reason",  # why it was skipped, failed, or has no device, or None
    "code",  # the status that skipped or failed it; 0 when loaded
    "devices",  # a list of DeviceInfo
    "note",  # what a loaded provider said of itself (the host: its huge page mode), or None
), defaults=(None,))):
    """One provider the context knows of, loaded or not, and why."""
    __slots__ = ()

    @property
    def error_name(self):
        return errors.status_name(self.code)


class _ContextState:
    """What outlives the Context object: the handle, and everything whose life depends on it."""

    def __init__(self, lib):
        self.lib = lib
        self.handle = None  # rootspan_context *, None once destroyed
        self.closing = False  # close() was asked for: no new operations
        self.lock = threading.RLock()
        self.leases = 0  # mappings live (memory in Python's hands)
        self.children = weakref.WeakSet()  # Root and Claim objects, invalidated by destroy
        self.weights = weakref.WeakSet()  # weights states, freed before destroy

    def require_open(self, operation):
        if self.handle is None or self.closing:
            raise ValueError(f"{operation}: the context is closed")

    def live(self, handle, operation, what):
        """handle, for the library call `operation` on it; ValueError when the context is closed or the `what`
        it is the handle of (a root, a claim) was released (handle None)."""
        self.require_open(operation)
        if handle is None:
            raise ValueError(f"{operation}: the {what} was released")
        return handle

    def after_release(self, owner=None, index=None):
        """(holding the lock) A claim or mapping went: release the component of loaded weights (owner, index)
        it was on once that component is given up, and finish a close that was waiting for it."""
        if owner is not None and owner.given_up[index]:
            owner._release(index)
        if self.closing and self.leases == 0:
            self.destroy()

    def destroy(self):
        """Frees the open weights and destroys the context; returns the roots that were still live."""
        with self.lock:
            if self.handle is None:
                return 0
            for weights in list(self.weights):
                try:
                    weights.free()
                except errors.Error:
                    pass  # still claimed by hand: the context releases its roots below
                weights.handle = None
            live = ctypes.c_uint64()
            self.lib.rootspan_context_destroy(self.handle, ctypes.byref(live))
            self.handle = None
            for child in list(self.children):
                child._handle = None
            return live.value

    def __del__(self):
        try:
            self.destroy()
        except Exception:
            pass


class Context:
    """A rootspan context.

    manifests: None discovers provider manifests as the `rootspan` program does
    (ROOTSPAN_MANIFEST, then the installed manifest.d folders); a list names
    exactly the manifests to read ([] reads none). no_static=True leaves out the
    providers compiled into the library (the host provider among them)."""

    def __init__(self, manifests=None, no_static=False):
        check_bool(no_static, "no_static")
        encoded = None if manifests is None else paths(manifests, "manifests")
        lib = _library.get()
        self._state = _ContextState(lib)
        options = _abi.sized(_abi.ContextOptions)
        options.no_static_providers = 1 if no_static else 0
        if encoded is None:
            options.discover_manifests = 1
        else:
            array = (ctypes.c_char_p * max(len(encoded), 1))(*encoded)
            options.manifests = ctypes.cast(array, ctypes.POINTER(ctypes.c_char_p))
            options.manifest_count = len(encoded)
        out = ctypes.c_void_p()
        errors.check(lib, lib.rootspan_context_create, ctypes.byref(options), ctypes.byref(out))
        self._state.handle = out.value

    # ---- lifetime -----------------------------------------------------------

    @property
    def closed(self):
        return self._state.handle is None or self._state.closing

    def close(self):
        """Closes the context. With no memory of it in use, it is destroyed now and close() returns how many
        roots were still live (0 when everything was released); while a view, array or DLPack consumer
        still uses its memory, it takes no new work and is destroyed when the last of them goes, and
        close() returns None."""
        state = self._state
        with state.lock:
            if state.handle is None:
                return 0
            for weights in list(state.weights):  # the leases walks made ahead, no caller took (weights._walk)
                weights.leased_ahead.clear()
            state.closing = True
            if state.leases:
                return None
            return state.destroy()

    @property
    def memory_in_use(self):
        """How many mappings of this context arrays, views and DLPack consumers still hold."""
        return self._state.leases

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __del__(self):
        # Garbage: nothing refers to the context or its roots any more, only
        # memory handed out may; the last of it finishes the close.
        state = getattr(self, "_state", None)
        if state is None:
            return
        try:
            with state.lock:
                state.closing = True
                if state.leases == 0:
                    state.destroy()
        except Exception:
            pass

    def _live(self, operation):
        self._state.require_open(operation)
        return self._state.handle

    # ---- providers ------------------------------------------------------------

    def providers(self):
        """The provider report: every provider the context knows of, with the devices of loaded ones."""
        handle = self._live("providers")
        lib = self._state.lib
        count = ctypes.c_size_t()
        errors.check_plain(lib.rootspan_provider_report_count(handle, ctypes.byref(count)), "providers",
                           "rootspan_provider_report_count failed")
        out = []
        for i in range(count.value):
            r = _abi.sized(_abi.ProviderReport)
            errors.check_plain(lib.rootspan_provider_report_get(handle, i, ctypes.byref(r)), "providers",
                               f"rootspan_provider_report_get({i}) failed")
            name = _text(r.name)
            devices = []
            if r.state == _abi.STATE_LOADED:
                for ordinal in range(r.device_count):
                    d = _abi.sized(_abi.DeviceInfo)
                    errors.check(lib, lib.rootspan_provider_device_info, handle, r.name, ordinal, ctypes.byref(d))
                    devices.append(DeviceInfo(d.ordinal, _text(d.name), _text(d.pci_bus_id), d.total_memory_bytes,
                                              d.free_memory_bytes))
            out.append(ProviderReport(
                name, _text(r.kind), _abi.enum_name(_abi.ORIGINS, r.origin), _abi.enum_name(_abi.STATES, r.state),
                _text(r.library), _text(r.manifest),
                (r.abi_major, r.abi_minor), r.device_count, r.priority, _text(r.policy), _text(r.reason), r.code,
                devices, _text(r.note)))
        return out

    def manifests(self):
        """The manifest paths read, in order."""
        handle = self._live("manifests")
        lib = self._state.lib
        count = ctypes.c_size_t()
        errors.check_plain(lib.rootspan_manifest_count(handle, ctypes.byref(count)), "manifests",
                           "rootspan_manifest_count failed")
        return [_text(lib.rootspan_manifest_path(handle, i)) for i in range(count.value)]

    def _provider_kind(self, name):
        for report in self.providers():
            if report.name == name:
                return report.kind
        return None

    # ---- roots ----------------------------------------------------------------

    def allocate(self, nbytes, provider="host", *, device=0, memory="host", alignment=0, dtype=None):
        """A new root of nbytes bytes from a provider.

        memory: "host", "device" or "host_pinned"; alignment: a power of two
        (0: 64); dtype: an element type name ("F32") or numpy dtype, or None
        for an untyped root."""
        check_int(nbytes, "nbytes")
        check_int(device, "device", bits=32)
        check_int(alignment, "alignment")
        if not isinstance(provider, str):
            raise TypeError(f"provider must be a str, got {type(provider).__name__}")
        if memory not in _abi.MEMORY_KINDS:
            raise ValueError(f"memory must be one of {', '.join(_abi.MEMORY_KINDS)}, got {memory!r}")
        handle = self._live("root_allocate")
        options = _abi.sized(_abi.AllocateOptions)
        options.provider = _abi.c_text(provider, "provider")
        options.device = device
        options.memory_kind = _abi.MEMORY_KINDS[memory]
        options.byte_length = nbytes
        options.alignment = alignment
        options.dtype = dtypes.code(dtype)
        out = ctypes.c_void_p()
        lib = self._state.lib
        errors.check(lib, lib.rootspan_root_allocate, handle, ctypes.byref(options), ctypes.byref(out))
        return Root(self, out.value)

    def import_host(self, buffer, *, read_only=None, dtype=None, provider=None):
        """A root over the memory of a bytes-like object, with no copy.

        The object stays exported (a bytearray cannot be resized) until the root
        is released. read_only None follows the buffer (bytes: read-only);
        read_only=False on a read-only buffer raises BufferError."""
        if read_only is not None:
            check_bool(read_only, "read_only")
        if provider is not None and not isinstance(provider, str):
            raise TypeError(f"provider must be a str or None, got {type(provider).__name__}")
        handle = self._live("root_import_host")
        from . import _host_import
        return _host_import.import_host(self, handle, buffer, read_only, dtypes.code(dtype), provider)

    def load(self, path, schema=None, provider="auto", device=0, strategy="auto", progress=None, *, rank=0,
             world_size=0, split=None, tensors=None, revision=None, staging_buffer_bytes=0, staging_buffer_count=0,
             read_only=False, split_convention="tensor_split", verify=False, digests=None, populate=False,
             source_digests=False, signature=None, public_key=None, certificate_chain=None,
             ignore_unsigned_files=False, populate_when_cold=False):
        """Loads a checkpoint: a .safetensors or .gguf file, a folder, an index
        file, or a Hugging Face cache repository folder (models--org--name).

        tensors: shell-style patterns over component ids; only the components
        one matches are loaded (a pattern matching nothing is NotFoundError);
        revision: the branch, tag or commit of a cache repository (None: the
        one refs/main names);

        schema: a component schema file (None: one component per tensor);
        provider: a provider name or "auto"; strategy: "auto" (chosen from
        the file system: mapped on local disks and tmpfs (on a local disk,
        populated when the page cache holds less than half of the files),
        read on network, FUSE and overlay file systems; weights.read_report says which and
        why), "mmap", "read" (many reads in flight, nothing mapped) or
        "direct" (reads past the page cache with O_DIRECT where the file
        system allows it); populate: with "mmap", read the mapped bytes in
        before returning, for a caller about to touch every byte;
        populate_when_cold: with "mmap", populate only where "auto" would
        (the page cache holds less than half of the files, on a local disk,
        and they fit in the memory available), else map alone (a copy only
        for a verified load): weights.read_report's reason says which;
        progress: called with a LoadProgress per component; returning False
        cancels the load (CancelledError). With world_size > 0, only rank's
        slice of each component is read: split maps component id patterns to
        the dimension to split (-1: replicate; the first matching pattern
        wins; components no pattern matches are replicated). An uneven
        dimension is shared as split_convention says: "tensor_split" (the
        first n % world_size ranks take one more) or "chunk" (each rank takes
        ceil(n / world_size), the last what is left: torch.chunk, DTensor's
        Shard). Returns Weights (weights.bytes_read: what was read).

        staging_buffer_bytes, staging_buffer_count: the ring of pinned host
        buffers that uploads to device memory go through (0: 16 MiB, and 4
        buffers).

        verify: hash each file while it is read and raise DigestMismatchError,
        releasing everything, unless its SHA-256 is the published one (a
        Hugging Face cache names each large blob by it); digests: a digest
        manifest (rootspan.inspect.hash_checkpoint, `rootspan hash`) to check
        against instead, implying verify. weights.digests says what was
        checked; nothing to check against is NotFoundError. source_digests:
        hash each component's bytes in the files once everything is placed
        (component.source_sha256(), to compare with component.sha256()).

        signature: an OpenSSF model signature (a Sigstore bundle, as
        rootspan.sign or `model_signing sign` writes it) over the checkpoint's
        folder, checked with public_key (a PEM file: ECDSA P-256, P-384 or
        P-521) or certificate_chain (a PEM file or a list of them: the
        certificates to trust) before anything is read; then every file it
        names is hashed from where the load placed its bytes, the files it
        does not load from the files. A bad signature, a file missing or one it does not name
        is SignatureInvalidError (ignore_unsigned_files=True: files it does
        not name are let be), a file that differs DigestMismatchError,
        everything released before a weight reaches the caller.

        read_only: with strategy "mmap", False (the default) maps the files
        copy-on-write, so that zero-copy components are writable: a write
        changes this process's copy of the page it touches, never the file.
        True makes zero-copy components read-only (numpy arrays are then
        read-only, and legacy DLPack consumers are refused)."""
        from .weights import load
        return load(self, path, schema, provider, device, strategy, progress, rank, world_size, split, tensors,
                    revision, staging_buffer_bytes, staging_buffer_count, read_only, split_convention, verify, digests,
                    populate, source_digests, signature, public_key, certificate_chain, ignore_unsigned_files,
                    populate_when_cold)

    def __repr__(self):
        return "<rootspan.Context closed>" if self.closed else f"<rootspan.Context {self._state.handle:#x}>"
