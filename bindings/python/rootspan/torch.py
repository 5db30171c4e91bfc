"""rootspan for torch: checkpoints as tensors, for models and for engines.

    import rootspan.torch
    state = rootspan.torch.load("model/")                 # {name: tensor}, any location rootspan reads
    model.load_state_dict(state, assign=True)             # the model uses the loaded memory itself
    for name, tensor in rootspan.torch.iter_tensors("model/"):   # an engine's weight iterator
        ...

    shard = rootspan.torch.load_shard("model/", dist.get_rank(), dist.get_world_size(),
                                      split={"*.q_proj.weight": 0, "*.o_proj.weight": 1})
    mesh = torch.distributed.device_mesh.init_device_mesh("cpu", (world_size,))
    params = rootspan.torch.load_dtensors("model/", mesh, {"*.q_proj.weight": Shard(0), "*.o_proj.weight": Shard(1)})

Tensors are zero-copy views of copy-on-write mappings on the host (writable;
the files never change), moved to `device` when it is not the CPU. For
tensor parallelism every rank computes the same read plan from (checkpoint,
schema, split, rank, world_size) and reads only its own bytes; the engine's
process group does any collective. Needs torch (imported here, not by
`import rootspan`).
"""
import operator

import torch
import torch.utils.dlpack

from . import _contexts, _tensors
from .weights import map_file_views, map_leases
# What a type this torch lacks raises, as it always has here: the drop-in's public error class.
from .safetensors import SafetensorError as _TypeRefused

__all__ = ["load", "iter_tensors", "load_shard", "load_shard_with_stats", "load_dtensors", "load_dtensors_with_stats",
           "tensor_of"]


def iter_tensors(path, device="cpu", tensors=None, revision=None, strategy=None, *, read_only=False, verify=False,
                 digests=None, signature=None, public_key=None, certificate_chain=None, ignore_unsigned_files=False):
    """(name, tensor) for each tensor of a checkpoint, in file order (shard by shard, by offset), the names
    the checkpoint's own: the shape vLLM's and SGLang's weight iterators consume.

    path: any location rootspan reads (a .safetensors or .gguf file, a folder, an index file, a Hugging Face
    cache repository folder at refs/main or at revision, a split GGUF set). tensors: shell-style patterns;
    only the tensors one matches. strategy: "auto" (None: chosen from the file system and the page cache),
    "mmap", "read" or "direct". A tensor with memory of its own goes back as soon as the consumer drops it
    (a tensor moved to a device drops its host copy at once); zero-copy CPU tensors are views of one mapping
    per file, which goes when the last tensor of that file goes; what was never asked for goes when the
    iterator ends or is dropped. A GGUF tensor of a quantized type is its raw blocks as uint8 of shape
    grid + (bytes_per_block,). verify: hash every file while it is read and raise
    DigestMismatchError before the first tensor unless each is the published one (a Hugging Face cache
    names its blobs by their SHA-256); digests: a digest manifest to check against instead. signature,
    public_key, certificate_chain, ignore_unsigned_files: a model signature to check, as Context.load's: a bad
    signature or a file missing or unsigned raises SignatureInvalidError, a changed file DigestMismatchError,
    before the first tensor."""
    from .inspect import inspect
    target = torch.device(device)  # raises for a device torch does not know
    weights = _contexts.host().load(path, provider="host", strategy=strategy or "auto", tensors=tensors,
                                         revision=revision, read_only=read_only, verify=verify, digests=digests,
                                         signature=signature, public_key=public_key,
                                         certificate_chain=certificate_chain,
                                         ignore_unsigned_files=ignore_unsigned_files)
    try:
        if in_file_order_applies(weights):  # no describing the checkpoint a second time (inspect: ~25 µs a tensor)
            yield from in_file_order(weights, target)
            return
        # map, not a loop: no local of this frame holds a tensor while it is suspended (in_file_order says why)
        yield from map(_named, _selected_tensors(weights, inspect(path, revision)["tensors"], tensors, target))
    finally:
        weights.close()


def load(path, device="cpu", tensors=None, revision=None, strategy=None, *, read_only=False, verify=False,
         digests=None, signature=None, public_key=None, certificate_chain=None, ignore_unsigned_files=False):
    """{name: tensor} of every tensor of a checkpoint (iter_tensors' arguments), in file order: for
    model.load_state_dict(state, assign=True), which keeps the loaded memory instead of copying it."""
    from ._memory import gc_paused
    with gc_paused():  # a tensor per name, thousands at once: see rootspan._memory.gc_paused
        return dict(iter_tensors(path, device, tensors, revision, strategy, read_only=read_only, verify=verify,
                                 digests=digests, signature=signature, public_key=public_key,
                                 certificate_chain=certificate_chain, ignore_unsigned_files=ignore_unsigned_files))


def load_shard(path, rank, world_size, split=None, schema=None, device="cpu", provider="host", strategy="read", *,
               with_stats=False):
    """This rank's slice of every component of a checkpoint, as {component id: torch.Tensor}.

    split maps component id patterns (shell-style globs) to the dimension to
    split, or -1 to replicate; the first matching pattern (in dict order)
    wins, and components no pattern matches are replicated. An uneven split
    follows torch.tensor_split: the first n % world_size ranks take one more.
    A block-quantized component (from a schema) is a uint8 tensor of shape
    block grid + (bytes_per_block,), split on whole blocks only.

    With strategy "read" (the default) the slices are read straight into
    writable memory that the tensors then use without a copy. With "mmap",
    file regions that can be used in place are mapped copy-on-write: the
    tensors use them in place, and a write never reaches the file. device:
    where the tensors go ("cpu", or any torch device they are moved to).
    with_stats=True returns (tensors, the bytes this rank read from the checkpoint's files)."""
    tensors, bytes_read, _ = _load(path, rank, world_size, split, schema, device, provider, strategy)
    return (tensors, bytes_read) if with_stats else tensors


def load_shard_with_stats(path, rank, world_size, split=None, schema=None, device="cpu", provider="host",
                          strategy="read"):
    """load_shard(..., with_stats=True), by the name earlier releases gave it."""
    return load_shard(path, rank, world_size, split, schema, device, provider, strategy, with_stats=True)


def load_dtensors(path, device_mesh, plan, schema=None, tensors=None, revision=None, strategy="read", *,
                  with_stats=False):
    """This rank's slice of every component as torch DTensors on a one-dimensional device mesh:
    {name: DTensor}, names the checkpoint's own (component ids with a schema).

    plan maps component id patterns (shell-style globs, the first match in dict order wins) to a placement:
    Shard(dim), or Replicate(); a component no pattern matches is replicated. Each rank reads only its slice,
    shared as DTensor's Shard shares an uneven dimension (each rank ceil(n / world), the last what is left),
    so DTensor.full_tensor() is the whole tensor. Local tensors live on the mesh's device type. A
    block-quantized component (from a schema) is uint8 blocks, sharded on whole blocks only. Needs torch
    with torch.distributed.tensor (2.4 or later). with_stats=True returns (dtensors, the bytes this rank read
    from the checkpoint's files)."""
    try:
        from torch.distributed.tensor import DTensor, Replicate, Shard
    except ImportError as missing:
        raise ImportError(f"load_dtensors needs torch.distributed.tensor (torch 2.4 or later); this is torch "
                          f"{torch.__version__}") from missing
    from torch.distributed.device_mesh import DeviceMesh
    from .inspect import read_plan
    if not isinstance(device_mesh, DeviceMesh):
        raise TypeError(f"device_mesh must be a torch.distributed.device_mesh.DeviceMesh, got "
                        f"{type(device_mesh).__name__}")
    if device_mesh.ndim != 1:
        raise ValueError(f"load_dtensors takes a one-dimensional device mesh, got one of shape "
                         f"{tuple(device_mesh.shape)}")
    if not isinstance(plan, dict):
        raise TypeError(f"plan must be a dict of component id pattern -> Shard(dim) or Replicate(), got "
                        f"{type(plan).__name__}")
    split = {}
    for pattern, placement in plan.items():
        if isinstance(placement, Shard) and placement.dim >= 0:
            split[pattern] = placement.dim
        elif isinstance(placement, Replicate):
            split[pattern] = -1
        else:
            raise TypeError(f"plan[{pattern!r}] must be Shard(dim) with dim >= 0, or Replicate(); got {placement!r}")
    rank, world_size = device_mesh.get_local_rank(), device_mesh.size()
    chosen = read_plan(path, rank, world_size, split, schema, tensors, revision, split_convention="chunk")
    local, bytes_read, weights_names = _load(path, rank, world_size, split, schema, "cpu", "host", strategy,
                                             tensors=tensors, revision=revision, split_convention="chunk",
                                             by_source_name=schema is None)
    dtensors = {}
    for component, name in zip(chosen["components"], weights_names):
        tensor = local[name]
        full_shape = list(component["full_dimensions"]) + list(tensor.shape[len(component["dimensions"]):])
        dim = component["split_dimension"]
        placement = Replicate() if dim < 0 else Shard(dim)
        stride = [1] * len(full_shape)
        for d in range(len(full_shape) - 2, -1, -1):
            stride[d] = stride[d + 1] * full_shape[d + 1]
        if device_mesh.device_type != "cpu":
            tensor = tensor.to(device_mesh.device_type)
        dtensors[name] = DTensor.from_local(tensor, device_mesh, [placement], run_check=False,
                                            shape=torch.Size(full_shape), stride=tuple(stride))
    return (dtensors, bytes_read) if with_stats else dtensors


def load_dtensors_with_stats(path, device_mesh, plan, schema=None, tensors=None, revision=None, strategy="read"):
    """load_dtensors(..., with_stats=True), by the name earlier releases gave it."""
    return load_dtensors(path, device_mesh, plan, schema, tensors, revision, strategy, with_stats=True)


def in_file_order_applies(weights, empty_tensors_apart=False):
    """Every tensor of the load is a component of a safetensors checkpoint, so in_file_order can hand them all
    over without describing the checkpoint again; an empty tensor (which the core leaves out) only where the
    caller makes those apart (empty_tensors_apart: the drop-in, from its header)."""
    return (empty_tensors_apart or not weights._skipped) and all(c.gguf_type is None and c.source_file is not None
                                                                 for c in weights._components)


_file_order = operator.attrgetter("source_file", "source_offset")  # a component's place in file order


def in_file_order(weights, target, error=_TypeRefused):
    """(the checkpoint's name, tensor on target) for every component of weights (in_file_order_applies), in
    file order: shard by shard (the shards in name order, as the core orders an index's files), by offset.
    On the CPU the zero-copy tensors are views of one mapping per file (map_file_views); the others, and
    all of them for a device, each hold a lease of their own, every lease mapped in one call, and go back
    as soon as the consumer drops them. The caller closes weights. rootspan.safetensors' load_file uses it
    too."""
    ordered = sorted(weights._components, key=_file_order)
    views = map_file_views(ordered) if target.type == "cpu" else {}
    own = [at for at in range(len(ordered)) if at not in views]
    # each handed over: back once the consumer drops its tensor
    leases = dict(zip(own, map_leases([ordered[at] for at in own], hand_over=True)))
    on_cpu = target.type == "cpu"
    # Each tensor is made in the yield itself: no local of this frame holds it (nor its view or lease) while
    # the frame is suspended, so a tensor the consumer drops goes back at once.
    for at, component in enumerate(ordered):
        if at in views:  # its file's memory goes back when the file's last tensor goes
            yield component.source_name, _tensors.tensor_of_view(views.pop(at), component, error)
        else:
            yield component.source_name, _handed_tensor(component, leases.pop(at, None), on_cpu, target, error)


def _handed_tensor(component, lease, on_cpu, target, error):
    """The tensor of a component that is not a view of its file's mapping, over lease, its own lease from
    map_leases (None: made here, and the component handed over after it)."""
    tensor = _tensors.tensor_of(component, error, lease)  # the tensor holds its lease now
    if not on_cpu:
        tensor = _tensors.to_device(tensor, target, component)
    if lease is None:  # not mapped (nor handed over) by map_leases
        component._hand_over()  # back as soon as the consumer drops the tensor
    return tensor


def _named(selected):
    """(name, tensor) of an (entry, tensor) of _selected_tensors."""
    return selected[0]["name"], selected[1]


def _selected_tensors(weights, entries, patterns, device):
    """(entry, tensor) for each of `entries` (inspect's tensors, in file order) the load selected, in that
    order: a loaded component's tensor, handed to the consumer (its root goes back as soon as the consumer
    drops the tensor), or an empty tensor, which the core does not load, where `patterns` (None: all)
    select it. rootspan.vllm feeds the model from it too."""
    import fnmatch
    components = list(weights.values())
    by_name = {c.source_name: at for at, c in enumerate(components)}
    # every tensor's memory mapped in one call, each handed over: back as soon as the consumer drops its tensor
    leases = dict(enumerate(map_leases(components, hand_over=True)))
    on_cpu = device.type == "cpu"
    for entry in entries:
        name = entry["name"]
        at = by_name.get(name)
        if at is not None:  # made in the yield (in_file_order says why); the tensor holds its lease now
            yield entry, _handed_tensor(components[at], leases.pop(at, None), on_cpu, device, _TypeRefused)
        elif entry.get("bytes") == 0 and (patterns is None or any(fnmatch.fnmatchcase(name, p) for p in patterns)):
            yield entry, _tensors.to_device(_tensors.empty_tensor(entry, _TypeRefused), device)


def tensor_of(component):
    """A CPU tensor over a loaded component's memory: no copy unless the component is read-only (a legacy
    DLPack consumer such as torch 1.13 has no read-only mark, so it gets a writable copy). A type every
    supported torch imports by DLPack code goes to torch in its own type (rootspan/_tensors.py); the others
    (bool, the 8-bit floats in torch 1.13) go as the signed integer of their width, or as uint8 bytes, and are
    viewed as the element type, so that they still load. A block-quantized component is uint8 of shape
    grid + (bytes_per_block,)."""
    return _tensors.tensor_of(component, _TypeRefused)


def _load(path, rank, world_size, split, schema, device, provider, strategy, tensors=None, revision=None,
          split_convention="tensor_split", by_source_name=False):
    """({name: tensor}, bytes read, names in component order) of one rank's slice; names are component ids,
    or the checkpoint's own tensor names with by_source_name."""
    if isinstance(world_size, int) and not isinstance(world_size, bool) and world_size < 1:
        raise ValueError(f"world_size must be at least 1, got {world_size}")
    target = torch.device(device)  # raises for a device torch does not know
    weights = _contexts.for_provider(provider).load(path, schema=schema, provider=provider, strategy=strategy,
                                                    rank=rank, world_size=world_size, split=split, tensors=tensors,
                                                    revision=revision, split_convention=split_convention)
    out = {}
    names = []
    try:
        for cid, component in weights.items():
            tensor = tensor_of(component)
            name = component.source_name if by_source_name else cid
            names.append(name)
            out[name] = _tensors.to_device(tensor, target, component)
    except BaseException:
        out.clear()
        raise
    bytes_read = weights.bytes_read
    # The weights go with this frame; memory the tensors still use is released when the last of them goes
    # (and a context of its own, for a provider other than the host's, with it).
    return out, bytes_read, names
