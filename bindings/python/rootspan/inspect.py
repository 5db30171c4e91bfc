"""Checkpoints described without loading them: what `rootspan inspect` prints.

inspect(path) validates a checkpoint (headers only) and returns its JSON
description as a dict (docs/cli.md); describe_safetensors(data) does the
same for one safetensors file held in memory, through the same rules.
hash_checkpoint and sign (rootspan.sign) make what a verified or signed
load checks against: a digest manifest, a model signature.
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


def sign(path, private_key, *, certificate=None, certificate_chain=None, shards=False, shard_size=None,
         allow_symlinks=False, ignore=(), signature_path=None, revision=None):
    """An OpenSSF model signature of the model folder at path (what `rootspan sign` writes): the SHA-256 of every
    file in it, at any depth (with shards, of every shard_size bytes of each: None is 1,000,000,000, the
    reference signer's), signed with private_key (PEM, ECDSA P-256, P-384 or P-521) into a Sigstore bundle,
    returned as its JSON text. certificate: the key's PEM certificate, with certificate_chain (a PEM file or a
    list of them) above it, for a verifier trusting the chain's root; None: the bundle names the public key.
    allow_symlinks: follow links (a Hugging Face cache snapshot) instead of refusing them; ignore: paths
    relative to the folder to leave out; signature_path: where the caller will write the bundle (left out when
    inside the folder); revision: the snapshot of a cache repository folder (None: the one refs/main names).
    Load it with Context.load(..., signature=, public_key= or certificate_chain=)."""
    from .root import _check_bool, _check_int
    from .weights import _path, path_list
    path_c = _path(path, "path")
    options = _abi.sized(_abi.SignOptions)
    options.private_key_path = key_c = _path(private_key, "private_key")
    certificate_c = None if certificate is None else _path(certificate, "certificate")
    chain = None if certificate_chain is None else path_list(certificate_chain, "certificate_chain")
    if chain is not None and certificate_c is None:
        raise ValueError("certificate_chain goes above the key's own certificate: certificate= is missing")
    _check_bool(shards, "shards")
    _check_bool(allow_symlinks, "allow_symlinks")
    if shard_size is not None:
        if not shards:
            raise ValueError(f"shard_size={shard_size!r} applies to shards=True; got shards=False")
        _check_int(shard_size, "shard_size", minimum=1)
    if isinstance(ignore, (str, bytes, os.PathLike)):
        raise TypeError(f"ignore must be a list of paths, not a single {type(ignore).__name__} {ignore!r}")
    if not isinstance(ignore, (list, tuple)):
        raise TypeError(f"ignore must be a list of paths (str or os.PathLike), got {type(ignore).__name__}")
    ignored = path_list(ignore, "ignore") if ignore else None
    signature_c = None if signature_path is None else _path(signature_path, "signature_path")
    if revision is not None and not isinstance(revision, str):
        raise TypeError(f"revision must be a branch, tag or commit (str), got {type(revision).__name__}")
    options.certificate_path = certificate_c
    if chain is not None:
        options.certificate_chain_paths = ctypes.cast(chain[0], ctypes.POINTER(ctypes.c_char_p))
        options.certificate_chain_count = chain[1]
    options.shards = 1 if shards else 0
    options.shard_size = shard_size or 0
    options.allow_symlinks = 1 if allow_symlinks else 0
    if ignored is not None:
        options.ignore_paths = ctypes.cast(ignored[0], ctypes.POINTER(ctypes.c_char_p))
        options.ignore_path_count = ignored[1]
    options.signature_path = signature_c
    options.revision = None if revision is None else _abi.c_text(revision, "revision")
    keep = (key_c, certificate_c, chain, ignored, signature_c)  # ctypes holds only the addresses
    lib = _library.get()
    out = ctypes.c_void_p()
    errors.check(lib, lib.rootspan_model_sign, path_c, ctypes.byref(options), ctypes.byref(out))
    del keep
    try:
        return ctypes.string_at(out.value).decode("utf-8")
    finally:
        lib.rootspan_string_free(out.value)


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
