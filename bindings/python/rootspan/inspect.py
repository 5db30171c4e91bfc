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

from . import _abi, _arguments, _compiled, _library
from ._arguments import check_bool, check_int, optional_path, path_list
from ._checkpoint import call_json, call_text, checkpoint_options

_STR_OR_PATHLIKE = (str, os.PathLike)


def _path_argument(path):
    """The path of a header-only call: str or os.PathLike (not bytes), as C bytes."""
    return _arguments.path(path, "path", kinds=_STR_OR_PATHLIKE, must="be str or os.PathLike")


def inspect(path, revision=None):
    """The description of the checkpoint at path (a file, folder, index file or cache repository; revision:
    the branch, tag or commit of a cache repository, None: the one refs/main names)."""
    path_c = _path_argument(path)
    options = _abi.sized(_abi.InspectOptions)
    options.revision = _arguments.revision(revision)
    lib = _library.get()
    return call_json(lib, lib.rootspan_checkpoint_inspect_with_options, path_c, ctypes.byref(options))


def read_plan(path, rank, world_size, split=None, schema=None, tensors=None, revision=None,
              split_convention="tensor_split"):
    """The read plan of one rank of a tensor-parallel load (what `rootspan plan --json` prints), made from the
    headers alone: {"rank", "world_size", "bytes", "split_convention", "rules", "components": [{"id", "rule",
    "split_dimension", "full_dimensions", "dimensions", "begin", "count", "bytes", "reads": [...]}]}. The
    arguments are Context.load's; the plan is the one that load would follow, and fails as it would."""
    path_c = _arguments.path(path, "path")
    if world_size == 0:
        raise ValueError("a read plan needs a world_size of at least 1")
    options = checkpoint_options(schema, tensors, revision, rank, world_size, split, split_convention)
    lib = _library.get()
    return call_json(lib, lib.rootspan_checkpoint_read_plan, path_c, ctypes.byref(options))


def hash_checkpoint(path, per_tensor=False, world_size=0, split=None, schema=None, tensors=None, revision=None,
                    split_convention="tensor_split"):
    """A digest manifest of a checkpoint (what `rootspan hash` writes), as a dict: the SHA-256 and size of every
    file, and with per_tensor of every component's bytes as each rank of world_size reads them (0: each
    component whole). Save it as JSON and pass its path as Context.load(..., digests=path)."""
    path_c = _arguments.path(path, "path")
    check_bool(per_tensor, "per_tensor")
    options = checkpoint_options(schema, tensors, revision, 0, world_size, split, split_convention)
    lib = _library.get()
    return call_json(lib, lib.rootspan_checkpoint_hash, path_c, ctypes.byref(options), 1 if per_tensor else 0)


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
    path_c = _arguments.path(path, "path")
    options = _abi.sized(_abi.SignOptions)
    options.private_key_path = key_c = _arguments.path(private_key, "private_key")
    certificate_c = optional_path(certificate, "certificate")
    chain = None if certificate_chain is None else path_list(certificate_chain, "certificate_chain")
    if chain is not None and certificate_c is None:
        raise ValueError("certificate_chain goes above the key's own certificate: certificate= is missing")
    check_bool(shards, "shards")
    check_bool(allow_symlinks, "allow_symlinks")
    if shard_size is not None:
        if not shards:
            raise ValueError(f"shard_size={shard_size!r} applies to shards=True; got shards=False")
        check_int(shard_size, "shard_size", minimum=1)
    if isinstance(ignore, (str, bytes, os.PathLike)):
        raise TypeError(f"ignore must be a list of paths, not a single {type(ignore).__name__} {ignore!r}")
    if not isinstance(ignore, (list, tuple)):
        raise TypeError(f"ignore must be a list of paths (str or os.PathLike), got {type(ignore).__name__}")
    ignored = path_list(ignore, "ignore") if ignore else None
    signature_c = optional_path(signature_path, "signature_path")
    options.revision = _arguments.revision(revision)
    options.certificate_path = certificate_c
    options.certificate_chain_paths, options.certificate_chain_count = _arguments.c_array(chain)
    options.shards = 1 if shards else 0
    options.shard_size = shard_size or 0
    options.allow_symlinks = 1 if allow_symlinks else 0
    options.ignore_paths, options.ignore_path_count = _arguments.c_array(ignored)
    options.signature_path = signature_c
    keep = (key_c, certificate_c, chain, ignored, signature_c)  # ctypes holds only the addresses
    lib = _library.get()
    signed = call_text(lib, lib.rootspan_model_sign, path_c, ctypes.byref(options))
    del keep
    return signed


def describe_safetensors_file(path):
    """The description of one safetensors file: {"format", "bytes", "header_bytes", "metadata" (None when the
    header has none), "tensors": [[name, dtype, shape, offset, bytes], ...]} in file order."""
    path_c = _path_argument(path)
    lib = _library.get()
    return call_json(lib, lib.rootspan_safetensors_describe_file, path_c)


def safetensors_file_table(path):
    """(metadata, tensors) of one safetensors file: its header's __metadata__ (a dict, or None when it has none)
    and {name: (dtype, shape (a tuple), offset, bytes)} in file order, as the drop-in's safe_open keeps them. Where
    the compiled module is there, it builds the table as the library walks the header
    (rootspan_safetensors_each_tensor): no JSON to write and parse again, some 4 ms of a 10,000-tensor file's
    open (issue 33). Else, and where the library refuses the file (to raise what describe_safetensors_file
    raises), from describe_safetensors_file."""
    table = getattr(_compiled.describe(), "safetensors_table", None)
    if table is not None:
        lib = _library.get()
        made = table(lib.address("rootspan_safetensors_each_tensor"), lib.address("rootspan_string_free"),
                     _path_argument(path))
        if made is not None:
            metadata, tensors = made
            return json.loads(metadata), tensors
    description = describe_safetensors_file(path)
    return description["metadata"], {name: (dtype, tuple(shape), offset, nbytes)
                                     for name, dtype, shape, offset, nbytes in description["tensors"]}


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
    return call_json(lib, lib.rootspan_safetensors_describe, address, view.nbytes, str(name).encode("utf-8", "replace"))
