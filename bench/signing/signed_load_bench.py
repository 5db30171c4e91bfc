#!/usr/bin/env python3
"""The cost of a signed load (docs/signed-models.md), beside an unsigned one.

Writes a sharded safetensors checkpoint (plus a config.json), a digest
manifest and two signatures of it (files, and shards), then times, each in a
fresh `rootspan load` process with the page cache warm, rounds interleaved:

  unsigned (auto)       the default load: mmap, zero-copy, nothing hashed
  unsigned (read)       the same bytes copied, as a verified load copies them
  digests (manifest)    load --digests: a verified load of the same files
  signed, files         load --signature: one SHA-256 per file
  signed, shards        load --signature: one SHA-256 per shard
  sha256 largest file   `openssl dgst -sha256` of the largest file: the floor
                        of a whole-file signature, which hashes each file on
                        one core

and prints medians, spreads and each signed load's ratio to
max(unsigned read, sha256 of the largest file): the goal is at most 1.1.
Nothing fails on a timing.

Usage: bench/signing/signed_load_bench.py [--build build] [--gib 1.0]
       [--shards 3] [--rounds 5] [--shard-size BYTES] [--work DIR] [--smoke]
"""
import argparse
import json
import os
import pathlib
import statistics
import struct
import subprocess
import sys
import tempfile
import time


def write_safetensors(path, tensors):
    """tensors: [(name, nbytes)] of U8, filled with a pattern."""
    header, offset = {}, 0
    for name, nbytes in tensors:
        header[name] = {"dtype": "U8", "shape": [nbytes], "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        block = bytes(range(256)) * 4096  # 1 MiB
        left = offset
        while left:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n


def make_checkpoint(folder, total_bytes, shards):
    folder.mkdir(parents=True, exist_ok=True)
    # Shards of unequal size, the first the largest, as real ones often are.
    weights = [2] + [1] * (shards - 1)
    sizes = [total_bytes * w // sum(weights) // 4096 * 4096 for w in weights]
    index = {"metadata": {"total_size": sum(sizes)}, "weight_map": {}}
    for i, size in enumerate(sizes):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        tensors = [(f"layers.{i}.w{j}", size // 4) for j in range(4)]
        write_safetensors(folder / name, tensors)
        for t, _ in tensors:
            index["weight_map"][t] = name
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    (folder / "config.json").write_text(json.dumps({"model_type": "bench", "hidden_size": 4096}))
    return max(folder.glob("*.safetensors"), key=lambda p: p.stat().st_size)


def run(command, env):
    started = time.perf_counter()
    done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}): {' '.join(map(str, command))}\n{done.stderr}")
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--gib", type=float, default=1.0, help="checkpoint size")
    parser.add_argument("--shards", type=int, default=3, help="safetensors files")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shard-size", type=int, default=64 << 20, help="bytes per signed shard")
    parser.add_argument("--work", help="a folder for the checkpoint (default: a temporary one)")
    parser.add_argument("--smoke", action="store_true", help="a few MiB, one round: that every path runs")
    args = parser.parse_args()
    if args.smoke:
        args.gib, args.rounds, args.shard_size = 8 / 1024, 1, 1 << 20

    build = pathlib.Path(args.build).resolve()
    rootspan = build / "tools" / "rootspan"
    env = dict(os.environ, ROOTSPAN_MANIFEST=str(build / "config" / "providers-build.json"))
    work = pathlib.Path(args.work) if args.work else pathlib.Path(tempfile.mkdtemp(prefix="rootspan-signed-bench-"))
    model = work / "model"
    largest = make_checkpoint(model, int(args.gib * (1 << 30)), args.shards)
    key, pub = work / "key.pem", work / "key.pub"
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key], check=True)
    subprocess.run(["openssl", "ec", "-in", key, "-pubout", "-out", pub], check=True, stderr=subprocess.DEVNULL)
    files_sig, shards_sig, manifest = work / "files.sig", work / "shards.sig", work / "digests.json"
    subprocess.run([rootspan, "sign", model, "--private-key", key, "-o", files_sig], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    subprocess.run([rootspan, "sign", model, "--private-key", key, "--shards", "--shard-size", str(args.shard_size),
                    "-o", shards_sig], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run([rootspan, "hash", model, "-o", manifest], check=True, env=env, stdout=subprocess.DEVNULL)

    load = [rootspan, "load", model, "--provider", "host"]
    paths = {
        "unsigned (auto)": load,
        "unsigned (read)": load + ["--strategy", "read"],
        "digests (manifest)": load + ["--digests", manifest],
        "signed, files": load + ["--signature", files_sig, "--public-key", pub],
        "signed, shards": load + ["--signature", shards_sig, "--public-key", pub],
        "sha256 largest file": ["openssl", "dgst", "-sha256", largest],
    }
    for command in paths.values():  # warm the page cache and check every path runs
        run(command, env)
    times = {name: [] for name in paths}
    for _ in range(args.rounds):
        for name, command in paths.items():
            times[name].append(run(command, env))

    total = sum(p.stat().st_size for p in model.iterdir())
    print(f"checkpoint: {total / 1e9:.2f} GB in {args.shards} shards (largest {largest.stat().st_size / 1e9:.2f} GB) "
          f"+ config.json; shards of {args.shard_size} bytes; {args.rounds} rounds, page cache warm, "
          f"{os.cpu_count()} cores")
    median = {name: statistics.median(t) for name, t in times.items()}
    floor = max(median["unsigned (read)"], median["sha256 largest file"])
    print(f"{'path':<22}{'median s':>10}{'min s':>9}{'max s':>9}{'GB/s':>8}{'vs floor':>10}")
    for name, t in times.items():
        ratio = f"{median[name] / floor:.2f}x" if name.startswith(("signed", "digests")) else ""
        print(f"{name:<22}{median[name]:>10.3f}{min(t):>9.3f}{max(t):>9.3f}{total / median[name] / 1e9:>8.2f}{ratio:>10}")
    print("floor: max(unsigned (read), sha256 largest file) =", f"{floor:.3f} s; goal: signed at most 1.10x")


if __name__ == "__main__":
    main()
