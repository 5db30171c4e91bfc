#!/usr/bin/python3
"""`rootspan load` and `rootspan inspect` (docs/weight-schema.md): the JSON
shapes, the exit statuses, and one hand-built broken file per rule, each of
which must exit with status 3 and name what was wrong in a JSON error on
stderr.

usage: cli_test.py ROOTSPAN_EXE EXAMPLE_CHECKPOINT_FOLDER
"""
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

import cli_schemas
from checks import check, report

EXE = None


def run(*args):
    """Runs the program with no installed or environment manifests in play."""
    env = dict(os.environ)
    env.pop("ROOTSPAN_MANIFEST", None)
    env["XDG_CONFIG_HOME"] = os.path.join(WORK, "no-xdg-home")
    env["XDG_CONFIG_DIRS"] = os.path.join(WORK, "no-xdg-dirs")
    result = subprocess.run([EXE, *args], capture_output=True, text=True, env=env, timeout=120)
    # Every JSON output, also of the tests that share this helper, against its schema.
    for problem in cli_schemas.check_output(args, result.returncode, result.stdout, result.stderr):
        check(False, problem)
    return result


# ---- building files ----------------------------------------------------------

BITS = {"BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16, "U16": 16,
        "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
        "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8}


def nbytes(dtype, shape):
    n = 1
    for d in shape:
        n *= d
    return n * BITS[dtype] // 8


def data(n, seed):
    out = bytearray()
    x = seed
    for _ in range(n):
        x = (x * 1664525 + 1013904223) & 0xFFFFFFFF
        out.append(x >> 24)
    return bytes(out)


def header_of(tensors, metadata=None):
    """A header with the tensors back to back: [(name, dtype, shape)]."""
    h = {}
    if metadata is not None:
        h["__metadata__"] = metadata
    offset = 0
    for name, dtype, shape in tensors:
        n = nbytes(dtype, shape)
        h[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    return json.dumps(h).encode(), offset


def raw_file(header_bytes, data_size, header_length=None, seed=1):
    if header_length is None:
        header_length = len(header_bytes)
    return struct.pack("<Q", header_length) + header_bytes + data(data_size, seed)


def good_file(tensors, metadata=None, seed=1, pad=True):
    header, size = header_of(tensors, metadata)
    if pad:
        header += b" " * ((8 - (8 + len(header)) % 8) % 8)
    return raw_file(header, size, seed=seed)


def write(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb" if isinstance(content, bytes) else "w") as f:
        f.write(content)
    return path


def folder(name):
    path = os.path.join(WORK, name)
    os.makedirs(path, exist_ok=True)
    return path


def sharded(name, shards, weight_map=None):
    """A folder with shards {file: [(name, dtype, shape)]} and an index."""
    path = folder(name)
    mapping = {}
    for i, (file, tensors) in enumerate(shards.items()):
        write(os.path.join(path, file), good_file(tensors, seed=i + 7))
        for t in tensors:
            mapping[t[0]] = file
    write(os.path.join(path, "model.safetensors.index.json"),
          json.dumps({"metadata": {}, "weight_map": mapping if weight_map is None else weight_map}))
    return path


# ---- error expectations -------------------------------------------------------

def error_of(result):
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    if not lines:
        return None
    try:
        return json.loads(lines[-1]).get("error")
    except ValueError:
        return None


def expect_error(what, args, status, code, fragments, operation=None):
    """Runs with --json; expects the exit status, nothing on stdout, and one
    JSON error on stderr with the code and every fragment in its message."""
    result = run(*args, "--json")
    ok = check(result.returncode == status,
               "%s: exit status %d, expected %d (stderr: %s)" % (what, result.returncode, status,
                                                                 result.stderr.strip()))
    check(result.stdout.strip() == "", "%s: nothing on stdout, got %r" % (what, result.stdout[:200]))
    error = error_of(result)
    if not check(error is not None, "%s: a JSON error on stderr, got %r" % (what, result.stderr)):
        return
    for key in ("code", "operation", "message"):
        check(key in error, "%s: error has %r: %s" % (what, key, error))
    check(error.get("code") == code, "%s: code %r, expected %r: %s" % (what, error.get("code"), code,
                                                                        error.get("message")))
    if operation is not None:
        check(error.get("operation") == operation,
              "%s: operation %r, expected %r" % (what, error.get("operation"), operation))
    message = error.get("message", "")
    for fragment in fragments:
        check(fragment in message, "%s: message lacks %r: %s" % (what, fragment, message))
    return ok


def expect_invalid_checkpoint(what, path, fragments, both=True):
    """A broken checkpoint: inspect and load both exit 3 with InvalidCheckpoint."""
    expect_error("inspect " + what, ["inspect", path], 3, "InvalidCheckpoint", fragments, "open_checkpoint")
    if both:
        expect_error("load " + what, ["load", path, "--provider", "host"], 3, "InvalidCheckpoint", fragments,
                     "open_checkpoint")


def expect_usage(what, args):
    result = run(*args)
    check(result.returncode == 2, "usage %s: exit status %d, expected 2 (stderr: %s)" %
          (what, result.returncode, result.stderr.strip()))
    if args:  # with no command at all the program prints its help
        check(result.stdout.strip() == "", "usage %s: nothing on stdout" % what)
        check(result.stderr.strip() != "", "usage %s: says why on stderr" % what)
    # --json right after the command, so that it is never taken as an
    # option's value.
    with_json = run(args[0], "--json", *args[1:]) if args and args[0] in ("load", "inspect") else None
    if with_json is not None:
        check(with_json.returncode == 2, "usage %s --json: exit status %d" % (what, with_json.returncode))
        error = error_of(with_json)
        check(error is not None and error.get("code") == "Usage",
              "usage %s --json: a JSON error with code Usage, got %r" % (what, with_json.stderr))


# ---- the example checkpoint -----------------------------------------------

def sha256_of_tensors(folder_path, inspected, names):
    by_name = {t["name"]: t for t in inspected["tensors"]}
    digest = hashlib.sha256()
    for name in names:
        t = by_name[name]
        with open(os.path.join(folder_path, t["file"]), "rb") as f:
            f.seek(t["offset"])
            digest.update(f.read(t["bytes"]))
    return digest.hexdigest()


def test_example(example):
    schema = os.path.join(example, "schema.json")
    inspected = run("inspect", example, "--json")
    check(inspected.returncode == 0, "inspect example: exit 0, got %d: %s" % (inspected.returncode, inspected.stderr))
    doc = json.loads(inspected.stdout)
    for key in ("path", "format", "shards", "metadata", "tensors", "valid"):
        check(key in doc, "inspect: field %r in %s" % (key, sorted(doc)))
    check(doc.get("format") == "safetensors", "inspect: format safetensors")
    check(doc.get("valid") is True, "inspect: valid true")
    check(isinstance(doc.get("metadata"), dict), "inspect: metadata is an object")
    check(len(doc["shards"]) == 2, "inspect: 2 shards, got %d" % len(doc["shards"]))
    for shard in doc["shards"]:
        for key in ("file", "bytes", "header_bytes"):
            check(key in shard, "inspect: shard field %r" % key)
        size = os.path.getsize(os.path.join(example, shard["file"]))
        check(shard["bytes"] == size, "inspect: shard %s bytes %s = file size %d" % (shard["file"], shard["bytes"],
                                                                                     size))
        with open(os.path.join(example, shard["file"]), "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
        check(shard["header_bytes"] == n, "inspect: header_bytes %s = %d" % (shard["header_bytes"], n))
    check(len(doc["tensors"]) == 5, "inspect: 5 tensors")
    for t in doc["tensors"]:
        for key in ("name", "dtype", "shape", "file", "offset", "bytes"):
            check(key in t, "inspect: tensor field %r in %s" % (key, t))
        check(t["bytes"] == nbytes(t["dtype"], t["shape"]), "inspect: %s bytes from dtype and shape" % t["name"])

    # The provider is named: with "auto", an installed manifest on a GPU
    # machine could win over the host.
    loaded = run("load", example, "--schema", schema, "--json", "--verify", "--provider", "host")
    check(loaded.returncode == 0, "load example: exit 0, got %d: %s" % (loaded.returncode, loaded.stderr))
    doc_load = json.loads(loaded.stdout)
    for key in ("provider", "device", "components", "skipped", "total_bytes", "seconds", "gb_per_s"):
        check(key in doc_load, "load: field %r in %s" % (key, sorted(doc_load)))
    check(doc_load.get("provider") == "host", "load: provider host, got %r" % doc_load.get("provider"))
    check(doc_load.get("device") == 0, "load: device 0")
    check(isinstance(doc_load["seconds"], (int, float)) and doc_load["seconds"] >= 0, "load: seconds a number")
    check(isinstance(doc_load["gb_per_s"], (int, float)) and doc_load["gb_per_s"] >= 0, "load: gb_per_s a number")
    components = {c["id"]: c for c in doc_load["components"]}
    check(sorted(components) == ["embed", "layers.0.attn.q.qweight", "layers.0.mlp.gate_up", "norm"],
          "load: components %s" % sorted(components))
    keys = set()
    for c in doc_load["components"]:
        for key in ("id", "bytes", "segments", "zero_copy", "key", "sha256"):
            check(key in c, "load: component field %r in %s" % (key, c))
        check(set(c["key"]) == {"domain", "local"}, "load: key has domain and local: %s" % c["key"])
        check(c["key"]["domain"] != 0 and c["key"]["local"] != 0, "load: key halves non-zero")
        keys.add((c["key"]["domain"], c["key"]["local"]))
        check(isinstance(c["sha256"], str) and len(c["sha256"]) == 64, "load --verify: sha256 of %s" % c["id"])
    check(len(keys) == 4, "load: every component has its own key")
    gate_up = components.get("layers.0.mlp.gate_up", {})
    check(gate_up.get("segments") == 2, "load: the packed component has 2 segments, got %r" % gate_up.get("segments"))
    check(gate_up.get("zero_copy") is False, "load: the packed component is copied")
    check(gate_up.get("bytes") == 2 * 64 * 32 * 4, "load: gate_up bytes")
    check(components.get("embed", {}).get("zero_copy") is True, "load: an aligned single segment is zero-copy")
    # What an embedder needs to read each component, as the schema gives it.
    expected_kinds = {
        "embed": ("values", "F16", [256, 32], {"dense": {"element_type": "F16"}}, True),
        "layers.0.mlp.gate_up": ("packed_values", "F32", [2, 64, 32], {"dense": {"element_type": "F32"}}, False),
        "layers.0.attn.q.qweight": ("packed_values", "U8", [64, 1],
                                    {"block_quantized": {"format_id": "quantization.gguf.q4-k",
                                                         "values_per_block": 256, "bytes_per_block": 144}}, True),
        "norm": ("values", "F32", [32], {"dense": {"element_type": "F32"}}, True),
    }
    for cid, (role, dtype, shape, encoding, read_only) in expected_kinds.items():
        c = components.get(cid, {})
        got = (c.get("role"), c.get("dtype"), c.get("shape"), c.get("encoding"), c.get("read_only"))
        check(got == (role, dtype, shape, encoding, read_only),
              "load: %s role, dtype, shape, encoding, read_only: expected %r, got %r"
              % (cid, (role, dtype, shape, encoding, read_only), got))
    check(doc_load["total_bytes"] == sum(c["bytes"] for c in doc_load["components"]), "load: total_bytes")
    check([s.get("id") for s in doc_load["skipped"]] == ["layers.0.attn.q.scales"],
          "load: the optional component is skipped: %s" % doc_load["skipped"])
    check(all("reason" in s for s in doc_load["skipped"]), "load: skipped entries have a reason")
    # --verify digests equal digests of the file bytes.
    sources = {"embed": ["model.embed_tokens.weight"],
               "layers.0.mlp.gate_up": ["model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight"],
               "layers.0.attn.q.qweight": ["model.layers.0.self_attn.q_proj.q4k"],
               "norm": ["model.norm.weight"]}
    for cid, names in sources.items():
        if cid in components:
            check(components[cid]["sha256"] == sha256_of_tensors(example, doc, names),
                  "load --verify: %s digest equals the file bytes' digest" % cid)

    # Without --verify, sha256 is null; with --strategy read nothing is zero-copy.
    plain = run("load", example, "--schema", schema, "--json", "--strategy", "read", "--provider", "host")
    check(plain.returncode == 0, "load --strategy read: exit 0: %s" % plain.stderr)
    if plain.returncode == 0:
        doc_plain = json.loads(plain.stdout)
        check(all(c["sha256"] is None for c in doc_plain["components"]), "load without --verify: sha256 null")
        check(all(c["zero_copy"] is False for c in doc_plain["components"]), "load --strategy read: no zero-copy")
        check(all(c["read_only"] is False for c in doc_plain["components"]), "load --strategy read: all writable")

    # The default schema (one component per tensor) and the default provider
    # ("auto": whichever has a device).
    default = run("load", example, "--json")
    check(default.returncode == 0, "load, default schema: exit 0: %s" % default.stderr)
    if default.returncode == 0:
        doc_default = json.loads(default.stdout)
        check(len(doc_default["components"]) == 5, "load, default schema: 5 components")
        check(isinstance(doc_default["provider"], str) and doc_default["provider"] != "",
              "load, auto: names the provider it chose")

    # The readable forms.
    table = run("load", example, "--schema", schema, "--verify", "--provider", "host")
    check(table.returncode == 0 and "zero-copy" in table.stdout and "copied" in table.stdout and
          "layers.0.mlp.gate_up" in table.stdout and "skipped layers.0.attn.q.scales" in table.stdout,
          "load table: %s" % table.stdout)
    rows = {line.split()[0]: line.split() for line in table.stdout.splitlines() if line.strip()}
    check(rows.get("COMPONENT", [])[1:3] == ["DTYPE", "SHAPE"], "load table: DTYPE and SHAPE columns: %s" % table.stdout)
    check(rows.get("layers.0.mlp.gate_up", [])[1:3] == ["F32", "[2,64,32]"],
          "load table: gate_up dtype and shape: %s" % table.stdout)
    check(rows.get("embed", [])[1:3] == ["F16", "[256,32]"], "load table: embed dtype and shape: %s" % table.stdout)
    text = run("inspect", example)
    check(text.returncode == 0 and "valid" in text.stdout and "model.norm.weight" in text.stdout,
          "inspect text: %s" % text.stdout)

    # A provider name or device ordinal that does not exist is input the user
    # must fix (exit 3), and the message lists what exists.
    expect_error("load --provider missing", ["load", example, "--provider", "no-such-provider"], 3, "NotFound",
                 ['no provider is named "no-such-provider"', '"host": loaded, priority 0, 1 device'],
                 operation="provider_choose")
    expect_error("load --device 3 (host has one)", ["load", example, "--schema", schema, "--provider", "host",
                                                    "--device", "3"], 3, "NotFound",
                 ['device 3 does not exist: provider "host" has 1 device, ordinals 0'])
    # Regression test: this was once missed (see the test name).
    expect_error("load --device 3, all zero-copy", ["load", example, "--provider", "host", "--device", "3"], 3,
                 "NotFound", ["device 3 does not exist"])
    # "auto" checks the ordinal against the provider it chose.
    expect_error("load auto --device 3", ["load", example, "--device", "3"], 3, "NotFound",
                 ['device 3 does not exist: provider "host"'])
    # "auto" says on stderr what it chose and why (text mode); --json carries it in the document.
    chose = run("load", example)
    check(chose.returncode == 0 and 'rootspan: auto: chose "host" (priority 0, 1 device)' in chose.stderr,
          "load auto explains its choice on stderr: %r" % chose.stderr)
    chose = run("load", example, "--json")
    check(chose.returncode == 0 and json.loads(chose.stdout).get("provider_choice", "").startswith('chose "host"'),
          "load auto --json: provider_choice in the document: %r" % chose.stdout[:300])
    named = run("load", example, "--provider", "host")
    check(named.returncode == 0 and "auto:" not in named.stderr, "a named provider prints no auto note: %r" %
          named.stderr)


# ---- docs/weight-schema.md: one file per rule ------------------------------------------

def test_safetensors_rules():
    d = folder("rules")
    ok_header, ok_size = header_of([("w", "F32", [2, 2])])

    def p(name):
        return os.path.join(d, name + ".safetensors")

    # N <= 100,000,000, checked before anything is allocated.
    expect_invalid_checkpoint("header length too big",
                              write(p("huge"), raw_file(ok_header, ok_size, header_length=100_000_001)),
                              ["header length 100000001", "exceeds the limit", "100000000"])
    # 8 + N <= file size.
    expect_invalid_checkpoint("header past the end of the file",
                              write(p("past-end"), raw_file(ok_header, 0, header_length=len(ok_header) + 64)),
                              ["runs past the end of the file"])
    expect_invalid_checkpoint("file shorter than the header length field", write(p("tiny"), b"\x01\x00\x00"),
                              ["shorter than the 8-byte header length"])
    # UTF-8.
    bad_utf8 = ok_header.replace(b'"w"', b'"w\xff"')
    expect_invalid_checkpoint("bad UTF-8", write(p("utf8"), raw_file(bad_utf8, ok_size)),
                              ["not valid UTF-8", "0xFF"])
    overlong = ok_header.replace(b'"w"', b'"w\xc0\xaf"')
    expect_invalid_checkpoint("overlong UTF-8", write(p("overlong"), raw_file(overlong, ok_size)), ["not valid UTF-8"])
    # Leading and trailing spaces are allowed.
    spaced = write(p("spaced"), raw_file(b"   " + ok_header + b"    ", ok_size))
    r = run("inspect", spaced, "--json")
    check(r.returncode == 0, "leading/trailing spaces: inspect exit 0, got %d: %s" % (r.returncode, r.stderr))
    r = run("load", spaced, "--json", "--provider", "host", "--verify")
    check(r.returncode == 0, "leading/trailing spaces: load exit 0, got %d: %s" % (r.returncode, r.stderr))
    if r.returncode == 0:
        with open(spaced, "rb") as f:
            body = f.read()
        check(json.loads(r.stdout)["components"][0]["sha256"] == hashlib.sha256(body[-ok_size:]).hexdigest(),
              "leading/trailing spaces: the bytes load")
    # __metadata__ is a string-to-string map.
    h, n = header_of([("w", "F32", [2])], metadata={"epoch": 3})
    expect_invalid_checkpoint("__metadata__ value not a string", write(p("meta-value"), raw_file(h, n)),
                              ["__metadata__", "\"epoch\"", "not a string"])
    h, n = header_of([("w", "F32", [2])], metadata=["a"])
    expect_invalid_checkpoint("__metadata__ not an object", write(p("meta-array"), raw_file(h, n)),
                              ["__metadata__", "not an object"])
    h, n = header_of([("w", "F32", [2])], metadata={"format": "pt", "note": "ok"})
    r = run("inspect", write(p("meta-good"), raw_file(h, n)), "--json")
    check(r.returncode == 0 and json.loads(r.stdout)["metadata"] == {"format": "pt", "note": "ok"},
          "__metadata__ string map: read back: %s %s" % (r.stdout[:200], r.stderr))
    # Duplicate keys, also at the top level between tensors.
    dup = (b'{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
           b'"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}')
    expect_invalid_checkpoint("duplicate tensor key", write(p("dup"), raw_file(dup, 8)), ["duplicate key", "\"w\""])
    dup_field = b'{"w":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}}'
    expect_invalid_checkpoint("duplicate field key", write(p("dup-field"), raw_file(dup_field, 4)),
                              ["duplicate key", "\"dtype\""])
    # Tiling: holes, overlaps, trailing bytes.
    hole = (b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
            b'"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}')
    expect_invalid_checkpoint("hole", write(p("hole"), raw_file(hole, 12)), ["\"b\"", "a hole of 4 bytes"])
    hole_start = b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'
    expect_invalid_checkpoint("hole at the start", write(p("hole-start"), raw_file(hole_start, 8)),
                              ["\"a\"", "a hole of 4 bytes"])
    overlap = (b'{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
               b'"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}')
    expect_invalid_checkpoint("overlap", write(p("overlap"), raw_file(overlap, 12)), ["\"b\"", "an overlap of 4 bytes"])
    expect_invalid_checkpoint("trailing bytes", write(p("trailing"), raw_file(ok_header, ok_size + 3)),
                              ["3 trailing bytes"])
    # end - begin = product(shape) x bits / 8.
    mismatch = b'{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}'
    expect_invalid_checkpoint("byte count mismatch", write(p("count"), raw_file(mismatch, 8)),
                              ["\"w\"", "hold 8 bytes", "needs 12"])
    f4 = b'{"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}'
    expect_invalid_checkpoint("F4 count not whole bytes", write(p("f4"), raw_file(f4, 2)),
                              ["\"w\"", "12 bits", "not a whole number of bytes"])
    f6 = b'{"w":{"dtype":"F6_E2M3","shape":[2],"data_offsets":[0,2]}}'
    expect_invalid_checkpoint("F6 count not whole bytes", write(p("f6"), raw_file(f6, 2)),
                              ["not a whole number of bytes"])
    f4_good = write(p("f4-good"), raw_file(b'{"w":{"dtype":"F4","shape":[4],"data_offsets":[0,2]}}', 2))
    check(run("inspect", f4_good).returncode == 0, "F4 with a whole number of bytes is valid")
    unknown = b'{"w":{"dtype":"F17","shape":[1],"data_offsets":[0,4]}}'
    expect_invalid_checkpoint("unknown dtype", write(p("dtype"), raw_file(unknown, 4)),
                              ["\"w\"", "unknown dtype", "\"F17\""])
    overflow = b'{"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}}'
    expect_invalid_checkpoint("shape overflow", write(p("overflow"), raw_file(overflow, 4)),
                              ["more elements than 64 bits can count"])
    expect_invalid_checkpoint("header not JSON", write(p("not-json"), raw_file(b'{"w":', 0)), ["not valid JSON"])


# ---- docs/weight-schema.md: sharded checkpoints -----------------------------------------

def test_index_rules():
    a = [("t.a", "F32", [4])]
    b = [("t.b", "F32", [4])]
    # A mapped tensor that its file does not hold.
    path = sharded("index-ghost", {"s1.safetensors": a, "s2.safetensors": b},
                   {"t.a": "s1.safetensors", "t.b": "s2.safetensors", "t.ghost": "s1.safetensors"})
    expect_invalid_checkpoint("mapped tensor missing from its file", path, ["\"t.ghost\"", "no shard has such a tensor"])
    path = sharded("index-wrong-file", {"s1.safetensors": a, "s2.safetensors": b + [("t.c", "U8", [3])]},
                   {"t.a": "s1.safetensors", "t.b": "s2.safetensors", "t.c": "s1.safetensors"})
    expect_invalid_checkpoint("mapped tensor in another file", path, ["\"t.c\"", "\"s1.safetensors\"",
                                                                       "\"s2.safetensors\""])
    # A shard tensor that the map leaves out.
    path = sharded("index-unmapped", {"s1.safetensors": a, "s2.safetensors": b + [("t.extra", "U8", [2])]},
                   {"t.a": "s1.safetensors", "t.b": "s2.safetensors"})
    expect_invalid_checkpoint("shard tensor missing from the map", path, ["\"t.extra\"", "not in the weight_map"])
    # One tensor in two shards.
    path = sharded("index-twice", {"s1.safetensors": a, "s2.safetensors": a + b},
                   {"t.a": "s1.safetensors", "t.b": "s2.safetensors"})
    expect_invalid_checkpoint("tensor twice across shards", path, ["\"t.a\"", "appears in two shards"])
    # Non-portable names.
    for label, name, fragment in [("absolute", "/abs.safetensors", "starts with '/'"),
                                  ("backslash", "a\\b.safetensors", "contains '\\'"),
                                  ("drive letter", "C:x.safetensors", "contains ':'"),
                                  ("dot-dot", "../x.safetensors", "'..' segment"),
                                  ("dot-dot alone", "..", "'..' segment"),
                                  ("dot", "./x.safetensors", "'.' segment"),
                                  ("empty segment", "sub//x.safetensors", "empty segment"),
                                  ("empty", "", "it is empty"),
                                  ("control character", "x\x01.safetensors", "control character")]:
        path = sharded("index-name-" + label.replace(" ", "-"), {"s1.safetensors": a}, {"t.a": name})
        expect_invalid_checkpoint("non-portable name (%s)" % label, path, ["not a portable relative path", fragment])
    # A symbolic link that leads out of the folder.
    outside = folder("outside")
    write(os.path.join(outside, "real.safetensors"), good_file(a))
    path = folder("index-symlink")
    os.symlink(os.path.join(outside, "real.safetensors"), os.path.join(path, "link.safetensors"))
    write(os.path.join(path, "model.safetensors.index.json"), json.dumps({"weight_map": {"t.a": "link.safetensors"}}))
    expect_invalid_checkpoint("symlink escaping the folder", path, ["\"link.safetensors\"", "symbolic link"])
    path = folder("index-symlink-dir")
    os.symlink(outside, os.path.join(path, "sub"))
    write(os.path.join(path, "model.safetensors.index.json"),
          json.dumps({"weight_map": {"t.a": "sub/real.safetensors"}}))
    expect_invalid_checkpoint("symlinked folder escaping the folder", path, ["symbolic link"])
    # A link that stays inside is fine.
    path = folder("index-symlink-inside")
    write(os.path.join(path, "data", "real.safetensors"), good_file(a))
    os.symlink(os.path.join("data", "real.safetensors"), os.path.join(path, "link.safetensors"))
    write(os.path.join(path, "model.safetensors.index.json"), json.dumps({"weight_map": {"t.a": "link.safetensors"}}))
    r = run("inspect", path, "--json")
    check(r.returncode == 0, "a symlink inside the folder is allowed: %s" % r.stderr)
    # Duplicate keys in the index.
    path = folder("index-dup")
    write(os.path.join(path, "s1.safetensors"), good_file(a))
    write(os.path.join(path, "model.safetensors.index.json"),
          '{"weight_map": {"t.a": "s1.safetensors", "t.a": "s1.safetensors"}}')
    expect_invalid_checkpoint("duplicate key in the index", path, ["duplicate key", "\"t.a\""])
    # total_size is advisory.
    path = sharded("index-total", {"s1.safetensors": a}, None)
    write(os.path.join(path, "model.safetensors.index.json"),
          json.dumps({"metadata": {"total_size": 999}, "weight_map": {"t.a": "s1.safetensors"}}))
    r = run("inspect", path, "--json")
    check(r.returncode == 0, "total_size is advisory: %s" % r.stderr)


# ---- docs/weight-schema.md: schemas -----------------------------------------------

def component(cid="w", role="values", sources=("w",), dims=(2, 4), encoding=None, required=True):
    return {"id": cid, "role": role, "sources": list(sources), "dimensions": list(dims),
            "encoding": encoding if encoding is not None else {"dense": {"element_type": "F32"}},
            "required": required}


def test_schema_rules():
    ckpt = write(os.path.join(folder("schema-ckpt"), "model.safetensors"),
                 good_file([("w", "F32", [2, 4]), ("q", "U8", [4, 144])]))

    def schema_file(name, components, version="1.0.0"):
        return write(os.path.join(WORK, "schemas", name + ".json"),
                     json.dumps({"schema_version": version, "components": components}))

    def expect_schema(what, components, code, fragments, version="1.0.0"):
        s = schema_file(what.replace(" ", "-"), components, version)
        expect_error("schema " + what, ["load", ckpt, "--schema", s, "--provider", "host"], 3, code, fragments)

    good = schema_file("good", [component()])
    r = run("load", ckpt, "--schema", good, "--json", "--provider", "host")
    check(r.returncode == 0, "a good schema loads: %s" % r.stderr)

    expect_schema("bad id", [component(cid="w eight!")], "InvalidSchema", ["\"w eight!\"", "not valid"])
    expect_schema("empty id", [component(cid="")], "InvalidSchema", ["not valid", "empty"])
    expect_schema("long id", [component(cid="x" * 161)], "InvalidSchema", ["161 bytes", "160"])
    expect_schema("bad role", [component(role="weights")], "InvalidSchema", ["\"weights\"", "role"])
    bq = {"block_quantized": {"format_id": "quantization.gguf.q4-k", "values_per_block": 0, "bytes_per_block": 144}}
    expect_schema("zero values_per_block", [component(cid="q", sources=["q"], dims=[4, 1], encoding=bq)],
                  "InvalidSchema", ["\"q\"", "values_per_block", "0"])
    bq0 = {"block_quantized": {"format_id": "quantization.gguf.q4-k", "values_per_block": 256, "bytes_per_block": 0}}
    expect_schema("zero bytes_per_block", [component(cid="q", sources=["q"], dims=[4, 1], encoding=bq0)],
                  "InvalidSchema", ["bytes_per_block", "0"])
    expect_schema("dimension mismatch", [component(dims=[3, 3])], "InvalidPayload",
                  ["\"w\"", "[3, 3]", "[2, 4]"])
    expect_schema("element type mismatch", [component(encoding={"dense": {"element_type": "F16"}}, dims=[2, 4])],
                  "InvalidPayload", ["\"w\"", "F32", "F16"])
    expect_schema("unknown element type", [component(encoding={"dense": {"element_type": "F17"}})], "InvalidSchema",
                  ["\"F17\""])
    expect_schema("duplicate id", [component(), component()], "InvalidSchema", ["\"w\"", "appears twice"])
    expect_schema("newer major", [component()], "InvalidSchema", ["major 2"], version="2.0.0")
    expect_schema("required source missing", [component(cid="attn.k", sources=["model.k.weight"])], "InvalidPayload",
                  ["\"attn.k\"", "\"model.k.weight\"", "required"])
    expect_schema("no sources", [component(sources=[])], "InvalidSchema", ["names no source tensor"])
    # An optional component with missing sources is skipped, not an error.
    s = schema_file("optional", [component(), component(cid="k", sources=["model.k.weight"], required=False)])
    r = run("load", ckpt, "--schema", s, "--json", "--provider", "host")
    check(r.returncode == 0, "an optional missing component: exit 0: %s" % r.stderr)
    if r.returncode == 0:
        skipped = json.loads(r.stdout)["skipped"]
        check([x["id"] for x in skipped] == ["k"] and "model.k.weight" in skipped[0]["reason"],
              "the optional component is reported as skipped: %s" % skipped)
    # Schema JSON itself.
    dup = write(os.path.join(WORK, "schemas", "dup-key.json"),
                '{"schema_version":"1.0.0","schema_version":"1.0.0","components":[]}')
    expect_error("schema duplicate key", ["load", ckpt, "--schema", dup, "--provider", "host"], 3, "InvalidSchema",
                 ["duplicate key", "\"schema_version\""])
    missing = os.path.join(WORK, "schemas", "no-such-schema.json")
    expect_error("schema file missing", ["load", ckpt, "--schema", missing, "--provider", "host"], 3, "Io",
                 ["no-such-schema.json"])


# ---- other inputs and usage ----------------------------------------------------

def test_misc_and_usage(example):
    expect_error("inspect of a missing path", ["inspect", os.path.join(WORK, "nope.safetensors")], 3, "Io",
                 ["nope.safetensors"])
    expect_error("load of a missing path", ["load", os.path.join(WORK, "nope.safetensors")], 3, "Io",
                 ["nope.safetensors"])
    two = folder("two-files")
    write(os.path.join(two, "a.safetensors"), good_file([("a", "U8", [1])]))
    write(os.path.join(two, "b.safetensors"), good_file([("b", "U8", [1])]))
    expect_error("folder of two files and no index", ["inspect", two], 3, "InvalidCheckpoint",
                 ["\"a.safetensors\"", "\"b.safetensors\""])

    # The readable error form.
    broken = write(os.path.join(WORK, "readable.safetensors"), raw_file(b"{", 0, header_length=500))
    r = run("inspect", broken)
    check(r.returncode == 3 and r.stderr.startswith("rootspan: InvalidCheckpoint: "),
          "readable error: %d %r" % (r.returncode, r.stderr))

    expect_usage("no command", [])
    expect_usage("unknown command", ["frobnicate"])
    expect_usage("load without PATH", ["load"])
    expect_usage("load with two PATHs", ["load", example, example])
    expect_usage("load --strategy bad", ["load", example, "--strategy", "fast"])
    expect_usage("load --device not a number", ["load", example, "--device", "one"])
    expect_usage("load --device negative", ["load", example, "--device", "-1"])
    expect_usage("load --schema without a value", ["load", example, "--schema"])
    expect_usage("load --provider without a value", ["load", example, "--provider"])
    expect_usage("load unknown option", ["load", example, "--fast"])
    expect_usage("load --manifest without a value", ["load", example, "--manifest"])
    expect_usage("inspect without PATH", ["inspect"])
    expect_usage("inspect with two PATHs", ["inspect", example, example])
    expect_usage("inspect unknown option", ["inspect", example, "--fast"])
    # Regression test: this was once missed (see the test name).
    expect_usage("inspect only an unknown option", ["inspect", "--fast"])


def test_nothing_to_load():
    """A checkpoint without tensors (or with empty ones only) loads with every
    strategy and option of the program, --verify included (it once crashed)."""
    empty = write(os.path.join(WORK, "nothing", "empty.safetensors"), good_file([]))
    meta = write(os.path.join(WORK, "nothing", "meta.safetensors"), good_file([], metadata={"format": "pt"}))
    zeros = write(os.path.join(WORK, "nothing", "zeros.safetensors"),
                  good_file([("a", "F32", [0]), ("b", "BF16", [3, 0])]))
    for path in (empty, meta, zeros):
        for strategy in ("mmap", "read", "direct", "auto"):
            for extra in ([], ["--verify"], ["--populate"], ["--json", "--verify"]):
                args = ["load", path, "--provider", "host", "--strategy", strategy, *extra]
                r = run(*args)
                check(r.returncode == 0,
                      "%s: exit %d (%s)" % (" ".join(args[2:]), r.returncode, r.stderr.strip()[-300:]))


def main():
    global EXE, WORK
    EXE, example = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="rootspan-load-cli-") as tmp:
        WORK = tmp
        test_example(example)
        test_safetensors_rules()
        test_index_rules()
        test_schema_rules()
        test_misc_and_usage(example)
        test_nothing_to_load()
    return report()


if __name__ == "__main__":
    sys.exit(main())
