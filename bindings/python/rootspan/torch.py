"""rootspan for torch: checkpoints as tensors, for models and for engines.

    import rootspan.torch
    state = rootspan.torch.load("model/")                 # {name: tensor}, any location rootspan reads
    model.load_state_dict(state, assign=True)             # the model uses the loaded memory itself
    for name, tensor in rootspan.torch.iter_tensors("model/"):   # an engine's weight iterator
        ...

    shard = rootspan.torch.load_shard("model/", dist.get_rank(), dist.get_world_size(),
                                      split={"*.q_proj.weight": 0, "*.o_proj.weight": 1})

Tensors are zero-copy views of copy-on-write mappings on the host (writable;
the files never change), moved to `device` when it is not the CPU. For
tensor parallelism every rank computes the same read plan from (checkpoint,
schema, split, rank, world_size) and reads only its own bytes; the engine's
process group does any collective. Needs torch (imported here, not by
`import rootspan`).
"""
import torch
import torch.utils.dlpack

from .context import Context

__all__ = ["load", "iter_tensors", "load_shard", "load_shard_with_stats", "tensor_of"]


def iter_tensors(path, device="cpu", tensors=None, revision=None, strategy=None, *, read_only=False):
    """(name, tensor) for each tensor of a checkpoint, in file order (shard by shard, by offset), the names
    the checkpoint's own: the shape vLLM's and SGLang's weight iterators consume.

    path: any location rootspan reads (a .safetensors or .gguf file, a folder, an index file, a Hugging Face
    cache repository folder at refs/main or at revision, a split GGUF set). tensors: shell-style patterns;
    only the tensors one matches. strategy: "mmap" (None: the default) or "read". Each tensor's memory goes
    back as soon as the consumer drops it (a tensor moved to a device drops its host copy at once); what was
    never asked for goes when the iterator ends or is dropped. A GGUF tensor of a quantized type is its raw
    blocks as uint8 of shape grid + (bytes_per_block,)."""
    import fnmatch
    from .inspect import inspect
    from .safetensors import _frameworks
    target = torch.device(device)  # raises for a device torch does not know
    entries = inspect(path, revision)["tensors"]
    weights = Context(manifests=[]).load(path, provider="host", strategy=strategy or "mmap", tensors=tensors,
                                         revision=revision, read_only=read_only)
    try:
        by_name = {c.source_name: c for c in weights.values()}
        for entry in entries:
            name = entry["name"]
            component = by_name.get(name)
            if component is not None:
                tensor = tensor_of(component)
                weights._wstate.give_up(component.index)  # back as soon as the consumer drops the tensor
            elif entry.get("bytes") == 0 and (tensors is None or any(fnmatch.fnmatchcase(name, p) for p in tensors)):
                tensor = _frameworks.to_torch(None, entry["dtype"], entry["shape"])  # empty: the core makes no root
            else:
                continue  # not selected
            yield name, tensor if target.type == "cpu" else tensor.to(target)
    finally:
        weights.close()


def load(path, device="cpu", tensors=None, revision=None, strategy=None, *, read_only=False):
    """{name: tensor} of every tensor of a checkpoint (iter_tensors' arguments), in file order: for
    model.load_state_dict(state, assign=True), which keeps the loaded memory instead of copying it."""
    return dict(iter_tensors(path, device, tensors, revision, strategy, read_only=read_only))


def load_shard(path, rank, world_size, split=None, schema=None, device="cpu", provider="host", strategy="read"):
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
    load_shard_with_stats also returns the bytes this rank read."""
    tensors, _ = _load(path, rank, world_size, split, schema, device, provider, strategy)
    return tensors


def load_shard_with_stats(path, rank, world_size, split=None, schema=None, device="cpu", provider="host",
                          strategy="read"):
    """load_shard, and the bytes this rank read from the checkpoint's files."""
    return _load(path, rank, world_size, split, schema, device, provider, strategy)


def tensor_of(component):
    """A CPU tensor over a loaded component's memory: no copy unless the component is read-only (a legacy
    DLPack consumer such as torch 1.13 has no read-only mark, so it gets a writable copy). The bytes go to
    torch as uint8 and are viewed as the element type, so that types torch cannot import by DLPack code
    (bool, the 8-bit floats in torch 1.13) still load. A block-quantized component is uint8 of shape
    grid + (bytes_per_block,)."""
    from .safetensors import _dtypes, _frameworks
    code = _dtypes.BY_ROOTSPAN[component.dtype].code  # the format's name ("C64" for rootspan's C32)
    shape = component.shape
    if component.encoding == "block_quantized":
        shape = shape + (component.bytes_per_block,)
    return _frameworks.to_torch(component, code, shape)


def _load(path, rank, world_size, split, schema, device, provider, strategy):
    if isinstance(world_size, int) and not isinstance(world_size, bool) and world_size < 1:
        raise ValueError(f"world_size must be at least 1, got {world_size}")
    target = torch.device(device)  # raises for a device torch does not know
    context = Context()
    weights = context.load(path, schema=schema, provider=provider, strategy=strategy, rank=rank,
                           world_size=world_size, split=split)
    tensors = {}
    try:
        for cid, component in weights.items():
            tensor = tensor_of(component)
            tensors[cid] = tensor if target.type == "cpu" else tensor.to(target)
    except BaseException:
        tensors.clear()
        raise
    bytes_read = weights.bytes_read
    # Weights and context go with this frame; memory the tensors still use is
    # released (and the context destroyed) when the last of them goes.
    return tensors, bytes_read
