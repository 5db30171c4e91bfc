"""Loaded checkpoints: Weights, a read-only mapping from component id to Component.

Weights own their components' roots. What they hand out outlives them: an
array, memoryview or DLPack consumer (a torch tensor) of a component keeps
that component's memory alive after the Weights are closed, garbage, or left
by their with block. close() releases at once every root nothing uses and
defers each other one until its last consumer goes; the C handle is freed
with the last root. Nothing waits and nothing raises BusyError.

A component's exports share one lease: one claim and one mapping, held by
the component while any array or tensor of it lives. A writable component
(copy-on-write or read into memory) is claimed exclusively and mapped for
writing, so that every array and tensor of it is a writable view of the same
bytes, as with the reference safetensors library; a read-only one is claimed
shared.
"""
import collections
import collections.abc
import ctypes
import functools
import itertools
import operator
import struct
import sys
import weakref

from . import _abi, _arguments, _compiled, _memory, dtypes, errors
from ._abi import text as _text
from ._arguments import c_array, check_bool, check_int, optional_path
from ._checkpoint import call_json, checkpoint_options, signature_options
from .root import Root, _Exportable, host_device


LoadProgress = collections.namedtuple("LoadProgress", ("component", "index", "count", "bytes_done", "bytes_total"),
                                      module=__name__)
LoadProgress.__doc__ = "Where a load stands, as passed to a progress callable: component (its id) is str, the rest int."


class _WeightsState:
    """The rootspan_weights handle and which of its roots are released.

    Everything that can reach a component's memory (Component, its Root, a
    lease) refers to this state, so it lives until the last of them goes."""

    def __init__(self, context, handle, count):
        self.context_state = context._state
        self.handle = handle
        self.released = [False] * count  # component index -> its root went back
        self.unreleased = count
        self.roots = [None] * count  # component index -> weakref to its Root object, to invalidate it
        self.given_up = [False] * count  # component index -> released as soon as nothing uses it
        self.exported = [False] * count  # component index -> its exports' lease (and claim) is live
        self.leased_ahead = {}  # component index -> its export lease, made by a walk ahead of its caller (_walk)
        context._state.weights.add(self)

    def release_unused(self):
        """Releases every root nothing claims, and frees the handle once all are released. Quiet: a root
        still in use (Busy) is released when its last consumer lets go (the context state's after_release)."""
        with self.context_state.lock:
            # Only the roots not released and not exported are tried (the others make no library call): a load
            # handed out as views of its files (map_file_views) has every component exported, and 10,000 calls
            # that find so cost a tenth of its time. With none to try, the first index still makes _release's
            # checks of the handles (freed once every root is released).
            released, exported = self.released, self.exported
            tried = list(itertools.compress(range(len(released)), map(operator.not_, map(operator.or_, released, exported))))
            for index in tried or range(min(1, len(released))):
                if not self._release(index):
                    break

    def release_given_up(self, indices):
        """Releases each given-up component of indices (_release), whose consumers let go together (a file lease's).
        Where every component is given up and none is exported any more, the handle is freed in one call, which
        releases every root, instead of one call a root (a load of 10,000 tensors dropped: issue 33); a root
        still claimed by hand makes that call refuse, and then they go one by one, as ever."""
        with self.context_state.lock:
            if self.handle is not None and all(self.given_up) and not any(self.exported):
                try:
                    self.free()
                    return
                except errors.Error:
                    pass
            for index in indices:
                if self.given_up[index] and not self._release(index):
                    break

    def _release(self, index):
        """Tries to release one root, holding the lock; False once there is nothing left to release."""
        state = self.context_state
        if self.handle is None:
            return False
        if state.handle is None:  # the context was destroyed: it released everything
            self.handle = None
            return False
        lib = state.lib
        # An exported component is claimed: the library would refuse (Busy), after the work of saying why.
        if not self.released[index] and not self.exported[index] and \
                lib.rootspan_weights_release_component(self.handle, index, None) == _abi.OK:
            self._invalidate(index)
        if self.unreleased == 0:
            lib.rootspan_weights_free(self.handle, None)
            self.handle = None
            return False
        return True

    def _invalidate(self, index):
        if not self.released[index]:
            self.unreleased -= 1
        self.released[index] = True
        root = self.roots[index]() if self.roots[index] is not None else None
        if root is not None:
            root._handle = None  # a Root object of a released component refuses to be used

    def free(self):
        """Frees everything now; BusyError, freeing nothing, while a root is claimed."""
        state = self.context_state
        with state.lock:
            if self.handle is None or state.handle is None:
                self.handle = None
                return
            errors.check(state.lib, state.lib.rootspan_weights_free, self.handle)
            self.handle = None
            self.released = [True] * len(self.released)
            self.unreleased = 0
            for index in itertools.compress(range(len(self.roots)), self.roots):  # the Root objects made
                self._invalidate(index)

    def close(self):
        """Releases what nothing uses now, the rest when its last consumer goes."""
        with self.context_state.lock:  # against a walk keeping the leases it makes (_lease_ahead)
            self.given_up = [True] * len(self.given_up)
            self.leased_ahead.clear()  # the leases walks made ahead: their roots go now, unless an export took one
        self.release_unused()

    def give_up(self, index):
        """Releases one component's root as soon as nothing uses it (now, if nothing does)."""
        with self.context_state.lock:
            self.given_up[index] = True
            self._release(index)

    def __del__(self):
        try:
            self.release_unused()  # nothing refers to the state any more: nothing claims its roots
        except Exception:
            pass


_role_names = {}  # rootspan_component_role -> its name: asked once per role, not once per component


def _role_name(lib, role):
    name = _role_names.get(role)
    if name is None:
        name = _role_names[role] = _text(lib.rootspan_role_name(role))
    return name


# What a load's thousands of components share, worked out once per value: each component only looks it up.
_element_types = {}  # rootspan_dtype -> (name, map code, numpy dtype)
_encoding_names = {}  # rootspan_encoding_kind -> name
_file_names = {}  # a source file's name as bytes -> as str (a load's components lie in a few files)


def _element_type(code):
    found = _element_types.get(code)
    if found is None:
        name = dtypes.name(code)
        map_code = code if dtypes.bits(name) % 8 == 0 else _abi.DTYPE_NONE
        found = _element_types[code] = (name, map_code, dtypes.numpy_dtype(name))
    return found


def _encoding_name(kind):
    found = _encoding_names.get(kind)
    if found is None:
        found = _encoding_names[kind] = _abi.enum_name(_abi.ENCODINGS, kind)
    return found


def _file_name(raw):
    found = _file_names.get(raw)
    if found is None:
        found = _text(raw)
        if len(_file_names) < 4096:  # a bound, for a process that loads many checkpoints
            _file_names[raw] = found
    return found


def map_leases(components, hand_over=False):
    """The leases of many components made at once, before their tensors are: one C call for each run of
    consecutive indices of one load (rootspan_weights_map_components), where each component alone takes one.
    Returns a list aligned with `components` that holds each lease until the caller has made that
    component's tensor (its _export_lease() then finds the lease); a caller handing tensors out one by one
    sets each entry to None as it goes, so that a dropped tensor's memory still goes back at once. None where
    a component had a lease already, was released, or its run could not be mapped: its _export_lease() makes
    one alone, as ever, and raises what is wrong with it.
    hand_over: each component leased here is also handed over (Component._hand_over) in the same pass, for a
    caller that keeps only its tensors: none goes back now, since its lease claims it; each goes back when
    that lease goes, that is when the tensor made under it goes. A component without a lease here is the
    caller's to hand over after its tensor is made."""
    with _memory.gc_paused():  # thousands of claims and leases at once: see _memory.gc_paused
        return _map_leases(components, hand_over)


_wstate_of = operator.attrgetter("_wstate")
_index_of = operator.attrgetter("index")
_lease_of = operator.attrgetter("_lease")


def _map_leases(components, hand_over):
    leases = [None] * len(components)
    for wstate, wanted in _by_load(components):
        with wstate.context_state.lock:
            if wstate.handle is None or wstate.context_state.handle is None or wstate.context_state.closing:
                continue
            for run in _runs(_unleased(wstate, wanted, components)):
                for (index, at), mapped in zip(run, _map_components(wstate, run)[1]):
                    lease = _ExportLease(wstate, index, *mapped)
                    components[at]._lease = weakref.ref(lease)
                    leases[at] = lease
                    if hand_over:
                        wstate.given_up[index] = True
    return leases


def _unleased(wstate, wanted, components):
    """wanted, [(index, position in components)] of one load, by index, less the components released or with a
    live lease already. A fresh load's (none released, none leased) goes without a check of each."""
    if wstate.unreleased == len(wstate.released) and not any(map(_lease_of, components)):
        return sorted(wanted)
    return sorted((index, at) for index, at in wanted if not wstate.released[index] and
                  (components[at]._lease is None or components[at]._lease() is None))


def _by_load(components):
    """[(weights state, [(index, position in components)])]: components grouped by the load they are of."""
    wstates = list(map(_wstate_of, components))
    # one load's (the usual): no grouping (count compares by identity: _WeightsState defines no __eq__)
    if wstates and wstates.count(wstates[0]) == len(wstates):
        return [(wstates[0], list(zip(map(_index_of, components), itertools.count())))]
    loads = {}  # id(weights state) -> (state, [(index, position)])
    for at, c in enumerate(components):
        loads.setdefault(id(c._wstate), (c._wstate, []))[1].append((c.index, at))
    return list(loads.values())


def _runs(wanted):
    """The runs of consecutive indices in wanted, a sorted [(index, position)] of distinct indices."""
    if wanted and wanted[-1][0] - wanted[0][0] == len(wanted) - 1:  # one run (a whole load): no walk
        yield wanted
        return
    start = 0
    for end in range(1, len(wanted) + 1):
        if end == len(wanted) or wanted[end][0] != wanted[end - 1][0] + 1:
            yield wanted[start:end]
            start = end


def _mapped_array(wstate, run):
    """Claims and maps the components of run, consecutive indices of one load, in one C call (holding the
    context's lock): the filled rootspan_component_mapping array, which rootspan_weights_unmap_components
    ends in one call. None when the call failed: nothing was claimed or mapped, and each component then makes
    its own lease, and says what is wrong."""
    state = wstate.context_state
    mappings = (_abi.ComponentMapping * len(run)).from_buffer_copy(_abi.COMPONENT_MAPPING_IN * len(run))
    if state.lib.rootspan_weights_map_components(wstate.handle, run[0][0], len(run), mappings, None) != _abi.OK:
        return None
    return mappings


# (library, the compiled module's map_component, that function with the library's two functions bound): made
# at the first export, not at each (a load's thousands), and again for another library or function.
_map_one_call = (None, None, None)


def _map_one(wstate, index):
    """(claim, mapping, address, nbytes) of component `index` claimed and mapped whole in one library call
    (holding the context's lock), or None when the call failed: nothing was claimed or mapped. Through the
    compiled module where it is there (map_component), else as _map_components does for a run of one."""
    global _map_one_call
    lib, map_component = wstate.context_state.lib, getattr(_compiled.describe(), "map_component", None)
    if map_component is None:
        mapped = _map_components(wstate, [(index, 0)])[1]
        return mapped[0] if mapped else None
    cached = _map_one_call  # read once: another thread may set it meanwhile
    if cached[0] is not lib or cached[1] is not map_component:
        cached = _map_one_call = (lib, map_component, functools.partial(
            map_component, lib.address("rootspan_weights_map_components"),
            lib.address("rootspan_weights_unmap_components")))
    return cached[2](wstate.handle, index)


def _map_components(wstate, run):
    """_mapped_array, and [(claim, mapping, address, nbytes)] in run's order ([] when the call failed)."""
    mappings = _mapped_array(wstate, run)
    if mappings is None:
        return None, []
    return mappings, [(claim, mapping, data or 0, nbytes) for _, claim, mapping, data, nbytes, _ in
                      struct.iter_unpack(_abi.COMPONENT_MAPPING_FORMAT, mappings)]


def map_file_views(components):
    """The memory of many zero-copy components, mapped in one C call for each run of consecutive indices and handed
    out as views of one flat array per file (issue 33): {position in components: writable uint8 numpy array of that
    component's bytes}. Taken are the writable (copy-on-write) zero-copy components, which lie in the one mapping
    the load made of their file; each file's claims and mappings are held by one lease (_FileLease), which every
    view of that file keeps alive, so a file's memory goes back when the last tensor of that file goes, not tensor
    by tensor. For loaders that hand over a whole checkpoint at once, where a tensor costs a third of what a lease
    of its own does. The others (copied, read-only, already exported, or the call failed) are not in the answer:
    make their leases with map_leases. {} without numpy."""
    if _memory.numpy is None:
        return {}
    with _memory.gc_paused():
        return _map_file_views(components)


def _map_file_views(components):
    views = {}
    wanted = [(c.index, at) for at, c in enumerate(components)
              if c.zero_copy and not c.read_only and c._lease is None]
    if not wanted:
        return views
    wstate = components[wanted[0][1]]._wstate
    if any(components[at]._wstate is not wstate for _, at in wanted):
        return views  # components of several loads: each maps its own
    state = wstate.context_state
    with state.lock:
        if wstate.handle is None or state.handle is None or any(wstate.released[i] for i, _ in wanted):
            return views
        wanted.sort()
        # source file -> its components' columns: index, position, claim, mapping, address, nbytes; a run that
        # lies in one file, the usual case, is added whole (thousands of components: the mapping array read as
        # numpy columns, no Python loop body)
        by_file = {}
        # source file -> its runs' mapping arrays where a run holds nothing of another file (ended in one
        # call each), and the (claim, mapping) of its components in runs shared with others (one by one)
        ends = {}
        # the rootspan_component_mapping array as numpy columns: numpy reads a ctypes structure's layout (a
        # pointer is an unsigned integer, NULL 0)
        layout = _memory.numpy.dtype(_abi.ComponentMapping)
        for run in _runs(wanted):  # one C call for each run of consecutive indices
            mappings = _mapped_array(wstate, run)
            if mappings is None:
                continue
            values = _memory.numpy.frombuffer(mappings, layout)
            columns = (*zip(*run), *(values[name].tolist() for name in ("claim", "mapping", "data", "byte_length")))
            files = [components[at].source_file for _, at in run]
            if files.count(files[0]) == len(files):
                for into, column in zip(by_file.setdefault(files[0], ([], [], [], [], [], [])), columns):
                    into.extend(column)
                ends.setdefault(files[0], ([], []))[0].append(mappings)
                continue
            for file, *row in zip(files, *columns):
                for into, value in zip(by_file.setdefault(file, ([], [], [], [], [], [])), row):
                    into.append(value)
                ends.setdefault(file, ([], []))[1].append((row[2], row[3]))
        for file, (indices, positions, claims, _, addresses, sizes) in by_file.items():
            lease = _FileLease(wstate, indices, claims, addresses, sizes, *ends[file])
            flat = _memory.ndarray(lease, 0, "|u1", (lease.nbytes,), False)
            starts = [address - lease.address for address in addresses]
            views.update(zip(positions, map(flat.__getitem__, map(slice, starts, map(operator.add, starts, sizes)))))
    return views


class _FileLease:
    """The claims and mappings of the zero-copy components of one file (map_file_views), held together and
    released together when the last view of them goes. address and nbytes span their mappings: all lie in
    the one mapping the load made of the file, so the span is mapped memory, read only through the views
    of the components themselves."""

    def __init__(self, wstate, indices, claims, addresses, sizes, arrays, singles):
        """indices, claims, addresses, sizes: the components' columns; how they end: arrays, the mapping
        arrays (rootspan_weights_map_components') that hold only these components, each in one call, and
        singles, the (claim, mapping) of the rest, one by one."""
        self.state = wstate.context_state
        self._wstate = wstate
        self._indices, self._claims_in_order = indices, claims  # [] once released
        self._ends = (arrays, singles)
        self.address = min(addresses)
        self.nbytes = max(map(operator.add, addresses, sizes)) - self.address
        exported = wstate.exported
        for index in indices:
            exported[index] = True
        self._claims = None  # index -> claim, made by part() when first asked
        self.state.leases += 1  # one lease, however many components (the caller holds the lock)

    def part(self, index):
        """The share of this lease that component `index` is, as rootspan._memory.copy_out reads it
        (_FileLeasePart); made on demand, for the rare caller that copies out of one component."""
        with self.state.lock:
            if self._claims is None:
                self._claims = dict(zip(self._indices, self._claims_in_order))
            return _FileLeasePart(self, self._claims.get(index))

    def release(self):
        state = self.state
        with state.lock:
            held, self._indices, self._claims_in_order = self._indices, [], []
            if not held:
                return
            state.leases -= 1
            if state.handle is not None:  # a destroyed context already released everything
                lib = state.lib
                (arrays, singles), self._ends = self._ends, ([], [])
                for mappings in arrays:  # each array's mappings and claims in one call
                    if lib.rootspan_weights_unmap_components(mappings, len(mappings), None) != _abi.OK:
                        # stopped at a claim still in use: the entries it did not end, one by one
                        singles += [(m.claim, m.mapping) for m in mappings if m.claim or m.mapping]
                for claim, mapping in singles:
                    if mapping:
                        lib.rootspan_unmap(mapping)
                    if claim:
                        lib.rootspan_claim_release(claim, None)
                exported = self._wstate.exported
                for index in held:
                    exported[index] = False
                self._wstate.release_given_up(held)
                state.after_release()  # a context close waiting for this lease

    def __del__(self):
        try:
            self.release()
        except Exception:  # nothing useful to do while being collected
            pass


class _FileLeasePart:
    """One component's share of a _FileLease, as rootspan._memory.copy_out reads a lease: its claim's handle
    (under which the library copies, from offset 0) while the file lease holds it. It keeps the file lease, and so
    every view of that file's memory, alive. Made by lease_of_view."""
    __slots__ = ("_file_lease", "_claim", "state")
    offset = 0

    def __init__(self, file_lease, claim):
        self._file_lease = file_lease
        self._claim = claim
        self.state = file_lease.state

    @property
    def mapping(self):
        """Truthy while the file lease holds its memory; None once released (what copy_out checks)."""
        return True if self._file_lease._indices and self._claim is not None else None

    def _claim_handle(self, operation):
        return self.state.live(self._claim if self.mapping else None, operation, "claim")


def lease_of_view(view, component):
    """The lease copy_out reads component's bytes through, for `view`, its bytes from map_file_views."""
    owner = view
    while not isinstance(getattr(owner, "lease", None), _FileLease):
        owner = owner.base  # numpy views down to the base holding the file lease (_memory.ndarray)
    return owner.lease.part(component.index)


class _ExportLease(_memory._Lease):
    """The lease every export of a component is made under: it owns the component's claim (its handle) and
    the mapping of it, which go together when the last export goes (or the lease is released). A load hands
    out thousands of tensors, each under such a lease, so it is one object, without the Root and Claim
    objects a caller's own claims go through (issue 33). Made holding the context's lock."""
    __slots__ = ("_wstate", "_index")

    def __init__(self, wstate, index, claim, mapping, address, nbytes):
        """claim, mapping: the handles of the component's claim and its mapping, which the lease owns from
        here on; address, nbytes: where the mapping lies. The fields _Lease's own constructor sets, set here
        without the lock it takes (its caller holds it) or the library calls it makes where address and
        nbytes are not known."""
        self.state = state = wstate.context_state
        self.claim = claim  # rootspan_claim * (int); None once released
        self.offset = 0  # the mapping is the whole claim
        self.mapping = mapping  # rootspan_mapping * (int); None once released
        self.own_claim = True
        self.address = address or 0
        self.nbytes = nbytes
        self._wstate = wstate
        self._index = index
        wstate.exported[index] = True
        state.leases += 1  # the caller holds the lock

    def _claim_handle(self, operation):
        return self.state.live(self.claim, operation, "claim")

    def _mapping_ended(self):
        """Ends the claim: the component goes back with it if it was given up."""
        self.claim = _claim_ended(self._wstate, self._index, self.claim)


def _claim_ended(wstate, index, claim):
    """(holding the context's lock, the context open) Releases an export's claim, whose mapping is gone or
    was never made: the component goes back if it was given up, and a waiting close finishes. None, or the
    claim where the library would not release it."""
    state = wstate.context_state
    if claim is not None and state.lib.rootspan_claim_release(claim, None) == _abi.OK:
        claim = None
    wstate.exported[index] = False
    state.after_release(wstate, index)
    return claim


class Component(_Exportable):
    """One loaded component: its layout, and its memory as numpy (no copy) or DLPack.

    dtype is the element type's name ("F32"; "U8" for block-quantized bytes)
    and numpy_dtype its numpy dtype, or None where numpy has none. shape is the
    schema's: for a block-quantized component, the block grid. The exported
    tensor (numpy(), DLPack) of a block-quantized component is U8 with shape
    grid + (bytes_per_block,). gguf_type is the ggml type id (GGML_TYPE_*) of
    the GGUF tensor it is, or None: with the raw blocks, what an engine's GGUF
    loader wants (vLLM's qweight_type); format_id ("gguf.q8_0") names it."""

    # slots: a load makes one a tensor, thousands at once
    __slots__ = ("id", "source_name", "_root_handle", "nbytes", "segments", "zero_copy", "read_only", "format_id",
                 "values_per_block", "bytes_per_block", "shape", "source_file", "source_offset", "source_contiguous",
                 "_wstate", "index", "_context", "_root", "_lease", "dtype", "_map_code", "numpy_dtype", "role",
                 "encoding", "gguf_type", "__weakref__")

    def __init__(self, weights, index, values):
        """values: the component's rootspan_component_info as a tuple (_component_values)."""
        (self.id, self.source_name, self._root_handle, self.nbytes, self.segments, self.zero_copy, self.read_only,
         dtype, role, encoding, self.format_id, self.values_per_block, self.bytes_per_block, self.shape, gguf_type,
         self.source_file, self.source_offset, self.source_contiguous) = values
        # source_name: the checkpoint's own name of its (first) tensor. source_file, source_offset: where its
        # bytes lie, its first segment's file (relative to the checkpoint's folder) and offset there;
        # source_contiguous: those nbytes bytes are all of it. _root_handle: the Root object is made on first
        # use (most loads never ask for it).
        self._wstate = weights._wstate  # not the Weights object: no reference cycle
        self.index = index
        self._context = weights._context
        self._root = None
        self._lease = None  # weakref to the lease every export of this component shares
        # _map_code: what its root is mapped as, its element type or bytes for the sub-byte types (their roots
        # are untyped). The lookups are inline, a function called only for a value not seen yet: a load makes
        # thousands of components.
        self.dtype, self._map_code, self.numpy_dtype = _element_types.get(dtype) or _element_type(dtype)
        self.role = _role_names.get(role) or _role_name(weights._context._state.lib, role)
        self.encoding = _encoding_names.get(encoding) or _encoding_name(encoding)
        self.gguf_type = gguf_type if gguf_type >= 0 else None

    @property
    def root(self):
        """The component's Root, owned by the weights: claim it, do not release it."""
        with self._wstate.context_state.lock:
            if self._root is None:
                released = self._wstate.handle is None or self._wstate.released[self.index]
                self._root = Root(self._context, None if released else self._root_handle, owner=self._wstate)
                self._root._owner_index = self.index
                self._wstate.roots[self.index] = weakref.ref(self._root)
            return self._root

    def _hand_over(self):
        """The caller keeps only what it exported (an array or tensor): the component's root goes back as soon
        as nothing uses it, now if nothing does. For loaders that hand each tensor to a consumer as they go."""
        self._wstate.give_up(self.index)

    def _live(self, operation):
        if self._wstate.handle is None or self._wstate.released[self.index]:
            raise ValueError(f"{operation}: component {self.id!r} was released (its weights are closed)")
        self._wstate.context_state.require_open(operation)

    def _export_root(self):
        return self.root

    def _export_layout(self):
        if self.encoding == "block_quantized":
            return "U8", self.shape + (self.bytes_per_block,), self.read_only
        return self.dtype, self.shape, self.read_only

    def _export_lease(self):
        """The lease all exports of this component share: made on first use, kept while any export lives.
        After close(), a component whose memory is still in use keeps exporting it; once released, never."""
        state = self._wstate.context_state
        with state.lock:
            lease = self._live_lease()
            if lease is not None:
                return lease
            self._live("export")
            # One library call claims and maps the whole component and says where it lies, where the claim,
            # the map and reading the mapping's address and length took four (issue 33: Context.load +
            # numpy() does this for every component).
            mapped = _map_one(self._wstate, self.index)
            if mapped is None:  # that call failed: the same steps one by one, the failing one saying what is wrong
                mapped = self._claim_and_map()
            lease = _ExportLease(self._wstate, self.index, *mapped)
            self._lease = weakref.ref(lease)
            return lease

    def _claim_and_map(self):
        """(claim, mapping, address, nbytes) of the whole component, by Root.claim and Claim.map without their
        argument checks (whole component, checked sizes); raises what is wrong. Holding the lock."""
        writable = not self.read_only
        lib = self._wstate.context_state.lib
        claim = ctypes.c_void_p()
        errors.check(lib, lib.rootspan_claim_acquire, self._root_handle, 0, self.nbytes,
                     _abi.CLAIM_EXCLUSIVE if writable else _abi.CLAIM_SHARED, ctypes.byref(claim))
        try:
            mapping = ctypes.c_void_p()
            errors.check(lib, lib.rootspan_map_write if writable else lib.rootspan_map_read, claim.value,
                         self._map_code, 0, self.nbytes, ctypes.byref(mapping))
        except BaseException:
            _claim_ended(self._wstate, self.index, claim.value)
            raise
        return claim.value, mapping.value, lib.rootspan_mapping_data(mapping.value), \
            lib.rootspan_mapping_length(mapping.value)

    def _live_lease(self):
        """The lease every export of this component shares, while it still holds the memory; else None."""
        lease = self._lease() if self._lease is not None else None
        return lease if lease is not None and lease.mapping is not None else None

    def _require_exportable(self):
        """A component whose memory no lease holds any more must still be live to be exported."""
        if self._live_lease() is None:
            self._live("export")

    def __dlpack_device__(self):
        with self._wstate.context_state.lock:
            self._require_exportable()
            if self.zero_copy:  # the host provider mapping the file in place: host memory, no Root needed
                return host_device()
            return self.root._dlpack_device()

    def _in_host_memory(self):
        # zero-copy: the host provider mapping the file in place. Without the lock __dlpack_device__ takes: the
        # export that follows takes it, and checks liveness again under it (numpy() of every component of a
        # load took the lock twice). A released component says so first, as __dlpack_device__ would.
        if not self.zero_copy:
            return super()._in_host_memory()
        self._require_exportable()
        return True

    def _export_what(self):
        return f"component {self.id!r}"

    def numpy(self, dtype=None):
        # The usual call in fewer steps (issue 33: Context.load's callers make it for each of thousands of
        # components): a zero-copy component is the file's pages, host memory, exported in its own numpy type
        # and shape. _export_lease refuses a released component first, as the general path does.
        if dtype is None and self.zero_copy and self.numpy_dtype is not None and self.encoding != "block_quantized":
            return _memory.ndarray(self._export_lease(), 0, dtypes.numpy_typestr(self.dtype), self.shape,
                                   self.read_only)
        return super().numpy(dtype)

    numpy.__doc__ = _Exportable.numpy.__doc__

    def sha256(self):
        """The SHA-256 (hex) of the component's bytes as they lie in provider memory (writes made through its
        arrays and tensors included)."""
        state = self._wstate.context_state
        with state.lock:
            lease = self._live_lease()
            if lease is not None:  # exported: hash the memory under that claim
                return _sha256_of(lease)
            # Under the lock, so that a close on another thread cannot free the handle during the call.
            self._live("verify")
            out = ctypes.create_string_buffer(65)
            errors.check(state.lib, state.lib.rootspan_weights_component_sha256, self._wstate.handle, self.index,
                         out)
            return out.value.decode()

    def source_sha256(self):
        """The SHA-256 (hex) of this component's bytes in the files, hashed once the load had placed every
        component; only for a load with source_digests=True (NotFoundError otherwise)."""
        state = self._wstate.context_state
        with state.lock:
            if self._wstate.handle is None:
                raise ValueError(f"source_sha256: component {self.id!r} was released (its weights are closed)")
            out = ctypes.create_string_buffer(65)
            errors.check(state.lib, state.lib.rootspan_weights_source_sha256, self._wstate.handle, self.index, out)
            return out.value.decode()

    def __repr__(self):
        flags = [f for f, on in (("zero-copy", self.zero_copy), ("read-only", self.read_only)) if on]
        return (f"<rootspan.Component {self.id!r} {self.dtype}{list(self.shape)} {self.nbytes} bytes {self.role} "
                f"{self.encoding}{' ' + ' '.join(flags) if flags else ''}>")


# What one copy out of provider memory takes while hashing: a multiple of every element size.
_HASH_CHUNK = 16 << 20


def _sha256_of(lease):
    """The SHA-256 (hex) of a lease's bytes, read through the library's protected copies (_memory.copy_out),
    one chunk at a time: a file truncated under a mapped component is an IoError, not a SIGBUS."""
    import hashlib
    digest = hashlib.sha256()
    chunk = ctypes.create_string_buffer(min(lease.nbytes, _HASH_CHUNK))
    view = memoryview(chunk).cast("B")
    for done in range(0, lease.nbytes, _HASH_CHUNK):
        n = min(_HASH_CHUNK, lease.nbytes - done)
        _memory.copy_out(lease, done, n, ctypes.addressof(chunk))
        digest.update(view[:n])
    return digest.hexdigest()


def _component_values(lib, handle, count):
    """(a tuple for each of the weights' components, in index order, until a call fails; that call's status,
    or OK): rootspan_component_info's fields id, source_name, root, byte_length, segments, zero_copy, read_only,
    dtype, role, encoding, format_id, values_per_block, bytes_per_block, shape, gguf_type, source_file,
    source_offset, source_contiguous; its strings as str, its flags as bool, shape as a tuple. One call of the
    compiled rootspan._describe where there is one, else ctypes (the same tuples, more slowly)."""
    compiled = _compiled.describe()
    if compiled is not None:
        return compiled.components(lib.address("rootspan_weights_component"), handle, count)
    component_info = lib.rootspan_weights_component
    info = _abi.ComponentInfo()  # filled again for each component; the tuple copies what it keeps
    info.struct_size = ctypes.sizeof(_abi.ComponentInfo)
    info_ref = ctypes.byref(info)
    described = []
    for i in range(count):
        status = component_info(handle, i, info_ref)
        if status != _abi.OK:
            return described, status
        rank = info.rank
        described.append((_text(info.id), _text(info.source_name), info.root, info.byte_length, info.segments,
                          info.zero_copy != 0, info.read_only != 0, info.dtype, info.role, info.encoding,
                          _text(info.format_id), info.values_per_block, info.bytes_per_block,
                          tuple(info.shape[:rank]) if rank else (), info.gguf_type, _file_name(info.source_file),
                          info.source_offset, info.source_contiguous != 0))
    return described, _abi.OK


# How many components a walk over values() or items() leases at once, ahead of its caller (_walk).
_LEASED_AHEAD = 256


def _walk(components, wstate, items):
    """Each of components (a load's, in load order; wstate its state), or (id, component) where items is true.
    Once the caller holds an export of each of the two components handed to it last (the usual loop: numpy()
    or a tensor of every component, kept), the leases of the next _LEASED_AHEAD are made at once (map_leases:
    one library call for each run of them not exported yet), and each export finds its lease made, where each
    alone takes a call of its own (issue 33: a third of the cost of a component's numpy()). Such a lease
    waits in the weights' state (leased_ahead) until the walk moves past its component, so one the caller did
    not take goes back then. It also goes as soon as its component's root is claimed (Root.claim: a writable
    component's export claim is exclusive, and would refuse the root's own), and when the weights or the
    context are closed (_WeightsState.close, Context.close); none is made after (map_leases maps nothing for
    a closing context, _lease_ahead nothing given up): what the caller exports from then on is refused as it
    always was."""
    leased = wstate.leased_ahead
    mine = []  # the indices this walk leased ahead
    window_end = 2  # the position the components leased ahead reach
    try:
        for at, c in enumerate(components):
            if at >= window_end and _held(components[at - 1]) and _held(components[at - 2]):
                window_end = at + _LEASED_AHEAD
                mine += _lease_ahead(components[at:window_end], wstate)
            yield (c.id, c) if items else c
            leased.pop(c.index, None)
    finally:  # run out, or dropped by its caller
        for index in mine:
            leased.pop(index, None)


def _lease_ahead(components, wstate):
    """Leases components (one load's, wstate its state) not exported or given up yet, into wstate.leased_ahead;
    the indices leased. Under the context's lock, so that a close on another thread comes before or after
    (_WeightsState.close). No local of the walk holds a lease: the one in leased_ahead is its only reference."""
    with wstate.context_state.lock:
        exported, given_up = wstate.exported, wstate.given_up
        # not the exported (a file's views among them: the call would refuse their whole run)
        wanted = [c for c in components if not exported[c.index] and not given_up[c.index]]
        made = [(c.index, lease) for c, lease in zip(wanted, map_leases(wanted)) if lease is not None]
        wstate.leased_ahead.update(made)
    return [index for index, _ in made]


def _held(component):
    """Whether an export of component is live (its lease, held by an array or tensor the caller keeps)."""
    return component._wstate.exported[component.index]


class _ComponentValues(collections.abc.ValuesView):
    def __iter__(self):  # the components taken now: closed weights refuse here, as a list's iterator did
        return _walk(self._mapping._live_components(), self._mapping._wstate, False)


class _ComponentItems(collections.abc.ItemsView):
    def __iter__(self):
        return _walk(self._mapping._live_components(), self._mapping._wstate, True)


class Weights(collections.abc.Mapping):
    """The components of a load, by id, in load order."""

    def __init__(self, context, handle):
        self._context = context
        with context._state.lock:  # a close on another thread (which frees the handle) waits for this
            context._state.require_open("load")
            self._read(context._state.lib, handle)

    def _read(self, lib, handle):
        """What the load made: its components, provider, bytes read and skipped components."""
        count = ctypes.c_size_t()
        status = lib.rootspan_weights_component_count(handle, ctypes.byref(count))
        self._wstate = _WeightsState(self._context, handle, count.value)  # from here on it frees the handle
        errors.check_plain(status, "weights", "rootspan_weights_component_count failed")
        self._closed = False
        self.provider = _text(lib.rootspan_weights_provider(handle))
        bytes_read = ctypes.c_uint64()
        errors.check_plain(lib.rootspan_weights_bytes_read(handle, ctypes.byref(bytes_read)), "weights",
                           "rootspan_weights_bytes_read failed")
        self.bytes_read = bytes_read.value  # what the load read from the files (one rank's share when sliced)
        with _memory.gc_paused():  # thousands of components: no collector passes over torch meanwhile
            described, status = _component_values(lib, handle, count.value)
            if status != _abi.OK:
                errors.check_plain(status, "weights", f"rootspan_weights_component({len(described)}) failed")
            self._components = [Component(self, i, values) for i, values in enumerate(described)]
        self._skipped = {}
        skipped = ctypes.c_size_t()
        errors.check_plain(lib.rootspan_weights_skipped_count(handle, ctypes.byref(skipped)), "weights",
                           "rootspan_weights_skipped_count failed")
        for i in range(skipped.value):
            cid, reason = ctypes.c_char_p(), ctypes.c_char_p()
            errors.check_plain(lib.rootspan_weights_skipped(handle, i, ctypes.byref(cid), ctypes.byref(reason)),
                               "weights", f"rootspan_weights_skipped({i}) failed")
            self._skipped[_text(cid.value)] = _text(reason.value)

    @property
    def digests(self):
        """What a verified load checked (verify=True or digests=): {"checked", "verified": [{"kind" ("file" or
        "component"), "name", "bytes", "sha256", "source"}], "unverifiable": [{"file", "reason"}]}; for a load
        not asked to check, {"checked": False, "verified": [], "unverifiable": []}."""
        state = self._context._state
        with state.lock:  # the liveness check and the call, against a close on another thread
            handle = self._live("check_digests")
            return call_json(state.lib, state.lib.rootspan_weights_digests, handle)

    @property
    def read_report(self):
        """How the files were read: {"requested", "strategy" (the one used), "reason" (why), "warmed_bytes",
        "reads": None when nothing was copied by reads, else {"engine" ("io_uring" or "pread threads"),
        "threads", "queue_depth", "requests", "bytes", "direct_bytes", "bounced_bytes", "peak_requests_in_flight",
        "peak_bytes_in_flight", "fallbacks": [{"file", "reason"}], ...}} (docs/cold-start.md)."""
        state = self._context._state
        with state.lock:  # the liveness check and the call, against a close on another thread
            handle = self._live("read_report")
            return call_json(state.lib, state.lib.rootspan_weights_read_report, handle)

    def _live(self, operation):
        if self._closed or self._wstate.handle is None:
            raise ValueError(f"{operation}: the weights are closed")
        self._context._state.require_open(operation)
        return self._wstate.handle

    @property
    def closed(self):
        return self._closed or self._wstate.handle is None

    @property
    def skipped(self):
        """Optional components left out because their sources are missing: id -> reason."""
        return dict(self._skipped)

    def __getitem__(self, component_id):
        if not isinstance(component_id, str):
            raise TypeError(f"component ids are str, got {type(component_id).__name__} {component_id!r}")
        return self._components[self._lookup(component_id)]

    def _lookup(self, name):
        """The index of the component with this id or tensor name; on a miss, a KeyError in the
        library's words, saying what is there (the reason it was skipped, or the closest ids)."""
        found = self._find(name)
        if found is not None:
            return found
        state = self._context._state
        with state.lock:
            handle = self._live("find_component")
        # Outside the lock: the explanation searches every name (a bounded search, but no reason for other
        # threads to wait). A close meanwhile cannot crash it (the library refuses a freed handle), and is
        # seen below: this state's handle never comes back once freed.
        index = ctypes.c_size_t()
        err = ctypes.c_void_p()
        status = state.lib.rootspan_weights_lookup(handle, _abi.c_text(name, "component id"), ctypes.byref(index),
                                                   ctypes.byref(err))
        error = errors.from_handle(state.lib, status, err) if status != _abi.OK else None
        with state.lock:
            if self._wstate.handle != handle:  # freed during the call: its answer may be another handle's
                raise ValueError("find_component: the weights are closed")
        if status == _abi.OK:
            return index.value
        if status == _abi.ERR_NOT_FOUND:
            raise KeyError(error.cause) from None
        raise error

    def get(self, component_id, default=None):
        """The component, or `default`: a miss is not explained, so it costs no search for close names."""
        if not isinstance(component_id, str):
            raise TypeError(f"component ids are str, got {type(component_id).__name__} {component_id!r}")
        index = self._find(component_id)
        return default if index is None else self._components[index]

    def __contains__(self, component_id):
        return isinstance(component_id, str) and "\0" not in component_id and self._find(component_id) is not None

    def _find(self, name):
        """The index of the component with this id, or of the one-tensor component whose
        tensor has this name outside the id rule (loaded as "tensor.<n>"); None when none."""
        state = self._context._state
        with state.lock:
            handle = self._live("find_component")
            index = ctypes.c_size_t()
            status = state.lib.rootspan_weights_find(handle, _abi.c_text(name, "component id"), ctypes.byref(index))
        if status == _abi.ERR_NOT_FOUND:
            return None
        errors.check_plain(status, "find_component", f"rootspan_weights_find({name!r}) failed")
        return index.value

    def _live_components(self):
        """The components in load order, as a list of their own; ValueError once the weights are closed."""
        self._live("components")
        return list(self._components)

    def __iter__(self):
        return iter([c.id for c in self._live_components()])

    # values() and items() walk the components in load order: Mapping's own would look each id up in the
    # library again, one call per component (thousands in a load).
    def values(self):
        return _ComponentValues(self)

    def items(self):
        return _ComponentItems(self)

    def __len__(self):
        self._live("components")
        return len(self._components)

    def close(self):
        """Closes the weights: every root nothing uses is released now, each other one when the last array,
        tensor or claim of it goes. Arrays and tensors already handed out stay valid; the weights give out
        nothing more."""
        self._closed = True
        self._wstate.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close()

    def __del__(self):
        try:
            self._wstate.close()
        except Exception:
            pass

    def __repr__(self):
        if self.closed:
            return "<rootspan.Weights closed>"
        return f"<rootspan.Weights {len(self._components)} components in {self.provider}>"


def _progress_trampoline(callback, failure):
    def call(_context, progress):
        try:
            p = progress.contents
            result = callback(LoadProgress(_text(p.component), p.component_index, p.component_count, p.bytes_done,
                                           p.bytes_total))
            return 1 if result is False else 0
        except BaseException:  # cancel, and raise it once the load has unwound
            failure.append(sys.exc_info()[1])
            return 1
    return _abi.PROGRESS_FN(call)


def load(context, path, schema, provider, device, strategy, progress, rank=0, world_size=0, split=None,
         tensors=None, revision=None, staging_buffer_bytes=0, staging_buffer_count=0, read_only=False,
         split_convention="tensor_split", verify=False, digests=None, populate=False, source_digests=False,
         signature=None, public_key=None, certificate_chain=None, ignore_unsigned_files=False,
         populate_when_cold=False):
    _compiled.describe()  # its setting (ROOTSPAN_PYTHON_EXTENSION) is checked before the load starts
    path_c = _arguments.path(path, "path")
    check_bool(read_only, "read_only")
    check_bool(verify, "verify")
    check_bool(populate, "populate")
    check_bool(populate_when_cold, "populate_when_cold")
    check_bool(source_digests, "source_digests")
    digests_c = optional_path(digests, "digests")
    signature_c, public_key_c, chain = signature_options(signature, public_key, certificate_chain,
                                                         ignore_unsigned_files)
    if not isinstance(provider, str):
        raise TypeError(f"provider must be a provider name or 'auto', got {type(provider).__name__}")
    check_int(device, "device", bits=32)
    check_int(staging_buffer_bytes, "staging_buffer_bytes")
    check_int(staging_buffer_count, "staging_buffer_count", bits=32)
    if not isinstance(strategy, str):
        raise TypeError(f"strategy must be a str ('auto', 'mmap', 'read' or 'direct'), got {type(strategy).__name__}")
    if strategy not in _abi.LOAD_STRATEGIES:
        raise ValueError(f"strategy must be 'auto', 'mmap', 'read' or 'direct', got {strategy!r}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable or None, got {type(progress).__name__}")
    options = checkpoint_options(schema, tensors, revision, rank, world_size, split, split_convention)
    handle = context._live("weights_load")
    lib = context._state.lib
    options.provider = _abi.c_text(provider, "provider")
    options.device = device
    options.strategy = _abi.LOAD_STRATEGIES[strategy]
    options.staging_buffer_bytes = staging_buffer_bytes
    options.staging_buffer_count = staging_buffer_count
    options.copy_on_write = 0 if read_only else 1
    options.check_digests = 1 if verify or digests is not None else 0
    options.digests_path = digests_c
    options.populate = 1 if populate else 0
    options.populate_when_cold = 1 if populate_when_cold else 0
    options.source_digests = 1 if source_digests else 0
    options.signature_path = signature_c
    options.public_key_path = public_key_c
    options.certificate_chain_paths, options.certificate_chain_count = c_array(chain)
    options.ignore_unsigned_files = 1 if ignore_unsigned_files else 0
    options._keep_signature = (signature_c, public_key_c, chain)  # ctypes holds only the addresses
    failure = []
    if progress is not None:
        trampoline = _progress_trampoline(progress, failure)
        options.progress = trampoline
    out = ctypes.c_void_p()
    try:
        errors.check(lib, lib.rootspan_weights_load, handle, path_c, ctypes.byref(options), ctypes.byref(out))
    except errors.CancelledError as cancelled:
        if failure:
            raise failure[0] from cancelled
        raise
    return Weights(context, out.value)  # its state frees the handle should anything below fail
