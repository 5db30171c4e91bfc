"""What the loads (weights) and the header-only calls (inspect) share, one floor below both: the load options
naming what to read, each argument checked, and the library's answers that come back as allocated text.
"""
import collections.abc
import ctypes
import json
import os

from . import _abi, _memory, errors
from . import _arguments
from ._arguments import c_array, check_bool, check_int, optional_path, path_list


def call_text(lib, fn, *args):
    """fn(*args, &out, &error): the text the library allocated at out (freed here), or its error raised."""
    out = ctypes.c_void_p()
    errors.check(lib, fn, *args, ctypes.byref(out))
    try:
        return ctypes.string_at(out.value).decode("utf-8")
    finally:
        lib.rootspan_string_free(out.value)


def call_json(lib, fn, *args):
    """call_text, parsed as JSON."""
    text = call_text(lib, fn, *args)
    with _memory.gc_paused():  # a document of thousands of tensors is as many lists: no collector passes
        return json.loads(text)


def _split_rules(rank, world_size, split):
    """The slicing options, checked: (rank, world_size, [SplitRule]); world_size 0 is no slicing."""
    check_int(rank, "rank", bits=32)
    check_int(world_size, "world_size", bits=32)
    if split is None:
        split = {}
    if not isinstance(split, collections.abc.Mapping):
        raise TypeError(f"split must be a dict of component id pattern -> dimension (-1: replicate), got "
                        f"{type(split).__name__} {split!r}")
    if split and world_size == 0:
        raise ValueError("split rules need a world_size of at least 1")
    rules = []
    for pattern, dimension in split.items():
        if not isinstance(pattern, str):
            raise TypeError(f"split patterns are str, got {type(pattern).__name__} {pattern!r}")
        if isinstance(dimension, bool) or not isinstance(dimension, int) or not -1 <= dimension < 1 << 31:
            raise TypeError(f"split[{pattern!r}] must be a dimension (int >= 0) or -1 to replicate, got "
                            f"{type(dimension).__name__} {dimension!r}")
        rules.append(_abi.SplitRule(ctypes.sizeof(_abi.SplitRule), _abi.c_text(pattern, "split pattern"), dimension))
    return rank, world_size, rules


def _patterns(tensors):
    """tensors as a C array of patterns (None: every component)."""
    if tensors is None:
        return None
    if isinstance(tensors, (str, bytes)) or not all(isinstance(t, str) for t in tensors):
        raise TypeError(f"tensors must be a list of patterns (str), got {tensors!r}")
    patterns = [_abi.c_text(t, "tensor pattern") for t in tensors]
    return (ctypes.c_char_p * max(len(patterns), 1))(*patterns), len(patterns)


def signature_options(signature, public_key, certificate_chain, ignore_unsigned_files):
    """The signed-model options of a load, checked: (signature, public key, (chain array, count) or None) as
    C paths. A key, a chain or ignore_unsigned_files needs a signature, and a signature one of key or chain."""
    check_bool(ignore_unsigned_files, "ignore_unsigned_files")
    signature_c = optional_path(signature, "signature")
    public_key_c = optional_path(public_key, "public_key")
    chain = None if certificate_chain is None else path_list(certificate_chain, "certificate_chain")
    if signature_c is None:
        given = [name for name, value in (("public_key", public_key_c is not None),
                                          ("certificate_chain", chain is not None),
                                          ("ignore_unsigned_files", ignore_unsigned_files)) if value]
        if given:
            raise ValueError(f"{' and '.join(given)} check a model signature: signature= (the bundle's path) is "
                             f"missing")
    elif public_key_c is None and chain is None:
        raise ValueError(f"signature={os.fsdecode(signature_c)!r} needs the key it was signed with (public_key=, "
                         f"a PEM file) or the certificates to trust (certificate_chain=, PEM files); got neither")
    return signature_c, public_key_c, chain


def checkpoint_options(schema=None, tensors=None, revision=None, rank=0, world_size=0, split=None,
                       split_convention="tensor_split"):
    """Load options naming what to read (schema, tensors, revision, one rank's slice), every argument checked.
    The options point into the arrays they are built from; the options object keeps them alive."""
    schema_c = optional_path(schema, "schema")
    patterns = _patterns(tensors)
    revision_c = _arguments.revision(revision)
    if split_convention not in _abi.SPLIT_CONVENTIONS:
        raise ValueError(f"split_convention must be 'tensor_split' or 'chunk', got {split_convention!r}")
    rank, world_size, rules = _split_rules(rank, world_size, split)
    options = _abi.sized(_abi.LoadOptions)
    rule_array = (_abi.SplitRule * max(len(rules), 1))(*rules)
    options.rank = rank
    options.world_size = world_size
    options.split_rules = rule_array if rules else None
    options.split_rule_count = len(rules)
    options.split_convention = _abi.SPLIT_CONVENTIONS[split_convention]
    options.schema_path = schema_c
    if patterns is not None:
        options.tensors, options.tensor_count = c_array(patterns)
    options.revision = revision_c
    options._keep = (rule_array, patterns, schema_c)  # ctypes holds only the addresses
    return options

