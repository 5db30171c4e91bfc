#!/usr/bin/env bash
# The Python suite under today's numpy and torch (CI runs it after the main
# pass; Debian's numpy 1.24 and torch 1.13 run it inside `meson test`):
#   1. a virtual environment from bindings/python/requirements.txt (pip's
#      cache serves later runs; ROOTSPAN_VENV names another folder);
#   2. the package from the source tree over BUILD_DIR's library: every
#      bindings/python/tests file, the parity tests against the reference
#      safetensors among them (test_library, the install test, runs in the
#      main pass only), and test_signed_models' interoperability tests with
#      the reference model_signing, which must not skip here
#      (ROOTSPAN_REQUIRE_MODEL_SIGNING=1);
#   3. `pip install .` into a second, fresh environment: the wheel's own
#      library, plugins, manifest and `rootspan` command, with no
#      environment variable set.
# Usage: tools/test-python-venv.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build="$(realpath "${1:-build}")"
venv="${ROOTSPAN_VENV:-$build/python-venv}"
python="${ROOTSPAN_VENV_PYTHON:-/usr/bin/python3}"

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r bindings/python/requirements.txt

echo "== Python suite, source tree, $("$venv/bin/python" -c 'import numpy, torch, safetensors; print(f"numpy {numpy.__version__}, torch {torch.__version__}, safetensors {safetensors.__version__}")')"
tests=()
for t in bindings/python/tests/test_*.py; do
  [ "$(basename "$t")" = test_library.py ] || tests+=("$t")
done
PYTHONPATH="$PWD/bindings/python:$PWD/bindings/python/tests" \
  ROOTSPAN_LIBRARY="$build/librootspan.so" \
  ROOTSPAN_EXAMPLE_CHECKPOINT="$build/tools/example-checkpoint" \
  ROOTSPAN_BUILD_ROOT="$build" \
  ROOTSPAN_BUILD_MANIFEST="$build/config/providers-build.json" \
  ROOTSPAN_REQUIRE_MODEL_SIGNING=1 \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "${tests[@]}"

echo "== pip install . into a fresh environment"
fresh="$build/python-wheel-venv"
rm -rf "$fresh"
"$python" -m venv "$fresh"
# The wheel is built in a kept folder, so that a second run only rebuilds what changed, and without
# optimization (what is checked here is what the wheel holds and how it finds it, not its speed; a release
# wheel is -O3, and compiling it so takes CI minutes it does not need).
"$fresh/bin/pip" install --quiet --disable-pip-version-check --config-settings=build-dir="$build/wheel-build" \
  --config-settings=setup-args=-Dbuildtype=plain .
(cd / && env -u ROOTSPAN_LIBRARY -u PYTHONPATH -u ROOTSPAN_MANIFEST "$fresh/bin/python" - "$build" <<'PY'
import os, subprocess, sys
import rootspan
here = os.path.dirname(rootspan.__file__)
assert rootspan.library_path().startswith(here), f"the library came from {rootspan.library_path()}, not the wheel"
print("rootspan", rootspan.__version__, "from", here)
from rootspan import _compiled  # the one compiled module, inside the wheel
compiled = _compiled.describe()
assert compiled is not None and compiled.__file__.startswith(here), compiled
from importlib.metadata import distribution  # built for the limited API: one wheel for this Python and later ones
tags = [line.split(": ", 1)[1] for line in distribution("rootspan").read_text("WHEEL").splitlines()
        if line.startswith("Tag: ")]
assert compiled.__file__.endswith(".abi3.so") and tags and all("-abi3-" in tag for tag in tags), (compiled, tags)
print("compiled module:", os.path.basename(compiled.__file__), "wheel tags:", tags)
# built by Python 3.11 or later, for that limited API, which has the buffer protocol numpy's arrays are made over
assert sys.version_info < (3, 11) or hasattr(compiled, "lease_memory"), "the wheel's module has no lease_memory"
with rootspan.Context() as ctx:  # the wheel's manifest, found beside its library
    reports = ctx.providers()
    assert any(r.name == "host" and r.state == "loaded" for r in reports), reports
    assert any(m.startswith(here) for m in ctx.manifests()), ctx.manifests()
    plugins = [r for r in reports if r.origin == "manifest" and r.library]
    assert plugins and all(r.library.startswith(here) for r in plugins), plugins  # the wheel's own plugins
    print("manifests:", ctx.manifests())
command = os.path.join(os.path.dirname(sys.executable), "rootspan")
out = subprocess.run([command, "version"], capture_output=True, text=True, check=True).stdout
assert rootspan.__version__ in out, out
checkpoint = os.path.join(sys.argv[1], "tools", "example-checkpoint")
subprocess.run([command, "load", checkpoint, "--provider", "host"], check=True, stdout=subprocess.DEVNULL)
from importlib.metadata import entry_points  # the wheel's vLLM load format (docs/engines.md)
points = [p.value for p in entry_points(group="vllm.general_plugins") if p.name == "rootspan"]
assert points == ["rootspan.vllm:register"], points
import rootspan.vllm  # without vLLM in this environment
assert "vllm" not in sys.modules
print("wheel: vllm.general_plugins entry point", points[0])
import rootspan.safetensors  # no numpy or torch in this environment: the header only
with rootspan.safetensors.safe_open(os.path.join(checkpoint, "model-00001-of-00002.safetensors"), "np") as f:
    print("wheel: rootspan.safetensors reads", len(f.keys()), "tensor names, metadata", f.metadata())
PY
)
