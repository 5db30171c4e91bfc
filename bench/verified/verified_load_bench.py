#!/usr/bin/python3
"""Verified loads against unverified ones, measured in one run (issue 22).

Writes two checkpoints under a work folder — one 1 GiB single tensor file,
and four 256 MiB shards — and a digest manifest of each (`rootspan hash`).
Then, interleaved and repeated, it times `rootspan load --provider host`
with and without `--digests`, for the mmap and read strategies, warm (the
files in the page cache) and, when run as root, cold (page cache dropped
before each run; otherwise it says so and skips). Beside them: the time to
hash each file alone on one core (Python's hashlib, which is OpenSSL's
SHA-256), warm. Prints a table of medians and spreads, each verified time as
a ratio of its unverified twin and of max(unverified, hash of the largest
file), the goal being at most 1.10.

usage: verified_load_bench.py ROOTSPAN_EXE [WORK_DIR] [--repeat N]
"""
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_checkpoints import can_drop_caches, drop_caches, parse_args, write_safetensors  # noqa: E402

GIB = 1 << 30


def make_checkpoints(work):
    single = os.path.join(work, "single")
    sharded = os.path.join(work, "sharded")
    for folder in (single, sharded):
        os.makedirs(folder, exist_ok=True)
    if not os.path.exists(os.path.join(single, "model.safetensors")):
        write_safetensors(os.path.join(single, "model.safetensors"), [("w", GIB)])
    names = [f"model-{i:05d}-of-00004.safetensors" for i in range(1, 5)]
    if not all(os.path.exists(os.path.join(sharded, n)) for n in names):
        weight_map = {}
        for i, name in enumerate(names):
            write_safetensors(os.path.join(sharded, name), [(f"layer{i}.w", GIB // 4)])
            weight_map[f"layer{i}.w"] = name
        with open(os.path.join(sharded, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": weight_map}, f)
    return {"1 GiB file": single, "4 x 256 MiB shards": sharded}


def load_seconds(exe, folder, strategy, manifest):
    args = [exe, "load", folder, "--provider", "host", "--strategy", strategy, "--json"]
    if manifest:
        args += ["--digests", manifest]
    start = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if r.returncode != 0:
        raise SystemExit(f"load failed: {' '.join(args)}\n{r.stderr}")
    return json.loads(r.stdout)["seconds"], wall


def hash_alone(path):
    """SHA-256 of one file on one core, as fast as Python's OpenSSL binding goes: 256 KiB reads into fresh
    buffers (a reused 16-byte-aligned buffer copies slower)."""
    sha = hashlib.sha256()
    start = time.perf_counter()
    with open(path, "rb", buffering=0) as f:
        while True:
            chunk = f.read(256 << 10)
            if not chunk:
                break
            sha.update(chunk)
    return time.perf_counter() - start


def main():
    args = parse_args(__doc__, "rootspan-verified-bench")
    exe, work, repeat = args.exe, args.work, args.repeat
    os.makedirs(work, exist_ok=True)
    checkpoints = make_checkpoints(work)
    manifests = {}
    for label, folder in checkpoints.items():
        manifests[label] = os.path.join(work, label.replace(" ", "_") + ".digests.json")
        subprocess.run([exe, "hash", folder, "-o", manifests[label]], check=True, capture_output=True)
    cold = can_drop_caches()
    print(f"cores: {os.cpu_count()}; repeat {repeat}; cold runs: {'yes' if cold else 'skipped (needs root)'}")

    # Hashing alone, one core, warm: each file once to warm it, then timed.
    hashing = {}
    for label, folder in checkpoints.items():
        files = sorted(p for p in os.listdir(folder) if p.endswith(".safetensors"))
        for name in files:
            hash_alone(os.path.join(folder, name))
        times = [hash_alone(os.path.join(folder, n)) for n in files]
        size = os.path.getsize(os.path.join(folder, files[0]))
        hashing[label] = max(times)
        print(f"{label}: SHA-256 of the largest file alone on one core: {max(times):.3f} s "
              f"({size / max(times) / 1e9:.2f} GB/s); all files one after another: {sum(times):.3f} s")

    modes = ["warm"] + (["cold"] if cold else [])
    results = {}
    for _ in range(repeat):
        for label, folder in checkpoints.items():
            for strategy in ("mmap", "read"):
                for mode in modes:
                    for verified in (False, True):
                        if mode == "cold":
                            drop_caches()
                        else:
                            load_seconds(exe, folder, strategy, manifests[label] if verified else None)
                        seconds, _ = load_seconds(exe, folder, strategy, manifests[label] if verified else None)
                        results.setdefault((label, strategy, mode, verified), []).append(seconds)

    print()
    print(f"{'checkpoint':<20} {'strategy':<8} {'cache':<5} {'unverified s':>13} {'verified s':>11} "
          f"{'ratio':>6} {'vs max(load, hash)':>19}")
    for label in checkpoints:
        for strategy in ("mmap", "read"):
            for mode in modes:
                plain = results[(label, strategy, mode, False)]
                checked = results[(label, strategy, mode, True)]
                p, v = statistics.median(plain), statistics.median(checked)
                bound = max(p, hashing[label])
                print(f"{label:<20} {strategy:<8} {mode:<5} {p:>7.3f} ±{(max(plain) - min(plain)) / 2:<5.3f} "
                      f"{v:>6.3f} ±{(max(checked) - min(checked)) / 2:<5.3f} {v / p:>5.2f}x {v / bound:>18.2f}x")
    print("\nratio: verified / unverified; last column: verified / max(unverified, hash of the largest file alone "
          "on one core) - the goal is at most 1.10 given one core per file")


if __name__ == "__main__":
    main()
