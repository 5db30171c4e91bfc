#!/usr/bin/python3
"""`rootspan inspect` and `rootspan load` on GGUF files: the metadata and
tensors inspect shows (arrays summarized), a load whose digests equal the
file's bytes, a split file, and hostile files that must exit 3 with a JSON
error naming the rule.

usage: gguf_cli_test.py ROOTSPAN_EXE
"""
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

import cli_test as c

# ggml type id -> (name, values per block, bytes per block), for the types
# used here.
TYPES = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 8: ("Q8_0", 32, 34), 12: ("Q4_K", 256, 144), 39: ("MXFP4", 32, 17)}
U32, I32, F32, BOOL, STRING, ARRAY, U64 = 4, 5, 6, 7, 8, 9, 10


# check() and run() are cli_test.py's: the same program, the same clean
# environment, one tally of checks.
check, run = c.check, c.run


def text(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return text(key) + struct.pack("<I", vtype) + payload


def tensor_bytes(type_id, ne):
    _, per_block, block_bytes = TYPES[type_id]
    n = ne[0] // per_block * block_bytes
    for d in ne[1:]:
        n *= d
    return n


def gguf(kvs, tensors, version=3, alignment=32, offsets=None):
    """tensors: [(name, type_id, ne)]. Data byte i of the file is (i*7+3)&255."""
    header = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs)
    at = 0
    layout = []
    for i, (name, type_id, ne) in enumerate(tensors):
        offset = offsets[i] if offsets else at
        header += text(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        header += struct.pack("<IQ", type_id, offset)
        layout.append((name, at, tensor_bytes(type_id, ne)))
        at += tensor_bytes(type_id, ne)
        at = (at + alignment - 1) // alignment * alignment
    data_offset = (len(header) + alignment - 1) // alignment * alignment
    end = data_offset + (layout[-1][1] + layout[-1][2] if layout else 0)
    out = bytearray(header)
    out += bytes((i * 7 + 3) & 255 for i in range(len(header), end))
    return bytes(out), {name: (data_offset + off, n) for name, off, n in layout}


def write(name, content):
    path = os.path.join(c.WORK, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(content)
    return path


def error_of(result):
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    try:
        return json.loads(lines[-1]).get("error") if lines else None
    except ValueError:
        return None


def expect_invalid(what, path, fragments):
    for args in (["inspect", path], ["load", path, "--provider", "host"]):
        result = run(*args, "--json")
        label = "%s %s" % (args[0], what)
        check(result.returncode == 3, "%s: exit 3, got %d (%s)" % (label, result.returncode, result.stderr.strip()))
        check(result.stdout.strip() == "", "%s: nothing on stdout" % label)
        error = error_of(result)
        if not check(error is not None, "%s: a JSON error on stderr: %r" % (label, result.stderr)):
            continue
        check(error.get("code") == "InvalidCheckpoint", "%s: code %r" % (label, error.get("code")))
        check(error.get("operation") == "open_checkpoint", "%s: operation %r" % (label, error.get("operation")))
        for fragment in fragments:
            check(fragment in error.get("message", ""), "%s: message lacks %r: %s" % (label, fragment, error))


def model():
    kvs = [kv("general.architecture", STRING, text("llama")),
           kv("general.alignment", U32, struct.pack("<I", 32)),
           kv("llama.rope.freq_base", F32, struct.pack("<f", 10000.0)),
           kv("tokenizer.ggml.tokens", ARRAY, struct.pack("<IQ", STRING, 20) + b"".join(text("tok%d" % i)
                                                                                        for i in range(20))),
           kv("tokenizer.ggml.scores", ARRAY, struct.pack("<IQ", F32, 3) + struct.pack("<3f", 0.5, -1.0, 2.0))]
    tensors = [("token_embd.weight", 12, [512, 4]), ("output_norm.weight", 0, [16]),
               ("blk.0.ffn_up.weight", 8, [64, 3]), ("blk.0.ffn_down.weight", 39, [32, 2]),
               ("blk.0.attn_norm.weight", 1, [7])]
    return gguf(kvs, tensors)


def test_inspect_and_load():
    content, layout = model()
    path = write("model.gguf", content)
    r = run("inspect", path, "--json")
    if not check(r.returncode == 0, "inspect gguf: exit 0, got %d: %s" % (r.returncode, r.stderr)):
        return
    doc = json.loads(r.stdout)
    check(doc["format"] == "gguf", "inspect: format gguf")
    meta = doc["metadata"]
    check(meta["general.architecture"] == {"type": "string", "value": "llama", "length": 5},
          "inspect: string metadata %s" % meta.get("general.architecture"))
    check(meta["llama.rope.freq_base"] == {"type": "f32", "value": 10000.0}, "inspect: f32 metadata")
    tokens = meta["tokenizer.ggml.tokens"]
    check(tokens["type"] == "array" and tokens["element_type"] == "string" and tokens["length"] == 20 and
          tokens["first"] == ["tok%d" % i for i in range(8)], "inspect: array summarized: %s" % tokens)
    check(meta["tokenizer.ggml.scores"]["first"] == [0.5, -1.0, 2.0], "inspect: f32 array")
    tensors = {t["name"]: t for t in doc["tensors"]}
    q4 = tensors["token_embd.weight"]
    check(q4["type"] == "Q4_K" and q4["shape"] == [4, 512] and q4["encoding"] == "block_quantized" and
          q4["format_id"] == "gguf.q4_k" and q4["values_per_block"] == 256 and q4["bytes_per_block"] == 144 and
          q4["block_grid"] == [4, 2], "inspect: Q4_K tensor %s" % q4)
    for name, (offset, n) in layout.items():
        check(tensors[name]["offset"] == offset and tensors[name]["bytes"] == n,
              "inspect: %s offset/bytes %s, expected %s" % (name, tensors[name], (offset, n)))
    check(tensors["output_norm.weight"]["encoding"] == "dense" and tensors["output_norm.weight"]["dtype"] == "F32",
          "inspect: dense F32")

    plain = run("inspect", path)
    check(plain.returncode == 0 and "gguf" in plain.stdout and "Q4_K" in plain.stdout and
          "array of 20 string" in plain.stdout, "inspect (text): %s" % plain.stdout[:400])

    r = run("load", path, "--json", "--verify", "--provider", "host")
    if not check(r.returncode == 0, "load gguf: exit 0, got %d: %s" % (r.returncode, r.stderr)):
        return
    loaded = {c["id"]: c for c in json.loads(r.stdout)["components"]}
    check(sorted(loaded) == sorted(layout), "load: components %s" % sorted(loaded))
    for name, (offset, n) in layout.items():
        c = loaded.get(name, {})
        check(c.get("bytes") == n, "load: %s bytes" % name)
        check(c.get("zero_copy") is True, "load: %s zero-copy" % name)
        check(c.get("sha256") == hashlib.sha256(content[offset:offset + n]).hexdigest(),
              "load --verify: %s digest equals the file bytes'" % name)


def test_split():
    parts = []
    for p in range(3):
        kvs = [kv("split.no", U32, struct.pack("<I", p)), kv("split.count", U32, struct.pack("<I", 3)),
               kv("split.tensors.count", I32, struct.pack("<i", 3))]
        content, _ = gguf(kvs, [("t%d" % p, 0, [8])])
        parts.append(write("split/m-%05d-of-00003.gguf" % (p + 1), content))
    folder = os.path.dirname(parts[0])
    for target in (folder, parts[0]):
        r = run("load", target, "--json", "--provider", "host")
        check(r.returncode == 0 and sorted(c["id"] for c in json.loads(r.stdout)["components"]) == ["t0", "t1", "t2"],
              "load split %s: %s %s" % (target, r.returncode, r.stderr))
    os.remove(parts[1])
    expect_invalid("split with a missing part", parts[0], ["split part 2 of 3", "is missing"])


def test_hostile():
    good, _ = model()
    expect_invalid("bad magic", write("h/magic.gguf", b"GGML" + good[4:]), ["at byte 0: magic", 'expected "GGUF"'])
    expect_invalid("version 1", write("h/v1.gguf", gguf([], [("a", 0, [4])], version=1)[0]),
                   ["at byte 4: version", "version 1 is not supported"])
    expect_invalid("byte-swapped", write("h/be.gguf", gguf([], [("a", 0, [4])], version=0x03000000)[0]),
                   ["byte-swapped", "big-endian"])
    huge = bytearray(gguf([], [("a", 0, [4])])[0])
    huge[8:16] = struct.pack("<Q", 1 << 60)
    expect_invalid("huge tensor count", write("h/count.gguf", bytes(huge)), ["tensor count", "cannot fit"])
    long_string = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + text("k") + struct.pack("<IQ", STRING, (1 << 30) + 1)
    expect_invalid("string over 1 GiB", write("h/string.gguf", long_string + b"\0" * 64),
                   ["value of \"k\"", "exceeds the limit of 1073741824 bytes"])
    nested = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + text("k") + struct.pack("<IIQ", ARRAY, ARRAY, 1) + b"\0" * 32
    expect_invalid("nested array", write("h/nested.gguf", nested), ["nested arrays are not allowed"])
    expect_invalid("duplicate tensor", write("h/dup.gguf", gguf([], [("a", 0, [8]), ("a", 0, [8])])[0]),
                   ["duplicate tensor name"])
    expect_invalid("removed type", write("h/removed.gguf", gguf_raw_type(31)), ["(Q4_0_4_4) was removed from ggml"])
    expect_invalid("unknown type", write("h/unknown.gguf", gguf_raw_type(40)), ["unknown type id 40"])
    expect_invalid("lying dimensions", write("h/dims.gguf", gguf_raw_dims([1 << 32, 1 << 32])),
                   ["more elements than a signed 64-bit number can count"])
    expect_invalid("misaligned offset",
                   write("h/offset.gguf", gguf([], [("a", 0, [3]), ("b", 0, [4])], offsets=[0, 12])[0]),
                   ["tensor \"b\" offset", "is 12, expected 32"])
    expect_invalid("data past the end", write("h/short.gguf", good[:-1]), ["run past the end of the"])
    expect_invalid("alignment not a power of two",
                   write("h/align.gguf", gguf([kv("general.alignment", U32, struct.pack("<I", 48))], [("a", 0, [4])],
                                              alignment=48)[0]),
                   ["general.alignment", "48 is not a power of two"])


def gguf_raw_type(type_id):
    """One tensor of a type id the table lacks."""
    return (b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + text("a") + struct.pack("<IQ", 1, 32) +
            struct.pack("<IQ", type_id, 0) + b"\0" * 64)


def gguf_raw_dims(ne):
    """One F32 tensor with the dimensions given, and a little data."""
    return (b"GGUF" + struct.pack("<IQQ", 3, 1, 0) + text("a") + struct.pack("<I", len(ne)) +
            b"".join(struct.pack("<Q", d) for d in ne) + struct.pack("<IQ", 0, 0) + b"\0" * 64)


def main():
    c.EXE = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="rootspan-gguf-cli-") as tmp:
        c.WORK = tmp
        test_inspect_and_load()
        test_split()
        test_hostile()
    return c.report()


if __name__ == "__main__":
    sys.exit(main())
