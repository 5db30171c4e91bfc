#!/usr/bin/env python3
"""rootspan beside the loaders people pick, on checkpoints this script writes itself (issue 33).

usage:
  /work/venvs/peers/bin/python bench/peers/run.py [--build build] [--work DIR] [--rounds 3] [--no-cold]
                                                  [--llama-gb 2.5] [--smoke] [--out FILE] [--paths a,b,...]

The interpreter that runs this script runs every measurement: install bench/peers/requirements.txt into it
(safetensors 0.8, runai-model-streamer 0.17, fastsafetensors 0.5, torch, numpy). A peer that does not import
is skipped, and the output says so. rootspan comes from the source tree (bindings/python) over
BUILD/librootspan.so.

Checkpoints (written once under WORK, kept between runs; --smoke writes tiny ones):
  llama  Llama-3.2-1B-shaped, bf16, --llama-gb (default 2.5) in 3 shards, with an index
  moe    MoE-shaped, bf16, ~600 MB, 24 layers x 32 experts: ~2,500 tensors in 2 shards
  many   10,000 tensors of 16 F32 values in one file (the per-tensor cost)
  small  8 tensors, 256 KB (time to a first tensor)

Every measurement is a fresh process that loads every tensor to resident, usable memory: torch tensors for
the Python paths (numpy arrays for Context.load), then reads one byte of every page (so mapped loaders pay
their page faults; for the copying ones the pages are already there), and reports the load's time, the
touch's time (one C call over every tensor's range, bench/peers/touch.c, where a C compiler is found: the same
cost for 10,000 separate tensors as for views of one mapping), and its peak resident set (ru_maxrss) beside
the resident set before the load. The figure compared is load + touch. Rounds are interleaved: each round runs every path on every checkpoint once,
the paths in a rotated order. Warm: the files were read just before. Cold: the page cache is dropped
before each measurement (`sync; echo 3 > /proc/sys/vm/drop_caches`, as root), else each checkpoint file
is evicted with posix_fadvise(DONTNEED) (the output says which). Timings are never checked: a failed path
is reported, not fatal.

Also: the time to a first tensor in a fresh process (import, open, one tensor read) for safetensors and
the drop-in against plain Python reading the same bytes, and the cost per tensor handed to Python on the
10,000-tensor file: in the tables, a fresh process's one load; and in one process that has loaded before
(every Python path in one interpreter, interleaved rounds of the load alone, at least 5; with --before,
its paths in interpreters of their own, taking turns with the others). Results are
printed and, unless --smoke (or with --out), written to bench/results/peers-<date>.md.
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PAGE = os.sysconf("SC_PAGE_SIZE")

# name: (who, copies the bytes, what it runs)
PATHS = {
    "safetensors load_file": ("peer", False, "safetensors.torch.load_file per file (mmap backend)"),
    "safetensors safe_open": ("peer", False, "safe_open(framework='pt') + get_tensor of every key"),
    "safetensors pread": ("peer", True, "safetensors.torch.load_file(backend='pread') per file"),
    "runai streamer": ("peer", True, "SafetensorsStreamer().stream_files(files, device='cpu') + get_tensors()"),
    "fastsafetensors": ("peer", True, "fastsafe_open(files, device='cpu', nogds=True) + get_tensor of every key"),
    "drop-in load_file": ("rootspan", False, "rootspan.safetensors.torch.load_file per file"),
    "drop-in safe_open": ("rootspan", False, "rootspan.safetensors.safe_open + get_tensor of every key"),
    "torch.load auto": ("rootspan", False, "rootspan.torch.load(folder) (strategy auto)"),
    "torch.load mmap": ("rootspan", False, "rootspan.torch.load(folder, strategy='mmap')"),
    "torch.load read": ("rootspan", True, "rootspan.torch.load(folder, strategy='read')"),
    "torch.load direct": ("rootspan", True, "rootspan.torch.load(folder, strategy='direct')"),
    "Context.load": ("rootspan", False, "Context().load(folder) + numpy() of every component"),
    "C API": ("rootspan", False, "bench/peers/c_load.c: rootspan_weights_load (auto) + a mapping per component"),
    "CLI": ("rootspan", False, "build/tools/rootspan load --strategy auto --populate (wall time of the process)"),
}
BEFORE = " [before]"  # a rootspan Python path run over --before's copy of the package
NOT_PYTHON = ("C API", "CLI")  # paths that run no Python: none is measured in one process or over --before


def base(path_name):
    return path_name[:-len(BEFORE)] if path_name.endswith(BEFORE) else path_name


def info(path_name):
    return PATHS[base(path_name)]


# ---------------------------------------------------------------------------------------------- checkpoints

def _write_safetensors(path, tensors, dtype="BF16", block=None):
    """tensors: [(name, shape)]; bytes from a pseudo-random block (bf16 values of modest size)."""
    size = {"BF16": 2, "F32": 4}[dtype]
    header, offset = {}, 0
    for name, shape in tensors:
        n = size
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    if block is None:
        import random
        rng = random.Random(33)
        # bf16 of 1.0-ish values: sign 0/1, exponent near 127, random mantissa; 4 MiB repeated.
        block = b"".join(struct.pack("<H", (rng.getrandbits(1) << 15) | ((120 + rng.getrandbits(3)) << 7)
                                     | rng.getrandbits(7)) for _ in range(1 << 16)) * 32
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        left = offset
        while left:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
    os.replace(path + ".tmp", path)
    return offset


def _shard(folder, tensors, shards, dtype="BF16"):
    """Writes tensors into `shards` files of about equal size, with a model.safetensors.index.json."""
    itemsize = {"BF16": 2, "F32": 4}[dtype]
    nbytes = [itemsize * _prod(s) for _, s in tensors]
    target = sum(nbytes) / shards
    groups, current, size = [], [], 0
    for t, n in zip(tensors, nbytes):
        if current and size + n > target * 1.02 and len(groups) < shards - 1:
            groups.append(current)
            current, size = [], 0
        current.append(t)
        size += n
    groups.append(current)
    weight_map, total = {}, 0
    os.makedirs(folder, exist_ok=True)
    for i, group in enumerate(groups):
        name = f"model-{i + 1:05d}-of-{len(groups):05d}.safetensors"
        total += _write_safetensors(os.path.join(folder, name), group, dtype)
        weight_map.update({t: name for t, _ in group})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)


def _prod(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def llama_tensors(hidden, intermediate, layers, vocab, kv_heads=8, head_dim=64):
    t = [("model.embed_tokens.weight", (vocab, hidden))]
    for i in range(layers):
        p = f"model.layers.{i}."
        t += [(p + "input_layernorm.weight", (hidden,)),
              (p + "self_attn.q_proj.weight", (hidden, hidden)),
              (p + "self_attn.k_proj.weight", (kv_heads * head_dim, hidden)),
              (p + "self_attn.v_proj.weight", (kv_heads * head_dim, hidden)),
              (p + "self_attn.o_proj.weight", (hidden, hidden)),
              (p + "post_attention_layernorm.weight", (hidden,)),
              (p + "mlp.gate_proj.weight", (intermediate, hidden)),
              (p + "mlp.up_proj.weight", (intermediate, hidden)),
              (p + "mlp.down_proj.weight", (hidden, intermediate))]
    t.append(("model.norm.weight", (hidden,)))
    return t


def moe_tensors(hidden, expert_ffn, layers, experts, vocab):
    t = [("model.embed_tokens.weight", (vocab, hidden))]
    for i in range(layers):
        p = f"model.layers.{i}."
        t += [(p + "input_layernorm.weight", (hidden,)),
              (p + "self_attn.q_proj.weight", (hidden, hidden)),
              (p + "self_attn.k_proj.weight", (hidden // 4, hidden)),
              (p + "self_attn.v_proj.weight", (hidden // 4, hidden)),
              (p + "self_attn.o_proj.weight", (hidden, hidden)),
              (p + "post_attention_layernorm.weight", (hidden,)),
              (p + "mlp.gate.weight", (experts, hidden))]
        for e in range(experts):
            q = f"{p}mlp.experts.{e}."
            t += [(q + "gate_proj.weight", (expert_ffn, hidden)), (q + "up_proj.weight", (expert_ffn, hidden)),
                  (q + "down_proj.weight", (hidden, expert_ffn))]
    t += [("model.norm.weight", (hidden,)), ("lm_head.weight", (vocab, hidden))]
    return t


def checkpoint_specs(args):
    if args.smoke:
        return {
            "llama": {"kind": "llama", "shards": 2, "dims": (256, 1024, 2, 2048)},
            "many": {"kind": "many", "count": 1000},
            "small": {"kind": "small"},
        }
    # Llama-3.2-1B: hidden 2048, intermediate 8192, 16 layers, vocab 128256: 2.47 GB in bf16; layers scale it.
    per_layer = 2 * (2 * 2048 * 2048 + 2 * 512 * 2048 + 3 * 2048 * 8192 + 2 * 2048)
    embed = 2 * 128256 * 2048
    layers = max(1, round((args.llama_gb * 1e9 - embed) / per_layer))
    return {
        "llama": {"kind": "llama", "shards": 3, "dims": (2048, 8192, layers, 128256)},
        "moe": {"kind": "moe", "shards": 2, "dims": (512, 256, 24, 32, 32000)},
        "many": {"kind": "many", "count": 10000},
        "small": {"kind": "small"},
    }


def ensure_checkpoints(args):
    """{name: {"path": folder or file, "files": [...], "bytes": data bytes, "tensors": n}}, written when missing."""
    out = {}
    for name, spec in checkpoint_specs(args).items():
        folder = os.path.join(args.work, ("smoke-" if args.smoke else "") + name)
        stamp = os.path.join(folder, "spec.json")
        want = json.dumps(spec, sort_keys=True)
        if not (os.path.exists(stamp) and open(stamp).read() == want):
            if os.path.isdir(folder):
                for f in os.listdir(folder):
                    os.unlink(os.path.join(folder, f))
            os.makedirs(folder, exist_ok=True)
            print(f"writing checkpoint {name} under {folder}", flush=True)
            if spec["kind"] == "llama":
                _shard(folder, llama_tensors(*spec["dims"]), spec["shards"])
            elif spec["kind"] == "moe":
                _shard(folder, moe_tensors(*spec["dims"]), spec["shards"])
            elif spec["kind"] == "many":
                _write_safetensors(os.path.join(folder, "model.safetensors"),
                                   [(f"model.layers.{i}.w", (16,)) for i in range(spec["count"])], "F32")
            else:
                _write_safetensors(os.path.join(folder, "model.safetensors"),
                                   [(f"w{i}", (128, 128)) for i in range(8)], "F32")
            with open(stamp, "w") as f:
                f.write(want)
        files = sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".safetensors"))
        count, nbytes = 0, 0
        for path in files:
            with open(path, "rb") as f:
                (n,) = struct.unpack("<Q", f.read(8))
                header = json.loads(f.read(n))
            header.pop("__metadata__", None)
            count += len(header)
            nbytes += sum(v["data_offsets"][1] - v["data_offsets"][0] for v in header.values())
        out[name] = {"path": folder, "files": files, "bytes": nbytes, "tensors": count}
    return out


# -------------------------------------------------------------------------------------------------- workers

def _merged_ranges(pairs):
    pairs = sorted(p for p in pairs if p[1] > 0)
    merged = []
    for ptr, n in pairs:
        if merged and ptr <= merged[-1][0] + merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], ptr + n - last[0]))
        else:
            merged.append((ptr, n))
    return merged


def _toucher(touch_library):
    """prepare(pairs) -> touch(): touch() reads one byte of every page of every (address, nbytes) range of
    pairs, so that mapped memory becomes resident, and returns the sum of those bytes; prepare is off the clock.
    With touch_library (touch.c, built by run.py), one C call for every range: the touch costs what the pages
    cost. Without it (no C compiler), numpy over each run of adjacent ranges: one Python step a run, which a
    loader of many separate small tensors pays and one of views of one mapping does not (the output says
    which touch ran)."""
    if touch_library:
        touch_ranges = ctypes.CDLL(touch_library).touch_ranges
        touch_ranges.restype = ctypes.c_uint64
        touch_ranges.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64]

        def prepare(pairs):
            count = len(pairs)
            addresses = (ctypes.c_uint64 * count)(*(p for p, _ in pairs))
            lengths = (ctypes.c_uint64 * count)(*(n for _, n in pairs))
            return lambda: touch_ranges(addresses, lengths, count, PAGE)
        return prepare

    import numpy

    def prepare(pairs):
        arrays = [numpy.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(ptr)) for ptr, n in _merged_ranges(pairs)]
        return lambda: sum(int(a[::PAGE].sum(dtype=numpy.uint64)) + int(a[-1]) for a in arrays)
    return prepare


def _torch_pairs(tensors):
    return [(t.data_ptr(), t.numel() * t.element_size()) for t in tensors.values()]


def _rss():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _import_for(path_name):
    """The modules a path needs, imported before any clock starts (every path needs torch and numpy; none is
    charged for importing them)."""
    import torch  # noqa: F401
    import numpy  # noqa: F401
    if path_name.startswith(("drop-in", "torch.load", "Context")):
        import rootspan.safetensors.torch  # noqa: F401
        import rootspan.torch  # noqa: F401
    elif path_name.startswith("safetensors"):
        import safetensors.torch  # noqa: F401
    elif path_name == "runai streamer":
        from runai_model_streamer import SafetensorsStreamer  # noqa: F401
    elif path_name == "fastsafetensors":
        from fastsafetensors import fastsafe_open  # noqa: F401


def load_with(path_name, checkpoint, files, keep):
    """Every tensor of the checkpoint through one path: {name: torch tensor}, or for Context.load {id: numpy
    array}. keep: a list the caller holds for what must outlive the call (a handle whose buffers the tensors
    are views of)."""
    import numpy
    if path_name == "safetensors load_file":
        import safetensors.torch as st
        tensors = {}
        for f in files:
            tensors.update(st.load_file(f))
    elif path_name == "safetensors pread":
        import safetensors.torch as st
        tensors = {}
        for f in files:
            tensors.update(st.load_file(f, backend="pread"))
    elif path_name in ("safetensors safe_open", "drop-in safe_open"):
        if path_name.startswith("drop-in"):
            import rootspan.safetensors as module
        else:
            import safetensors as module
        tensors = {}
        for f in files:
            with module.safe_open(f, framework="pt") as handle:
                for k in handle.keys():
                    tensors[k] = handle.get_tensor(k)
    elif path_name == "drop-in load_file":
        import rootspan.safetensors.torch as dt
        tensors = {}
        for f in files:
            tensors.update(dt.load_file(f))
    elif path_name.startswith("torch.load"):
        import rootspan.torch
        tensors = rootspan.torch.load(checkpoint, strategy=path_name.split()[-1])
    elif path_name == "Context.load":
        import rootspan
        ctx = rootspan.Context()
        weights = ctx.load(checkpoint)
        tensors = {cid: c.numpy() if c.numpy_dtype is not None else c.numpy(dtype=numpy.uint8)
                   for cid, c in weights.items()}  # bf16: its bytes (numpy has no bfloat16)
        keep.append((ctx, weights))
    elif path_name == "runai streamer":
        from runai_model_streamer import SafetensorsStreamer
        tensors = {}
        with SafetensorsStreamer() as streamer:
            streamer.stream_files(files, device="cpu")
            for name, tensor in streamer.get_tensors():
                tensors[name] = tensor
    elif path_name == "fastsafetensors":
        from fastsafetensors import fastsafe_open
        tensors = {}
        handle = fastsafe_open(files, device="cpu", nogds=True)
        f = handle.__enter__()
        keep.append(handle)  # the tensors are views of its buffers: kept open while they are used
        for k in f.keys():
            tensors[k] = f.get_tensor(k)
    else:
        raise SystemExit(f"unknown path {path_name!r}")
    return tensors


def worker(path_name, checkpoint, files, touch_library):
    """One measurement, in this (fresh) process; prints one JSON line. The tensors' addresses are taken off the
    clock: the touch's time is the pages'."""
    _import_for(path_name)
    prepare_touch = _toucher(touch_library)
    keep = []
    base = _rss()
    start = time.perf_counter()
    tensors = load_with(path_name, checkpoint, files, keep)
    loaded = time.perf_counter()
    if path_name == "Context.load":
        pairs = [(a.ctypes.data, a.nbytes) for a in tensors.values()]
    else:
        pairs = _torch_pairs(tensors)
    touch = prepare_touch(pairs)
    touch_start = time.perf_counter()
    checksum = touch()
    touched = time.perf_counter()
    print(json.dumps({"load_s": loaded - start, "touch_s": touched - touch_start, "rss_peak": _rss(), "rss_base": base,
                      "tensors": len(tensors), "bytes": sum(n for _, n in pairs), "checksum": checksum}), flush=True)
    os._exit(0)  # the measurement is taken: no teardown (same for every path)


def in_process_worker(path_names, checkpoint, files, rounds):
    """The cost per tensor handed to Python once a process has loaded before (no first-call costs): every
    path loads the checkpoint once, then `rounds` interleaved rounds each time every path's load alone
    (the tensors dropped after each). Prints {path: [seconds per load]}."""
    import gc
    for p in path_names:
        _import_for(p)
    times = {p: [] for p in path_names}
    for rnd in range(rounds + 1):
        order = path_names[rnd % len(path_names):] + path_names[:rnd % len(path_names)]
        for p in order:
            keep = []
            gc.collect()
            start = time.perf_counter()
            tensors = load_with(p, checkpoint, files, keep)
            elapsed = time.perf_counter() - start
            del tensors, keep
            if rnd:  # round 0 only warms every path up
                times[p].append(elapsed)
    print(json.dumps(times), flush=True)
    os._exit(0)


def first_tensor_worker(kind, path):
    """Time to a first tensor in this fresh process: the module's import, open, one tensor read (torch is
    imported before the clock: both loaders hand out torch tensors; the plain read needs none)."""
    if kind != "plain":
        import torch  # noqa: F401
    start = time.perf_counter()
    if kind == "plain":  # the file's own cost: the header parsed, one tensor's bytes read
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
            name = next(k for k in header if k != "__metadata__")
            begin, end = header[name]["data_offsets"]
            f.seek(8 + n + begin)
            data = f.read(end - begin)
        value = data[0]
    else:
        if kind == "safetensors":
            from safetensors import safe_open
        else:
            from rootspan.safetensors import safe_open
        with safe_open(path, framework="pt") as f:
            tensor = f.get_tensor(next(iter(f.keys())))
            value = int(tensor.view(-1)[0].item() != 0)
    elapsed = time.perf_counter() - start
    print(json.dumps({"first_s": elapsed, "value": int(value)}), flush=True)
    os._exit(0)


# --------------------------------------------------------------------------------------------------- driver

def environment(args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "bindings", "python") + (os.pathsep + env["PYTHONPATH"]
                                                                    if env.get("PYTHONPATH") else "")
    env["ROOTSPAN_LIBRARY"] = os.path.join(args.build, "librootspan.so")
    env["LD_LIBRARY_PATH"] = args.build + (os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")
    # Compiled once, as an installed package is: a fresh process must not pay for compiling rootspan's
    # sources when the peers' own are installed compiled (PYTHONDONTWRITEBYTECODE would make it pay every time).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for folder in [os.path.join(ROOT, "bindings", "python", "rootspan")] + ([args.before] if args.before else []):
        subprocess.run([sys.executable, "-m", "compileall", "-q", folder], env=env, check=False,
                       stdout=subprocess.DEVNULL)
    return env


def available_paths(args, env):
    """{path: None (runs) or the reason it is skipped}."""
    probes = {"safetensors": "import safetensors, safetensors.torch; assert safetensors.__version__",
              "runai": "from runai_model_streamer import SafetensorsStreamer",
              "fastsafetensors": "from fastsafetensors import fastsafe_open",
              "rootspan": "import rootspan.torch, rootspan.safetensors.torch",
              "pread": "import inspect, safetensors.torch as s; "
                       "assert 'backend' in inspect.signature(s.load_file).parameters"}
    ok = {}
    for name, code in probes.items():
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        ok[name] = None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["failed"])[-1]
    out = {}
    for p, (who, _, _) in PATHS.items():
        need = ("rootspan" if who == "rootspan" else "runai" if p.startswith("runai") else "fastsafetensors"
                if p.startswith("fast") else "safetensors")
        reason = ok[need]
        if reason is None and p == "safetensors pread":
            reason = ok["pread"] and "safetensors has no backend='pread'"
        if p == "C API" and not args.c_load:
            reason = "no C compiler"
        if p == "CLI" and not os.path.exists(os.path.join(args.build, "tools", "rootspan")):
            reason = "no build/tools/rootspan"
        out[p] = reason
    return out, ok


def build_c(args, source, flags, what):
    """bench/peers/SOURCE compiled into WORK with the C compiler ($CC, else cc): its path, or None (said)."""
    built = os.path.join(args.work, os.path.splitext(source)[0] + (".so" if "-shared" in flags else ""))
    cc = os.environ.get("CC", "cc")
    try:
        r = subprocess.run([cc, "-O2", os.path.join(HERE, source), *flags, "-o", built], capture_output=True,
                           text=True)
    except OSError as e:
        print(f"{what}: {cc} failed: {e}")
        return None
    if r.returncode != 0:
        print(f"{what}: {cc} failed: {r.stderr.strip()[-500:]}")
        return None
    return built


def before_note(args):
    """What the output must say about the [before] paths, or None: a --before-library whose folder holds no
    compiled module (bindings/python/_describe*, which a build makes beside its library) sends the binding
    it loads to ctypes, a slower path than that build's own (rootspan/_compiled.py), unless --before is an
    installed package with the module inside."""
    if not args.before or not args.before_library:
        return None
    folder = os.path.join(os.path.dirname(args.before_library), "bindings", "python")
    installed = os.path.join(args.before, "rootspan")  # an installed package holds its own
    import importlib.machinery
    if any(os.path.isfile(os.path.join(f, "_describe" + suffix))
           for f in (folder, installed) for suffix in importlib.machinery.EXTENSION_SUFFIXES):
        return None
    return (f"no compiled module in {folder}: the [before] paths describe components through ctypes, slower "
            "than that build would; copy the library and its build's bindings/python/_describe* together")


def evict(files, how):
    if how == "drop_caches":
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    else:
        for path in files:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def warm(files):
    for path in files:
        with open(path, "rb") as f:
            while f.read(64 << 20):
                pass


def cold_method():
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return "drop_caches"
    except OSError:
        return "fadvise"


def measure(args, env, path_name, ckpt):
    """One fresh-process measurement: a dict, or {"error": ...}."""
    if path_name == "CLI":
        cmd = [os.path.join(args.build, "tools", "rootspan"), "load", ckpt["path"], "--provider", "host",
               "--strategy", "auto", "--populate"]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
        if os.waitstatus_to_exitcode(status) != 0:
            return {"error": err.strip()[-300:]}
        return {"load_s": elapsed, "touch_s": 0.0, "rss_peak": usage.ru_maxrss * 1024, "rss_base": 0,
                "tensors": ckpt["tensors"], "bytes": ckpt["bytes"]}
    if path_name.endswith(BEFORE):
        env = before_env(args, env)
    if path_name == "C API":
        cmd = [args.c_load, ckpt["path"], "auto"]
    else:
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", path_name, "--checkpoint", ckpt["path"],
               "--files", os.pathsep.join(ckpt["files"])] + (["--touch", args.touch] if args.touch else [])
    return _json_of(cmd, env, args.timeout)


def _json_of(cmd, env, timeout):
    """The JSON line a worker process prints last, or {"error": ...} when it failed or printed none."""
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        return {"error": (r.stderr.strip() or r.stdout.strip())[-300:]}
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "no result: " + r.stdout[-200:] + r.stderr[-200:]}


def before_env(args, env):
    """The environment of a [before] path: the package as it was, and its library where one was given."""
    env = dict(env, PYTHONPATH=args.before)
    if args.before_library:
        env["ROOTSPAN_LIBRARY"] = args.before_library
    return env


def in_process(args, env, ckpt, paths):
    """{path: [seconds per load]} of the Python paths measured in one process (in_process_worker), or
    {"error": ...}. The [before] paths are measured in processes of their own, over the package as it was,
    the two sides taking turns (two processes each; one in smoke mode), so that neither meets a quieter
    machine throughout. Where only the [before] side fails, its rows are left out and the failure printed."""
    now = [p for p in paths if p not in NOT_PYTHON and not p.endswith(BEFORE)]
    was = [base(p) for p in paths if p.endswith(BEFORE)]  # Python paths only (run)
    if not now:
        return {}
    rounds = 1 if args.smoke else max(args.rounds, 5)
    sides = [(now, env, "")] + ([(was, before_env(args, env), BEFORE)] if was else [])
    merged = {}
    for _ in range(2 if was and not args.smoke else 1):
        for names, side_env, tag in list(sides):
            got = _json_of([sys.executable, os.path.abspath(__file__), "--in-process", ",".join(names), "--rounds",
                            str(rounds), "--checkpoint", ckpt["path"], "--files", os.pathsep.join(ckpt["files"])],
                           side_env, args.timeout)
            if "error" in got:
                if not tag:
                    return got
                print(f"in one process, the [before] paths failed: {got['error'][-200:]}", flush=True)
                sides.remove((names, side_env, tag))
                merged = {p: t for p, t in merged.items() if not p.endswith(BEFORE)}
                continue
            for path_name, times in got.items():
                merged.setdefault(path_name + tag, []).extend(times)
    return merged


def spread(values):
    return (max(values) - min(values)) / statistics.median(values) if len(values) > 1 else 0.0


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}x"


def run(args):
    env = environment(args)
    os.makedirs(args.work, exist_ok=True)
    args.c_load = build_c(args, "c_load.c", ["-I", os.path.join(ROOT, "abi"), "-L", args.build, "-lrootspan"],
                          "C API path skipped")
    args.touch = build_c(args, "touch.c", ["-shared", "-fPIC"], "numpy touch instead of touch.c")
    avail, probes = available_paths(args, env)
    paths = [p for p in (args.paths.split(",") if args.paths else PATHS) if p in PATHS]
    skipped = {p: avail[p] for p in paths if avail[p] is not None}
    paths = [p for p in paths if avail[p] is None]
    if args.before:  # each rootspan Python path again over the package as it was
        paths += [p + BEFORE for p in paths if p in args.before_paths.split(",") and p not in NOT_PYTHON]
    for p, why in skipped.items():
        print(f"skipped: {p}: {why}")
    args.before_note = before_note(args)
    if args.before_note:
        print("note: " + args.before_note)
    ckpts = ensure_checkpoints(args)
    loads = {k: v for k, v in ckpts.items() if k in ("llama", "moe", "many")}
    modes = ["warm"] + ([] if args.no_cold else ["cold"])
    how = cold_method() if "cold" in modes else None
    first = first_tensor(args, env, ckpts["small"], probes)
    partial = None if args.smoke else os.path.join(args.work, "partial.md")
    results = {}  # (mode, ckpt, path) -> [measurement]
    errors = {}
    for mode in modes:
        rounds = args.rounds if mode == "warm" or args.cold_rounds is None else args.cold_rounds
        for rnd in range(rounds):
            order = paths[rnd % len(paths):] + paths[:rnd % len(paths)]  # rotated: no path always first
            for cname, ckpt in loads.items():
                if mode == "cold" and cname not in args.cold_checkpoints.split(","):
                    continue
                if mode == "warm":
                    warm(ckpt["files"])
                for p in order:
                    if mode == "cold" and p.endswith(BEFORE) and not args.before_library:
                        continue  # the binding's changes alone are CPU work: before/after is measured warm
                    if mode == "cold":
                        evict(ckpt["files"], how)
                        time.sleep(args.cold_settle)
                    m = measure(args, env, p, ckpt)
                    if "error" in m:
                        errors[(mode, cname, p)] = m["error"]
                        print(f"  {mode} {cname} {p}: FAILED: {m['error'][-200:]}", flush=True)
                        continue
                    results.setdefault((mode, cname, p), []).append(m)
                    print(f"  round {rnd + 1} {mode:4} {cname:5} {p:24} {m['load_s'] + m['touch_s']:8.3f} s",
                          flush=True)
            if partial:  # what is measured so far, should the run be stopped before its end
                with open(partial, "w") as f:
                    f.write(render(args, ckpts, paths, skipped, results, errors, modes, how, first, probes, {}))
    steady = in_process(args, env, ckpts["many"], paths)
    report = render(args, ckpts, paths, skipped, results, errors, modes, how, first, probes, steady)
    print(report)
    out = args.out or (None if args.smoke else os.path.join(
        ROOT, "bench", "results", f"peers-{datetime.date.today().isoformat()}.md"))
    if out:
        with open(out, "w") as f:
            f.write(report)
        print(f"written: {out}")
    broken = sorted({p for (_, _, p) in errors if info(p)[0] == "rootspan"})
    if broken:  # a rootspan path that fails to load is a bug (a peer that fails is only reported)
        print("rootspan paths that failed: " + ", ".join(broken))
        return 1
    return 0


def first_tensor(args, env, ckpt, probes):
    kinds = ["plain"] + (["safetensors"] if probes["safetensors"] is None else []) + \
        (["rootspan"] if probes["rootspan"] is None else [])
    times = {k: [] for k in kinds}
    walls = {k: [] for k in kinds}
    for _ in range(max(args.rounds, 5) if not args.smoke else 1):
        for k in kinds:
            start = time.perf_counter()
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--first", k, "--checkpoint",
                                ckpt["files"][0]], env=env, capture_output=True, text=True)
            wall = time.perf_counter() - start
            if r.returncode == 0:
                times[k].append(json.loads(r.stdout.strip().splitlines()[-1])["first_s"])
                walls[k].append(wall)
    return {k: (times[k], walls[k]) for k in kinds if times[k]}


def render(args, ckpts, paths, skipped, results, errors, modes, how, first, probes, steady):
    lines = [f"# rootspan beside the peers ({datetime.datetime.now().isoformat(timespec='minutes')})", ""]
    lines.append(f"`{' '.join([os.path.relpath(__file__, ROOT)] + sys.argv[1:])}`; Python {platform.python_version()}"
                 f", {os.cpu_count()} CPUs; {args.rounds} interleaved round(s); each load a fresh process to resident "
                 "tensors (one byte of every page read, "
                 + ("in one C call for all ranges" if args.touch else "by numpy, one step a run of adjacent ranges")
                 + "); time = load + touch (the CLI: the process's wall time, --populate).")
    try:
        import importlib.metadata as md
        vers = []
        for dist in ("torch", "numpy", "safetensors", "runai-model-streamer", "fastsafetensors"):
            try:
                vers.append(f"{dist} {md.version(dist)}")
            except md.PackageNotFoundError:
                vers.append(f"{dist} absent")
        lines.append("Versions: " + ", ".join(vers) + ".")
    except ImportError:
        pass
    if "cold" in modes:
        lines.append(f"Cold: {'`sync; echo 3 > /proc/sys/vm/drop_caches` before each measurement' if how == 'drop_caches' else 'posix_fadvise(DONTNEED) of each checkpoint file before each measurement (not root)'}"
                     + (f", then {args.cold_settle:g} s of waiting." if args.cold_settle else "."))
    if skipped:
        lines.append("Skipped: " + "; ".join(f"{p} ({why})" for p, why in skipped.items()) + ".")
    if args.before_note:
        lines.append("Note: " + args.before_note + ".")
    lines.append("")
    lines.append("| checkpoint | files | tensors | bytes |")
    lines.append("|---|---|---|---|")
    for name, c in ckpts.items():
        lines.append(f"| {name} | {len(c['files'])} | {c['tensors']:,} | {c['bytes'] / 1e6:,.1f} MB |")
    for mode in modes:
        for cname in ("llama", "moe", "many"):
            if cname not in ckpts:
                continue
            ck = ckpts[cname]
            rows = {}
            for p in paths:
                ms = results.get((mode, cname, p))
                if ms:
                    tot = [m["load_s"] + m["touch_s"] for m in ms]
                    rows[p] = {"median": statistics.median(tot), "spread": spread(tot),
                               "load": statistics.median(m["load_s"] for m in ms),
                               "rss": max(m["rss_peak"] for m in ms),
                               "rss_growth": max(m["rss_peak"] - m["rss_base"] for m in ms) if ms[0]["rss_base"] else None}
            if not rows:
                continue
            peers = {p: r for p, r in rows.items() if info(p)[0] == "peer"}
            best_peer = min(peers, key=lambda p: peers[p]["median"]) if peers else None
            copying = {p: r for p, r in peers.items() if info(p)[1]}
            best_copy = min(copying, key=lambda p: copying[p]["median"]) if copying else None
            lines += ["", f"## {cname}, {mode} ({ck['bytes'] / 1e6:,.0f} MB, {ck['tensors']:,} tensors)", ""]
            lines.append(f"Best peer: {best_peer or '-'}; best copying peer: {best_copy or '-'}.")
            lines.append("")
            lines.append("| path | median s | spread | GB/s | load s | µs/tensor | peak RSS MB | RSS growth MB | "
                         "vs best peer | vs best copying peer |")
            lines.append("|---|---|---|---|---|---|---|---|---|---|")
            for p, r in rows.items():
                vs = r["median"] / peers[best_peer]["median"] if best_peer and info(p)[0] == "rootspan" else None
                vc = r["median"] / copying[best_copy]["median"] if best_copy and info(p)[0] == "rootspan" and \
                    info(p)[1] else None
                growth = "-" if r["rss_growth"] is None else f"{r['rss_growth'] / 2**20:,.0f}"
                lines.append(f"| {p} | {r['median']:.4f} | {r['spread'] * 100:.0f}% | "
                             f"{ck['bytes'] / r['median'] / 1e9:.2f} | {r['load']:.4f} | "
                             f"{r['load'] / ck['tensors'] * 1e6:.1f} | {r['rss'] / 2**20:,.0f} | {growth} | "
                             f"{fmt_ratio(vs)} | {fmt_ratio(vc)} |")
    failed = {k: v for k, v in errors.items()}
    if failed:
        lines += ["", "Failures:"]
        for (mode, cname, p), e in failed.items():
            lines.append(f"- {mode} {cname} {p}: `{e.splitlines()[-1] if e else ''}`")
    if first:
        lines += ["", "## Time to a first tensor (fresh process: import, safe_open, one tensor; "
                  f"{ckpts['small']['bytes'] // 1024} KB file)", "",
                  "| who | median ms (in process) | process wall ms |", "|---|---|---|"]
        for k, (t, w) in first.items():
            lines.append(f"| {k} | {statistics.median(t) * 1e3:.1f} | {statistics.median(w) * 1e3:.1f} |")
    if steady:
        lines += ["", f"## Per tensor handed to Python, in one process ({ckpts['many']['tensors']:,} tensors; "
                  "every path loaded once first, then interleaved rounds of the load alone"
                  + ("; the [before] paths in processes of their own, taking turns with the others'"
                     if any(p.endswith(BEFORE) for p in steady) else "") + ")", ""]
        if "error" in steady:
            lines.append(f"Failed: `{steady['error'].splitlines()[-1] if steady['error'] else ''}`")
        else:
            per = {p: [t / ckpts["many"]["tensors"] * 1e6 for t in ts] for p, ts in steady.items()}
            peers = [p for p in per if info(p)[0] == "peer"]
            best = min(peers, key=lambda p: statistics.median(per[p])) if peers else None
            lines += [f"Best peer: {best or '-'}.", "", "| path | median µs/tensor | spread | vs best peer |",
                      "|---|---|---|---|"]
            for p, us in per.items():
                vs = statistics.median(us) / statistics.median(per[best]) if best and info(p)[0] == "rootspan" \
                    else None
                lines.append(f"| {p} | {statistics.median(us):.2f} | {spread(us) * 100:.0f}% | {fmt_ratio(vs)} |")
    lines += ["", "Spread: (slowest - fastest) / median. RSS growth: peak resident set minus the resident set "
              "before the load (after imports). µs/tensor: load time / tensors.", ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--work", default=None, help="where checkpoints are written (default /work/benchdata/peers "
                        "when /work exists, else a temporary folder)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-cold", action="store_true")
    parser.add_argument("--llama-gb", type=float, default=2.5)
    parser.add_argument("--smoke", action="store_true", help="tiny checkpoints, 1 round, warm only")
    parser.add_argument("--out", default=None)
    parser.add_argument("--paths", default=None, help="comma-separated path names (default: all)")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--before", default=None, help="a copy of bindings/python as it was (e.g. `git worktree`): "
                        "each rootspan Python path is measured over it too, as 'PATH [before]', in the same rounds "
                        "(in one process: in processes of its own, taking turns with the others')")
    parser.add_argument("--before-library", default=None, help="with --before: the librootspan.so the 'PATH "
                        "[before]' runs load (a library built as it was); then they are measured cold too")
    parser.add_argument("--before-paths", default="drop-in load_file,drop-in safe_open,torch.load auto,"
                        "torch.load read,Context.load", help="the paths measured over --before too (its Python "
                        "paths: the C API and the CLI have no binding to change)")
    parser.add_argument("--cold-rounds", type=int, default=None, help="rounds of the cold runs (default --rounds)")
    parser.add_argument("--cold-settle", type=float, default=0, help="seconds to wait after the page cache is "
                        "dropped: a virtual machine reports the freed pages to its hypervisor within seconds, and only "
                        "then is fresh memory as slow to fill as on a machine that has run a while (docs/cold-start.md)")
    parser.add_argument("--cold-checkpoints", default="llama,moe", help="checkpoints measured cold")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--first", help=argparse.SUPPRESS)
    parser.add_argument("--in-process", help=argparse.SUPPRESS)
    parser.add_argument("--checkpoint", help=argparse.SUPPRESS)
    parser.add_argument("--files", help=argparse.SUPPRESS)
    parser.add_argument("--touch", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(base(args.worker), args.checkpoint, args.files.split(os.pathsep), args.touch)
    if args.first:
        return first_tensor_worker(args.first, args.checkpoint)
    if args.in_process:
        return in_process_worker(args.in_process.split(","), args.checkpoint, args.files.split(os.pathsep),
                                 args.rounds)
    args.build = os.path.abspath(args.build)
    if args.before_library:  # the binding finds its compiled module beside an absolute library path only
        args.before_library = os.path.abspath(args.before_library)
    if args.work is None:
        import tempfile
        args.work = "/work/benchdata/peers" if os.path.isdir("/work") else os.path.join(tempfile.gettempdir(),
                                                                                         "rootspan-peers")
    if args.smoke:
        args.rounds, args.no_cold = 1, True
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
