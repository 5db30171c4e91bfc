"""Checkpoints described without loading them: what `rootspan inspect` prints.

inspect(path) validates a checkpoint (headers only) and returns its JSON
description as a dict (docs/cli.md); describe_safetensors(data) does the
same for one safetensors file held in memory, through the same rules.
"""
import ctypes
import json
import os

from . import _abi, _library, _memory, errors


def _json(lib, fn, *args):
    out = ctypes.c_void_p()
    errors.check(lib, fn, *args, ctypes.byref(out))
    try:
        with _memory.gc_paused():  # a document of thousands of tensors is as many lists: no collector passes
            return json.loads(ctypes.string_at(out.value).decode("utf-8"))
    finally:
        lib.rootspan_string_free(out.value)


def inspect(path, revision=None):
    """The description of the checkpoint at path (a file, folder, index file or cache repository; revision:
    the branch, tag or commit of a cache repository, None: the one refs/main names)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be str or os.PathLike, got {type(path).__name__} {path!r}")
    if revision is not None and not isinstance(revision, str):
        raise TypeError(f"revision must be a branch, tag or commit (str), got {type(revision).__name__}")
    lib = _library.get()
    options = _abi.sized(_abi.InspectOptions)
    options.revision = None if revision is None else _abi.c_text(revision, "revision")
    return _json(lib, lib.rootspan_checkpoint_inspect_with_options, _abi.c_path(path, "path"), ctypes.byref(options))


def read_plan(path, rank, world_size, split=None, schema=None, tensors=None, revision=None,
              split_convention="tensor_split"):
    """The read plan of one rank of a tensor-parallel load (what `rootspan plan --json` prints), made from the
    headers alone: {"rank", "world_size", "bytes", "split_convention", "rules", "components": [{"id", "rule",
    "split_dimension", "full_dimensions", "dimensions", "begin", "count", "bytes", "reads": [...]}]}. The
    arguments are Context.load's; the plan is the one that load would follow, and fails as it would."""
    from .weights import _path, checkpoint_options
    path_c = _path(path, "path")
    if world_size == 0:
        raise ValueError("a read plan needs a world_size of at least 1")
    options = checkpoint_options(schema, tensors, revision, rank, world_size, split, split_convention)
    lib = _library.get()
    return _json(lib, lib.rootspan_checkpoint_read_plan, path_c, ctypes.byref(options))


def hash_checkpoint(path, per_tensor=False, world_size=0, split=None, schema=None, tensors=None, revision=None,
                    split_convention="tensor_split"):
    """A digest manifest of a checkpoint (what `rootspan hash` writes), as a dict: the SHA-256 and size of every
    file, and with per_tensor of every component's bytes as each rank of world_size reads them (0: each
    component whole). Save it as JSON and pass its path as Context.load(..., digests=path)."""
    from .root import _check_bool
    from .weights import _path, checkpoint_options
    path_c = _path(path, "path")
    _check_bool(per_tensor, "per_tensor")
    options = checkpoint_options(schema, tensors, revision, 0, world_size, split, split_convention)
    lib = _library.get()
    return _json(lib, lib.rootspan_checkpoint_hash, path_c, ctypes.byref(options), 1 if per_tensor else 0)


def describe_safetensors_file(path):
    """The description of one safetensors file: {"format", "bytes", "header_bytes", "metadata" (None when the
    header has none), "tensors": [[name, dtype, shape, offset, bytes], ...]} in file order."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be str or os.PathLike, got {type(path).__name__} {path!r}")
    lib = _library.get()
    return _json(lib, lib.rootspan_safetensors_describe_file, _abi.c_path(path, "path"))


def describe_safetensors(data, name="<memory>"):
    """describe_safetensors_file for a file held in a bytes-like object, offsets into data. Nothing is
    copied."""
    view = memoryview(data).cast("B")
    lib = _library.get()
    if view.readonly:
        keep = ctypes.c_char_p(data if isinstance(data, bytes) else view.tobytes())  # bytes: no copy
        address = ctypes.cast(keep, ctypes.c_void_p)
    else:
        keep = (ctypes.c_char * view.nbytes).from_buffer(view) if view.nbytes else None
        address = ctypes.cast(keep, ctypes.c_void_p) if keep is not None else None
    return _json(lib, lib.rootspan_safetensors_describe, address, view.nbytes, str(name).encode("utf-8", "replace"))
