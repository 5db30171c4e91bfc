"""safe_open: one safetensors file, its tensors handed out as numpy arrays or torch tensors.

Opening validates the header through rootspan's core
(rootspan_safetensors_describe_file) and reads nothing else. Tensors are
loaded through the core as well, mapped copy-on-write (backend "mmap") or
read into memory (backend "pread"), every tensor one root: the first few
asked for one at a time (a load of just that tensor: reading one tensor of
a file of a million costs a pass over the header and one root), then, from
the next one on, all the rest at once (get_tensors and load_file load them
all at once from the start, and so does the first tensor asked for of a
mapped file of at most 2,048 tensors, whose whole load costs little more
than a load of one when warm, and of a mapped file whose names the caller
took and then asked for the first of them, as a loop over keys() does; read,
such a loop loads all the rest at its second tensor). A load of all the
tensors reads a mapped file that is cold on a local disk in first, many
reads in flight. Tensors are zero-copy views of those roots and writable:
a write changes this process's copy of a page, never the file.
On the CPU, the tensors of a load of all the rest are views of one mapping
of the file, as the reference's are views of one storage of it: that memory
goes back once the handle is closed and the last of them is dropped.
What a handle gave out outlives the handle: closing it only releases the
roots nothing uses any more (rootspan/weights.py).
"""
import operator
import os
import threading

from rootspan import _contexts, _memory, _tensors, errors as _core_errors
from rootspan.inspect import safetensors_file_table
from rootspan.weights import lease_of_view, map_file_views, map_leases
from rootspan.safetensors import _dtypes
from rootspan.safetensors._errors import SafetensorError, from_core, shown

# Every framework name the reference accepts -> its long name. numpy and
# pytorch are served; the others are refused by name.
_FRAMEWORKS = {"pt": "pytorch", "torch": "pytorch", "pytorch": "pytorch", "np": "numpy", "numpy": "numpy",
               "tf": "tensorflow", "tensorflow": "tensorflow", "jax": "flax", "flax": "flax", "mlx": "mlx",
               "paddle": "paddle"}
_SERVED = ("numpy", "pytorch")
# backend -> rootspan load strategy ("read_file" is a later release's name for "pread").
_BACKENDS = {"mmap": "mmap", "pread": "read", "read_file": "read"}
_DEVICE_KINDS = ("cuda", "npu", "xpu", "xla", "mlu", "musa", "hpu")
# How many tensors a handle loads one at a time, by strategy, before it loads all the rest at once. Each such
# load parses the header again, which a load of everything does once, at more cost per tensor (a root, a
# component). Mapped, a load of everything reads no byte of a warm file (a cold one it reads in, for the caller
# who asked a second tensor, as every tensor's reader does), so one single load is enough for the caller after
# one tensor (on 10,000 tensors each single load costs a third of a whole load); read, everything would be
# read, so a few tensors are read one by one first, unless the caller is reading the names it took in their
# order (see _MAPPED_WHOLE_UP_TO): its second such tensor loads all the rest.
_SINGLE_LOADS = {"mmap": 1, "read": 4}
# Mapped, a file of at most this many tensors is loaded whole at the first tensor asked for: its header is
# parsed either way, and a whole load of a warm file costs a few milliseconds more than a load of one tensor
# (a MoE shard of 1,265 tensors: 8 ms against 3), while a caller reading every tensor, the usual one, saves
# that single load. A cold file is read in whole then (the trade for such a caller: one read of the file at
# the disk's speed instead of faults all over it). Most checkpoints' shards hold fewer; a file of more keeps
# the single load first, unless its caller is reading the tensors in the order keys() or offset_keys() gave them:
# such a caller (transformers' and vLLM's loops over a shard) asks the first name of that list first, and every
# other name after it, so the single load would only be followed by the load of all the rest.
_MAPPED_WHOLE_UP_TO = 2048
_source_name = operator.attrgetter("source_name")  # a component's tensor name, in map(): thousands at once
# The characters a tensor-selection pattern (fnmatch) gives a meaning, quoted by a backslash.
_GLOB_SPECIAL = str.maketrans({c: "\\" + c for c in "\\*?["})

def _str_argument(value, name):
    if not isinstance(value, str):
        raise TypeError(f"argument '{name}': '{type(value).__name__}' object is not an instance of 'str'")
    return value


def parse_device(device):
    """The device as torch names it ("cpu", "cuda:0", "mps", 3), or a SafetensorError naming it."""
    if device is None:
        return "cpu"
    if isinstance(device, bool) or isinstance(device, float):
        raise SafetensorError(f"device {device} is invalid")
    if isinstance(device, int):
        if device < 0:
            raise SafetensorError(f"device {device} is invalid")
        return device
    if not isinstance(device, str):
        try:  # a torch.device
            device = str(device)
        except Exception:
            raise SafetensorError(f"device {device!r} is invalid") from None
    if device == "cpu":
        return "cpu"
    if device in ("mps", "mps:0"):
        return "mps"
    if device.startswith("mps:"):
        raise SafetensorError(f"device {device} is invalid: only mps or mps:0 is supported")
    kind, _, index = device.partition(":")
    if kind not in _DEVICE_KINDS or device.count(":") > 1:
        raise SafetensorError(f"device {device} is invalid")
    if not index:
        return f"{kind}:0"
    if not index.isdigit():
        raise ValueError(f"device {device} is invalid: invalid digit found in string {index!r}")
    return f"{kind}:{int(index)}"


class safe_open:
    """Opens a safetensors file lazily and returns its tensors as asked.

    filename: str or os.PathLike; framework: "pt" (also "torch", "pytorch")
    or "np" ("numpy"); device: where torch tensors go ("cpu", "cuda:0", an
    index; numpy: "cpu" only); backend: "mmap" (the default: the file is
    mapped copy-on-write, no byte read until used) or "pread" (every tensor
    read into memory when the first is asked for; also "read_file", and
    mmap=False)."""

    def __init__(self, filename, framework, device="cpu", *, backend="mmap", mmap=True, _header=True):
        if isinstance(filename, bytes) or not isinstance(filename, (str, os.PathLike)):
            raise TypeError(f"argument 'filename': '{type(filename).__name__}' object is not an instance of 'str'")
        fw = _FRAMEWORKS.get(_str_argument(framework, "framework"))
        if fw is None:
            raise SafetensorError(f"framework {framework} is invalid")
        self._device = parse_device(device)
        if _str_argument(backend, "backend") not in _BACKENDS:
            raise SafetensorError(f'backend "{backend}" is invalid (expected one of: "mmap", "pread")')
        self._strategy = _BACKENDS[backend] if mmap else "read"
        path = os.fspath(filename)
        if not os.path.exists(path):
            raise FileNotFoundError(f"No such file or directory: {path}")
        if os.path.isdir(path):
            raise IsADirectoryError(f"{path} is a folder, not a safetensors file")
        if fw not in _SERVED:
            raise SafetensorError(f"framework {framework} ({fw}) is not served by rootspan.safetensors, which "
                                  "gives numpy arrays (\"np\") and torch tensors (\"pt\")")
        if self._device != "cpu" and fw != "pytorch":
            raise SafetensorError(f"Device {self._device} is not supported for framework {fw}")
        self._framework = fw
        self._path = os.path.abspath(path)
        self._loads = []  # the Weights of every load made; closed with the handle
        self._by_name = {}  # tensor name -> its Component (None for an empty tensor), once loaded
        self._whole = False  # every tensor is loaded
        # tensor name -> the lease its tensors are made under, made at once for every tensor the whole load
        # does not hand out as a view below (another device, memory of its own: rootspan.weights.map_leases,
        # one library call, not one a tensor); a tensor's first export takes it over, and close() drops
        # those never asked for
        self._leases = {}
        # tensor name -> its bytes (a uint8 numpy array) in the one mapping of the file a load of all the rest
        # on the CPU hands out (rootspan.weights.map_file_views): every tensor of that name is a view of them
        self._views = {}
        # tensor name -> a torch tensor over its view above, all made at once (one pass, not one call a tensor)
        # by a get_tensor of the first name keys() or offset_keys() gave (the first of a loop over them, which
        # asks for every other name next) whose call loaded all the rest: the first get_tensor of a name hands
        # its tensor out, later ones make their own view; torch.is_inference_mode_enabled, and whether they
        # were made in the inference mode, to tell whether a get_tensor runs in the mode they were made in (else
        # it makes its own)
        self._ready = {}
        self._inference_mode = self._ready_in_inference_mode = None
        self._closed = False
        # the first two names with bytes keys() or offset_keys() gave: _MAPPED_WHOLE_UP_TO, _SINGLE_LOADS
        self._first_listed = self._second_listed = None
        self._lock = threading.Lock()
        self._tensors = self._metadata = None  # the header, read now unless _load_file reads it only if needed
        if _header:
            self._read_header()

    def _read_header(self):
        # the description's lists, then a tuple per tensor, thousands at once: one collector pass after both (see
        # _memory.gc_paused)
        with _memory.gc_paused():
            try:
                # _tensors: name -> (dtype code, shape, absolute offset, bytes), in file order
                self._metadata, self._tensors = safetensors_file_table(self._path)
            except _core_errors.Error as e:
                if e.name == "InvalidCheckpoint":
                    raise from_core(e) from e
                raise SafetensorError(f"Error while deserializing header: {e}") from e
        self._loaded_tensors = sum(1 for t in self._tensors.values() if t[3])  # the core loads no empty tensor

    # ---- the reference's methods ---------------------------------------------------------------

    def _open(self):
        if self._closed:
            raise SafetensorError("File is closed")

    def keys(self):
        """The tensor names, sorted."""
        self._open()
        return self._listed(sorted(self._tensors))

    def offset_keys(self):
        """The tensor names in the order of their bytes in the file."""
        self._open()
        return self._listed(list(self._tensors))

    def _listed(self, names):
        """names, the first two of them with bytes remembered (a loop over names asks for them first, or after
        empty tensors, which load nothing): see _MAPPED_WHOLE_UP_TO and _SINGLE_LOADS."""
        with_bytes = (n for n in names if self._tensors[n][3])
        self._first_listed, self._second_listed = next(with_bytes, None), next(with_bytes, None)
        return names

    def metadata(self):
        """The header's __metadata__ as a dict, or None when it has none."""
        self._open()
        return None if self._metadata is None else dict(self._metadata)

    def get_tensor(self, name):
        """The whole tensor: a writable numpy array or torch tensor sharing the loaded bytes."""
        # The usual case first, without the lock: a tensor made when the file was loaded whole, on the CPU, with
        # torch, in the inference mode this call is in. A close empties _ready before it does anything else, so
        # a tensor found here was taken before the close began (a dict's pop is one step under the GIL).
        ready = self._ready.pop(name, None) if isinstance(name, str) else None
        if ready is not None and self._inference_mode() == self._ready_in_inference_mode:
            return ready
        with self._lock:  # a close on another thread waits for this export
            view = self._views.get(name) if isinstance(name, str) else None
            if view is not None and self._framework == "pytorch":
                return _tensors.tensor_of_view(view, self._by_name[name], SafetensorError)
            loaded_whole_before = bool(self._views)
            with _memory.gc_paused():  # a load of all the rest, then their tensors: one collector pass after both
                code, shape, component = self._component(name)
                if name == self._first_listed and self._views and not loaded_whole_before and \
                        self._framework == "pytorch":  # this call loaded all the rest, for a loop over the names
                    ready, self._inference_mode, self._ready_in_inference_mode = \
                        _ready_tensors(self._views, self._by_name, name)
                    self._ready = ready  # last: a get_tensor without the lock reads the mode once it finds one
            dtype = _dtypes.BY_CODE[code].rootspan
            numpy = self._framework == "numpy"
            view = self._views.get(name)
            if view is not None:  # the device is the CPU
                if numpy:
                    return _tensors.shaped(view, dtype, shape)
                return _tensors.tensor_of_view(view, component, SafetensorError)
            if numpy:
                array = _tensors.to_numpy(component, dtype, shape)
            else:
                array = _tensors.to_torch(component, dtype, shape, SafetensorError)
            self._leases.pop(name, None)  # the array holds the lease now
        return array if numpy else _tensors.to_device(array, self._device, component)

    def get_tensors(self):
        """Every tensor, by name, in file order."""
        with _memory.gc_paused():  # a tensor per name, thousands at once: see _memory.gc_paused
            with self._lock:
                self._open()
                self._load_all()
            return {name: self.get_tensor(name) for name in self._tensors}

    def _load_file(self):
        """get_tensors for load_file, whose handle no one else sees: on the CPU with torch, the zero-copy
        tensors are views of one mapping of the file (rootspan.weights.map_file_views), which goes when the
        last of them goes. Not for a handle a caller keeps: that load is not the handle's (a later get_tensor
        or get_slice of a name would load it again, sharing no memory with these). A handle opened without its
        header (_header=False) loads first and reads the header only where the load cannot say everything
        alone: an empty tensor (which the core does not load: made from the header), another device, or an
        error, which the header read then words as the reference does."""
        if self._framework == "pytorch" and self._device == "cpu" and not self._by_name:
            # the load's components, then their tensors, then the load closed: one collector pass, after the
            # components are gone, over the tensors alone
            with _memory.gc_paused():
                found = self._load_in_file_order()
            if found is not None:
                return found
        if self._tensors is None:
            self._read_header()
        return self.get_tensors()

    def _load_in_file_order(self):
        """Every tensor, by name, in file order, from one load (rootspan.torch's in_file_order), the header
        read only for a file with empty tensors; None where the load failed or its tensors are not all in
        place (the header is then read, and the tensors loaded one handle's way). Called with the collector
        paused (_load_file)."""
        import torch
        from rootspan import torch as rootspan_torch
        try:
            weights = _contexts.host().load(self._path, provider="host", strategy=self._strategy,
                                            populate_when_cold=True)
        except _core_errors.Error:
            return None
        try:
            if not rootspan_torch.in_file_order_applies(weights, empty_tensors_apart=True):
                return None
            found = dict(rootspan_torch.in_file_order(weights, torch.device("cpu"), SafetensorError))
            if not weights.skipped:
                return found
            if self._tensors is None:  # the empty tensors are only in the header
                self._read_header()
            return {name: self._in_place(found, name, code, shape, nbytes)
                    for name, (code, shape, _, nbytes) in self._tensors.items()}
        finally:
            weights.close()

    def _in_place(self, found, name, code, shape, nbytes):
        """The tensor `name` of the header (code, shape, nbytes) from what in_file_order found, or, empty,
        made from the header; SafetensorError when the load and the header disagree."""
        if not nbytes:
            return _tensors.to_torch(None, _dtypes.BY_CODE[code].rootspan, shape, SafetensorError)
        tensor = found.get(name)  # its bytes, not its shape, are compared: torch packs some types (f4_x2)
        if tensor is None or tensor.numel() * tensor.element_size() != nbytes:
            raise self._changed(name, code, shape, nbytes)
        return tensor

    def _changed(self, name, code, shape, nbytes):
        return SafetensorError(f"{self._path} changed since it was opened: tensor {shown(name)} is no longer "
                               f"{code}{list(shape)} of {nbytes} bytes; open it again")

    def get_slice(self, name):
        """A view of one tensor that slicing (view[0:2, ...]) turns into a tensor of just those elements."""
        from rootspan.safetensors import _slicing  # here: a fresh process that never slices skips its import
        with self._lock:
            code, shape, component = self._component(name)
            view = self._views.get(name)
            lease = None if view is None else lease_of_view(view, component)
            return _slicing.PySafeSlice(self, name, code, shape, component, view, lease)

    def get_strided_slice(self, name, dim, intervals):
        """The tensor's intervals [(begin, end), ...] along dim, concatenated in the order given."""
        return self.get_slice(name)._intervals(dim, intervals)

    def __enter__(self):
        return self

    def __exit__(self, _exc_type, _exc_value, _traceback):
        self._close()

    def __del__(self):
        try:
            self._close()
        except Exception:
            pass

    # ---- loading -------------------------------------------------------------------------------

    def _close(self):
        lock = getattr(self, "_lock", None)
        if lock is None:  # the constructor failed
            return
        with lock:
            self._ready = {}  # first: get_tensor takes these without the lock
            self._closed = True
            loads, self._loads, self._by_name = self._loads, [], {}
            self._leases = {}  # the leases no tensor took: their roots can go back
            self._views = {}  # the file's mapping goes back once no tensor uses it
        for weights in loads:
            weights.close()  # roots nothing uses go now; the others when their last tensor goes

    def _component(self, name):
        """(code, shape, Component or None for an empty tensor); called holding self._lock."""
        self._open()
        entry = self._tensors.get(name) if isinstance(name, str) else None
        if entry is None:
            raise SafetensorError(f"File does not contain tensor {shown(name)}")
        if name not in self._by_name:
            if entry[3] == 0:  # nothing to load: the core makes no root for an empty tensor
                self._by_name[name] = None
            elif len(self._loads) >= self._single_loads(name) or not self._load(name):
                self._load_all()
        return entry[0], entry[1], self._by_name[name]

    def _single_loads(self, name):
        """How many tensors this handle loads one at a time before it loads all the rest at once, `name` the
        one asked for now."""
        if self._strategy == "mmap" and (len(self._tensors) <= _MAPPED_WHOLE_UP_TO or name == self._first_listed):
            return 0
        if name == self._second_listed and self._first_listed in self._by_name:  # a loop over the names taken
            return 0
        return _SINGLE_LOADS[self._strategy]

    def _load_all(self):
        """Loads every tensor not loaded yet (called holding self._lock)."""
        if not self._whole and any(n not in self._by_name for n, entry in self._tensors.items() if entry[3]):
            with _memory.gc_paused():  # its components, then their views: one collector pass after both
                self._load()
        self._whole = True

    def _load(self, name=None):
        """Loads one tensor (None: every one) through the core and keeps what was not loaded before: a tensor
        loaded twice keeps its first component, so that all of one tensor's arrays share memory. False when a
        load of one tensor did not bring it (its name, as a pattern, named another component): load them all.
        A load of every tensor maps a file that is mostly cold on a local disk and reads it in before it
        returns, many reads in flight (populate_when_cold, as rootspan's "auto" does): its caller reads every
        tensor, the usual one, and a cold mapping faulted in reads one readahead window at a time, waiting for
        each (in name order, as transformers and vLLM ask, not even in the file's order); a load of one tensor
        leaves its pages to fault in."""
        tensors = None if name is None else [name.translate(_GLOB_SPECIAL)]
        try:
            weights = _contexts.host().load(self._path, provider="host", strategy=self._strategy, tensors=tensors,
                                            populate_when_cold=name is None)
        except _core_errors.Error as e:
            if name is not None and e.name == "NotFound":
                return False
            if e.name == "InvalidCheckpoint":
                raise from_core(e) from e
            raise SafetensorError(f"Could not read {self._path}: {e}") from e
        components = weights._components
        if name is None and not self._by_name and self._keep_all(components):
            kept, others = components, ()  # the usual load: the first, of every tensor
        else:
            kept, others = self._keep_new(weights, name)
            if kept is None:
                return False
        self._loads.append(weights)
        for c in others:
            c._hand_over()  # loaded before (or not asked for): goes once nothing uses it
        if name is None:  # the whole file: every tensor's memory mapped in one call
            views = map_file_views(kept) if self._device == "cpu" else {}
            # (thousands: each pass in C, map over the positions, not a loop of Python)
            self._views.update(zip(map(_source_name, map(kept.__getitem__, views)), views.values()))
            own = [c for at, c in enumerate(kept) if at not in views] if len(views) < len(kept) else []
            self._leases.update((c.source_name, lease) for c, lease in zip(own, map_leases(own)) if lease)
        return True

    def _keep_all(self, components):
        """_load's check of a handle's first load, of every tensor, made in bulk (a few list operations, not a
        loop of Python over thousands of components): True, every component kept, where each is a tensor of
        the header, of its shape and size, and each tensor with bytes is one of them; else False, nothing kept
        (_keep_new then says what differs)."""
        names = list(map(_source_name, components))
        entries = list(map(self._tensors.get, names))
        by_name = dict(zip(names, components))
        if len(by_name) != len(components) or len(by_name) != self._loaded_tensors or None in entries or \
                [c.nbytes for c in components] != [entry[3] for entry in entries] or \
                [c.shape for c in components] != [entry[1] for entry in entries]:
            return False
        self._by_name = by_name
        return True

    def _keep_new(self, weights, name):
        """(kept, others) of _load's load of `name` (None: every tensor), in one pass over its components: each
        asked for must be the header's tensor, and is kept unless loaded before; then every tensor asked for with
        bytes must have been among them. (None, None) where a load of one tensor did not bring it."""
        tensors, by_name = self._tensors, self._by_name
        kept, others, asked = [], [], 0  # the components kept; the others; how many were asked for
        for c in weights._components:
            n = c.source_name
            entry = tensors.get(n) if name is None or n == name else None
            if entry is None:
                others.append(c)
                continue
            if c.nbytes != entry[3] or c.shape != entry[1]:
                self._forget(kept, weights)
                raise self._changed(n, entry[0], entry[1], entry[3])
            asked += 1
            if n in by_name:
                others.append(c)
            else:
                by_name[n] = c
                kept.append(c)
        if asked != (self._loaded_tensors if name is None else 1):
            found = {c.source_name for c in weights._components}
            self._forget(kept, weights)
            if name is not None:
                return None, None
            missing = next(n for n, entry in tensors.items() if entry[3] and n not in found)
            code, shape, _, nbytes = tensors[missing]
            raise self._changed(missing, code, shape, nbytes)
        return kept, others

    def _forget(self, kept, weights):
        """Undoes _load's keeping of `kept` and closes the load they came from: it failed its checks."""
        for c in kept:
            del self._by_name[c.source_name]
        weights.close()


def _ready_tensors(views, by_name, asked):
    """(called with the collector paused: thousands of tensors, see _memory.gc_paused)
    ({name: torch tensor} over each of views (tensor name -> its bytes in the file's mapping) but `asked`'s,
    torch.is_inference_mode_enabled, whether they were made in the inference mode); a tensor torch cannot make
    is left out, for its own get_tensor to say why."""
    import torch
    ready = {}
    for name, view in views.items():
        if name != asked:
            try:
                ready[name] = _tensors.tensor_of_view(view, by_name[name], SafetensorError)
            except SafetensorError:
                pass
    return ready, torch.is_inference_mode_enabled, torch.is_inference_mode_enabled()


def _safe_open_handle(f, framework, device="cpu", *, backend="mmap"):
    """safe_open over an open file object (only its name is used: the file is opened again by name)."""
    f.fileno  # noqa: B018 (the reference requires a real file: AttributeError otherwise)
    name = f.name
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError(f"the file object's name must be str or os.PathLike, got {type(name).__name__} {name!r}")
    return safe_open(name, framework, device, backend=backend)
