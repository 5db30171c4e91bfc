"""Runs the Rust example against the example checkpoint the build writes and
compares what it prints with the checkpoint's own bytes, read here.

usage: check_example.py PROGRAM EXAMPLE_CHECKPOINT
(LD_LIBRARY_PATH must let PROGRAM find librootspan.so.)
"""
import json
import math
import os
import struct
import subprocess
import sys

program, folder = sys.argv[1:3]
schema = os.path.join(folder, "schema.json")
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


def tensor_bytes(name):
    weight_map = json.load(open(os.path.join(folder, "model.safetensors.index.json")))["weight_map"]
    with open(os.path.join(folder, weight_map[name]), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        begin, end = json.loads(f.read(n))[name]["data_offsets"]
        f.seek(8 + n + begin)
        return f.read(end - begin)


def run(*args):
    return subprocess.run([program, folder, *args], capture_output=True, text=True, timeout=60)


def fields(result):
    """The 'key value' lines the example prints, as a dict."""
    return dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)


def same_f32(printed, expected):
    value = struct.unpack("<f", struct.pack("<f", float(printed)))[0]
    if math.isnan(expected):
        return math.isnan(value)
    return struct.pack("<f", value) == struct.pack("<f", expected)


# A dense F32 component packed from two tensors (copied into its root).
r = run("layers.0.mlp.gate_up", schema)
check(r.returncode == 0, "gate_up: exit 0, got %d: %s" % (r.returncode, r.stderr))
got = fields(r)
for key, value in [("component", "layers.0.mlp.gate_up"), ("dtype", "F32"), ("shape", "[2, 64, 32]"),
                   ("bytes", "16384"), ("role", "packed_values"), ("encoding", "dense"), ("placement", "copied")]:
    check(got.get(key) == value, "gate_up: %s is %r, expected %r" % (key, got.get(key), value))
expected = struct.unpack("<8f", tensor_bytes("model.layers.0.mlp.gate_proj.weight")[:32])
printed = got.get("first", "").split()
check(printed[:1] == ["f32"] and len(printed) == 9, "gate_up: 8 f32 values: %r" % got.get("first"))
if len(printed) == 9:
    for i, (p, e) in enumerate(zip(printed[1:], expected)):
        check(same_f32(p, e), "gate_up: element %d printed %s, the file holds %r" % (i, p, e))

# A block-quantized component: its blocks are bytes (zero-copy).
r = run("layers.0.attn.q.qweight", schema)
check(r.returncode == 0, "qweight: exit 0, got %d: %s" % (r.returncode, r.stderr))
got = fields(r)
for key, value in [("dtype", "U8"), ("shape", "[64, 1]"), ("bytes", "9216"), ("placement", "zero-copy"),
                   ("encoding", "block_quantized quantization.gguf.q4-k (256 values in 144 bytes per block)")]:
    check(got.get(key) == value, "qweight: %s is %r, expected %r" % (key, got.get(key), value))
first = tensor_bytes("model.layers.0.self_attn.q_proj.q4k")[:8]
check(got.get("first") == "bytes " + " ".join("%02x" % b for b in first),
      "qweight: first bytes %r, the file holds %s" % (got.get("first"), first.hex()))

# The default schema: one component per tensor, named as the tensor.
r = run("model.norm.weight")
check(r.returncode == 0 and fields(r).get("shape") == "[32]", "norm, default schema: %s %s" % (r.stdout, r.stderr))

# Failures: non-zero, with the library's message.
r = run("layers.0.attn.q.scales", schema)  # skipped (optional, missing source)
check(r.returncode != 0 and "NotFound" in r.stderr and '"layers.0.attn.q.scales"' in r.stderr,
      "a skipped component: exit %d, stderr %r" % (r.returncode, r.stderr))
r = subprocess.run([program, os.path.join(folder, "no-such-checkpoint"), "x"], capture_output=True, text=True,
                   timeout=60)
check(r.returncode != 0 and "Io: open_checkpoint" in r.stderr and "no such file or folder" in r.stderr,
      "a missing checkpoint: exit %d, stderr %r" % (r.returncode, r.stderr))
r = subprocess.run([program], capture_output=True, text=True, timeout=60)
check(r.returncode == 2 and "usage" in r.stderr, "no arguments: exit %d, stderr %r" % (r.returncode, r.stderr))

for f in failures:
    print("FAIL: " + f)
sys.exit(1 if failures else 0)
