#!/usr/bin/python3
"""Cold loads against the storage, measured in one run (docs/cold-start.md).

Writes two checkpoints under a work folder: one 1 GiB single-tensor file and
one file of 205 tensors (1 GiB in all, sizes from 64 KiB to 55 MiB, as a
transformer's layers are). Then, interleaved and repeated, with the page
cache dropped before every run (root only: otherwise it says so and exits)
and --settle seconds of waiting after it, it times:
  - fio (Debian's) reading the file: direct io_uring, 4 MiB blocks, 16 in
    flight; and buffered pread, 1 MiB blocks, one at a time;
  - the fresh-memory baselines: the same two ways of reading, into memory
    mapped fresh for the run (whose first touch fio, reusing its buffers,
    never pays);
  - rootspan load --provider host with each strategy: mmap with --populate
    (the mapping read in: touched memory), mmap with --verify, read and
    direct (each on pread threads, the default, and on io_uring), and auto
    (untouched zero-copy unless the file system says otherwise).
Each rootspan figure is the wall time of the whole command (start-up,
opening the checkpoint and the load); fio's is the runtime of its reads as
it reports it, without its start-up. Prints the median and
spread of each, its ratio to the best fio median of the run, and for the
copying strategies its ratio to max(best fio, fresh-memory baseline of the
same kind of read); the goal is at most 1.10.

usage: cold_load_bench.py ROOTSPAN_EXE [WORK_DIR] [--repeat N] [--before EARLIER_EXE] [--settle S]
"""
import concurrent.futures
import json
import mmap
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bench_checkpoints import can_drop_caches, drop_caches, parse_args, write_safetensors  # noqa: E402

GIB = 1 << 30
MIB = 1 << 20


def many_tensors():
    """205 tensors, 1 GiB in all: 41 layers of an 18 MiB, a 4 MiB and two 1 MiB tensors and a 64 KiB norm, then
    filler to make up the GiB."""
    tensors, total = [], 0
    for layer in range(41):
        for name, size in (("mlp", 18 * MIB), ("attn", 4 * MIB), ("q", MIB), ("k", MIB), ("norm", 64 << 10)):
            tensors.append((f"layers.{layer}.{name}.weight", size))
            total += size
    tensors[-1] = (tensors[-1][0], tensors[-1][1] + GIB - total)
    return tensors


def make_checkpoints(work):
    files = {"1 GiB, 1 tensor": os.path.join(work, "single.safetensors"),
             "1 GiB, 205 tensors": os.path.join(work, "many.safetensors")}
    if not os.path.exists(files["1 GiB, 1 tensor"]):
        write_safetensors(files["1 GiB, 1 tensor"], [("w", GIB)])
    if not os.path.exists(files["1 GiB, 205 tensors"]):
        write_safetensors(files["1 GiB, 205 tensors"], many_tensors())
    return files


def timed(args):
    start = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if r.returncode != 0:
        raise SystemExit(f"failed: {' '.join(args)}\n{r.stdout}\n{r.stderr}")
    return wall, r.stdout


def fio(path, direct):
    """fio's own runtime of the reads (its JSON report): its start-up, some 0.4 s here, is left out, while
    rootspan's figures are whole commands."""
    args = ["fio", "--name=cold", f"--filename={path}", "--rw=read", "--output-format=json"]
    args += (["--ioengine=io_uring", "--direct=1", "--bs=4m", "--iodepth=16"] if direct else
             ["--ioengine=psync", "--direct=0", "--bs=1m", "--iodepth=1"])
    out = timed(args)[1]
    report = json.loads(out[out.index("{"):out.rindex("}") + 1])
    return report["jobs"][0]["read"]["runtime"] / 1000


def fresh_memory(path, direct):
    """The same reads as fio's, into memory mapped fresh for the run."""
    size = os.path.getsize(path)
    start = time.perf_counter()
    memory = mmap.mmap(-1, (size + 4095) // 4096 * 4096)
    view = memoryview(memory)
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
    try:
        if direct:  # 4 MiB blocks, 16 in flight
            def read(offset):
                return os.preadv(fd, [view[offset:offset + 4 * MIB]], offset)
            with concurrent.futures.ThreadPoolExecutor(16) as pool:
                list(pool.map(read, range(0, size, 4 * MIB)))
        else:  # 1 MiB blocks, one at a time
            for offset in range(0, size, MIB):
                os.preadv(fd, [view[offset:offset + MIB]], offset)
    finally:
        os.close(fd)
    seconds = time.perf_counter() - start
    view.release()
    memory.close()
    return seconds


def rootspan(exe, path, strategy, extra=(), engine=None):
    args = [exe, "load", path, "--provider", "host", "--strategy", strategy, "--json", *extra]
    if engine:
        args = ["env", f"ROOTSPAN_READ_ENGINE={engine}"] + args
    wall, out = timed(args)
    return wall, json.loads(out)["read"]


def main():
    def options(parser):
        parser.add_argument("--before", metavar="EXE",
                            help="an earlier rootspan program: its `load --strategy read` runs beside")
        parser.add_argument("--settle", type=float, default=6, metavar="S",
                            help="seconds to wait after each drop of the page cache (default 6): on a virtual "
                                 "machine that reports free pages to its host, memory freed a moment ago fills "
                                 "faster than memory a program meets after a real restart")
    args = parse_args(__doc__, "rootspan-cold-bench", options)
    exe, work, repeat = args.exe, args.work, args.repeat
    if not can_drop_caches():
        print("cold mode skipped: dropping the page cache (/proc/sys/vm/drop_caches) needs root")
        return
    have_fio = shutil.which("fio") is not None
    os.makedirs(work, exist_ok=True)
    files = make_checkpoints(work)
    cases = {}
    if have_fio:
        cases["fio direct io_uring 4M x16"] = ("fio", lambda p: fio(p, True))
        cases["fio buffered pread 1M x1"] = ("fio", lambda p: fio(p, False))
    cases["fresh memory: direct 4M x16"] = ("fresh direct", lambda p: fresh_memory(p, True))
    cases["fresh memory: buffered 1M x1"] = ("fresh buffered", lambda p: fresh_memory(p, False))
    chosen = {}

    def load(strategy, *extra, engine=None):
        def run(path):
            wall, report = rootspan(exe, path, strategy, extra, engine)
            chosen[(path, strategy, extra, engine)] = report
            return wall
        return run
    cases["rootspan mmap --populate"] = ("mmap", load("mmap", "--populate"))
    cases["rootspan mmap --verify"] = ("mmap", load("mmap", "--verify"))
    if args.before:
        before = os.path.abspath(args.before)
        cases["before: read (earlier program)"] = ("read", lambda p: timed(
            [before, "load", p, "--provider", "host", "--strategy", "read", "--json"])[0])
    cases["rootspan read"] = ("read", load("read"))
    cases["rootspan read, io_uring"] = ("read", load("read", engine="io_uring"))
    cases["rootspan direct"] = ("direct", load("direct"))
    cases["rootspan direct, io_uring"] = ("direct", load("direct", engine="io_uring"))
    cases["rootspan auto"] = ("auto", load("auto"))

    print(f"cores: {os.cpu_count()}; repeat {repeat}; page cache dropped before every run, then {args.settle:g} s "
          f"of waiting; work folder {work}")
    if not have_fio:
        print("fio not found (apt-get install fio): ratios are against the fresh-memory baselines only")
    results = {}
    for _ in range(repeat):
        for label, path in files.items():
            for name, (_, run) in cases.items():
                drop_caches()
                time.sleep(args.settle)
                results.setdefault((label, name), []).append(run(path))

    for label, path in files.items():
        med = {name: statistics.median(results[(label, name)]) for name in cases}
        fio_best = min((med[n] for n, (kind, _) in cases.items() if kind == "fio"), default=None)
        fresh = {"read": med["fresh memory: buffered 1M x1"], "direct": med["fresh memory: direct 4M x16"]}
        print(f"\n{label} ({os.path.getsize(path)} bytes)")
        print(f"{'':<32} {'median s':>9} {'spread':>7} {'GB/s':>6} {'/ best fio':>11} {'/ max(fio, fresh)':>18}")
        for name, (kind, _) in cases.items():
            times = results[(label, name)]
            m = med[name]
            vs_fio = f"{m / fio_best:.2f}x" if fio_best else "-"
            bound = None
            if kind in fresh:
                bound = max(fio_best or 0, fresh[kind])
            vs_bound = f"{m / bound:.2f}x" if bound else "-"
            print(f"{name:<32} {m:>9.3f} {max(times) - min(times):>7.3f} {os.path.getsize(path) / m / 1e9:>6.2f} "
                  f"{vs_fio:>11} {vs_bound:>18}")
        auto = chosen.get((path, "auto", (), None))
        if auto:
            print(f"auto chose {auto['strategy']}: {auto['reason']}")
        direct = chosen.get((path, "direct", (), None))
        if direct and direct["reads"]:
            r = direct["reads"]
            print(f"direct: {r['engine']}, {r['direct_bytes']} bytes direct, {r['bounced_bytes']} bounced, "
                  f"peak {r['peak_requests_in_flight']} reads / {r['peak_bytes_in_flight']} bytes in flight"
                  + "".join(f"; fell back: {f['file']}: {f['reason']}" for f in r["fallbacks"]))
    print("\nspread: max - min over the runs. The goal: mmap --populate within 1.10 of the best fio figure; read "
          "and direct within 1.10 of max(best fio, the fresh-memory baseline of the same kind of read).")


if __name__ == "__main__":
    main()
