#!/usr/bin/env python3
"""Two builds of librootspan, or two settings of one, side by side on what the
header parse and the per-tensor path weigh on.

Each side's processes load that side's library (ROOTSPAN_LIBRARY) with that
side's environment settings (--before-env, --after-env; PYTHONPATH among them
runs another copy of the Python package), in fresh
processes, alternating, for --rounds rounds. Each process times, on every file
given: describing the file (rootspan.inspect.describe_safetensors_file), the
drop-in's safe_open with keys(), with its first tensor, and with every tensor,
its load_file, rootspan.torch.load, and Context.load with numpy() of every
component; each the median of --calls calls after
one unmeasured call. It says which compiled module (rootspan._describe) each
side used, and warns when only one side had one. The library measured first alternates from round to round. Prints the median over the rounds of each, before and
after, their ratio, and each side's spread ((slowest - fastest) / median).

usage: library_ab.py --before OLD/librootspan.so --after NEW/librootspan.so FILE.safetensors [...]
       [--rounds 4] [--calls 7] [--before-env NAME=VALUE ...] [--after-env NAME=VALUE ...]
e.g. the Python package's compiled module off and on, over one library:
       library_ab.py --before build/librootspan.so --before-env ROOTSPAN_PYTHON_EXTENSION=off \
                     --after build/librootspan.so FILE.safetensors
     or two versions of the package (a `git worktree` of the earlier one) over one library, both using the
     compiled module that library's build made (so only the Python code differs):
       library_ab.py --before build/librootspan.so --before-env PYTHONPATH=OLD/bindings/python \
                     --after build/librootspan.so --after-env PYTHONPATH=bindings/python FILE.safetensors
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def child(files, calls):
    """In the measured process: {"<file name> <operation>": median ms}."""
    import rootspan.safetensors.torch as drop_in
    import rootspan.torch
    from rootspan.inspect import describe_safetensors_file

    context = rootspan.Context()

    def arrays(path):  # numpy has no bfloat16: such a component's bytes
        import numpy
        with context.load(path) as weights:
            return [c.numpy() if c.numpy_dtype is not None else c.numpy(dtype=numpy.uint8) for c in weights.values()]

    def timed(operation):
        operation()
        runs = []
        for _ in range(calls):
            start = time.perf_counter()
            result = operation()
            runs.append(time.perf_counter() - start)
            del result
        return round(statistics.median(runs) * 1e3, 3)

    def opened(path, take):
        with drop_in.safe_open(path, "pt") as f:
            return take(f)

    out = {}
    for path in files:
        operations = {
            "describe": lambda: describe_safetensors_file(path),
            "safe_open + keys": lambda: opened(path, lambda f: f.keys()),
            "safe_open + first tensor": lambda: opened(path, lambda f: f.get_tensor(f.keys()[0])),
            "safe_open + every tensor": lambda: opened(path, lambda f: {k: f.get_tensor(k) for k in f.keys()}),
            "load_file": lambda: drop_in.load_file(path),
            "rootspan.torch.load": lambda: rootspan.torch.load(path),
            "Context.load + numpy()": lambda: arrays(path),
        }
        for name, operation in operations.items():
            out[f"{path} {name}"] = timed(operation)
    from rootspan import _compiled
    compiled = _compiled.describe()  # found beside the library's build folder, or installed, or none
    print(json.dumps({"times": out, "compiled": getattr(compiled, "__file__", None)}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="the earlier librootspan.so")
    parser.add_argument("--after", required=True, help="the later librootspan.so")
    for side in ("before", "after"):
        parser.add_argument(f"--{side}-env", action="append", default=[], metavar="NAME=VALUE",
                            help=f"an environment setting of the {side} processes (repeatable)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    if args.child:
        return child(args.files, args.calls)
    libraries = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    settings = {"before": args.before_env, "after": args.after_env}
    environments = {}
    for side, library in libraries.items():
        if not os.path.isfile(library):
            sys.exit(f"--{side}: no library at {library}")
        environments[side] = dict(os.environ, ROOTSPAN_LIBRARY=library)
        for setting in settings[side]:
            name, equals, value = setting.partition("=")
            if not name or not equals:
                sys.exit(f"--{side}-env: expected NAME=VALUE, got {setting!r}")
            environments[side][name] = value
    times = {side: {} for side in libraries}
    compiled = {side: set() for side in libraries}  # the compiled module each side's processes used
    for round_number in range(args.rounds):
        # before first in even rounds, after first in odd ones: neither always meets a fresher cache
        order = list(libraries.items())
        for side, _ in order if round_number % 2 == 0 else reversed(order):
            run = subprocess.run([sys.executable, __file__, "--child", "--before", args.before, "--after", args.after,
                                  "--calls", str(args.calls)] + args.files,
                                 env=environments[side], capture_output=True, text=True)
            if run.returncode != 0:
                sys.exit(f"the {side} process failed:\n{run.stderr}")
            measured = json.loads(run.stdout)
            compiled[side].add(measured["compiled"])
            for name, ms in measured["times"].items():
                times[side].setdefault(name, []).append(ms)

    def spread(values):
        median = statistics.median(values)
        return (max(values) - min(values)) / median * 100 if median else 0.0

    # A library outside a build folder finds no compiled module beside it, and its side describes components
    # through ctypes, several milliseconds slower on thousands: say so, or the ratio measures that instead.
    for side, modules in compiled.items():
        print(f"{side}: compiled module {', '.join(m or 'none (ctypes)' for m in sorted(modules, key=str))}")
    if any(None in modules for modules in compiled.values()) and not all(modules == {None}
                                                                         for modules in compiled.values()):
        print("warning: one side ran without the compiled module (rootspan._describe) and the other with it: "
              "the ratios weigh that too (put <library folder>/bindings/python/_describe*.so beside a copied "
              "library, or set ROOTSPAN_PYTHON_EXTENSION=off on both sides)")
    width = max(len(name) for name in times["before"])
    print(f"{'ms, median of ' + str(args.rounds) + ' rounds':{width}} {'before':>9} {'after':>9} {'ratio':>6}  spread")
    for name, before in times["before"].items():
        after = times["after"][name]
        b, a = statistics.median(before), statistics.median(after)
        ratio = f"{a / b:6.2f}" if b else "     -"
        print(f"{name:{width}} {b:9.2f} {a:9.2f} {ratio}  {spread(before):.0f}% / {spread(after):.0f}%")


if __name__ == "__main__":
    main()
