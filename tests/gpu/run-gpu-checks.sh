#!/usr/bin/env bash
# Runs the GPU checks on a machine with an NVIDIA GPU, from a build made
# elsewhere and carried over (docs/writing-a-provider.md, issue 4):
#
#   tests/gpu/run-gpu-checks.sh [--allow-no-device] [BUILD_DIR]
#
# BUILD_DIR defaults to build-gpu at the repository root. Without a CUDA device
# the checks fail (this script is for a GPU machine), unless --allow-no-device
# (a dry run: everything else still runs).
#
# The GPU machine has the driver, CUDA and Python, but maybe no meson, no Boost,
# no nlohmann/json and no package registry: nothing is rebuilt. The script runs
# the already-built binaries with LD_LIBRARY_PATH set to the build folder:
#   1. what the machine has (nvidia-smi), and that every binary's libraries
#      resolve (ldd);
#   2. `rootspan providers` on a manifest naming the built CUDA plugin;
#   3. the GoogleTest suite gpu_tests (the ROCm cases only where libamdhip64
#      resolves);
#   4. gpu_bandwidth: pinned and pageable copies, provider against cudaMemcpy.
# With GPU_CHECKS_OUT=DIR every step's output is kept there (DIR/STEP.log).
# Environment: GPU_BANDWIDTH_BYTES (default 268435456), GPU_BANDWIDTH_REPS (10).
# Exit status: 0 when every step passed, else 1.
set -u

require_device=1
if [ "${1:-}" = "--allow-no-device" ]; then
  require_device=0
  shift
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build-gpu}
if [ ! -d "$build" ]; then
  echo "run-gpu-checks: no build folder $build (build with: meson setup build-gpu -Dtests=enabled && ninja -C build-gpu)" >&2
  exit 1
fi
build=$(cd "$build" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rootspan-gpu-checks-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
logs=${GPU_CHECKS_OUT:-$tmp/logs}
mkdir -p "$logs"

cuda_plugin=$build/plugins/cuda/librootspan-cuda.so
rocm_plugin=$build/plugins/rocm/librootspan-rocm.so
gpu_tests=$build/tests/gpu/gpu_tests
bandwidth=$build/tests/gpu/gpu_bandwidth
rootspan=$build/tools/rootspan

export LD_LIBRARY_PATH="$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export ROOTSPAN_CUDA_PLUGIN=$cuda_plugin
export ROOTSPAN_ROCM_PLUGIN=$rocm_plugin

failures=()
# step NAME COMMAND...: runs a command, shows its output and keeps it in
# $logs/NAME.log, notes a failure.
step() {
  local name=$1
  shift
  echo
  echo "=== $name: $*"
  "$@" 2>&1 | tee "$logs/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "=== $name: exit $rc"
  [ "$rc" -eq 0 ] || failures+=("$name (exit $rc)")
  return "$rc"
}

# ---- 1. the machine and the binaries ---------------------------------------------
for f in "$cuda_plugin" "$gpu_tests" "$bandwidth"; do
  if [ ! -f "$f" ]; then
    echo "run-gpu-checks: missing $f: was the build made with the CUDA toolkit and -Dtests=enabled?" >&2
    exit 1
  fi
done
machine() {
  uname -a
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.total --format=csv
  else
    echo "nvidia-smi: not found"
  fi
}
step machine machine

libraries() {
  local missing=0
  for f in "$cuda_plugin" "$gpu_tests" "$bandwidth" "$rootspan"; do
    [ -f "$f" ] || continue
    local unresolved
    unresolved=$(ldd "$f" 2>&1 | grep -E "not found" || true)
    if [ -n "$unresolved" ]; then
      echo "$f:"
      echo "$unresolved"
      missing=1
    fi
  done
  if ldd "$cuda_plugin" | grep -q libcudart; then
    echo "$cuda_plugin needs libcudart.so: it should link the static CUDA runtime"
    missing=1
  fi
  [ "$missing" -eq 0 ] && echo "every library resolves"
  return "$missing"
}
step libraries libraries || { echo "run-gpu-checks: fix the libraries above first" >&2; exit 1; }

# ---- 2. the providers report ----------------------------------------------------------
cat >"$tmp/gpu-manifest.json" <<EOF
{
  "file_format_version": "1.0.0",
  "providers": [
    {"name": "cuda", "kind": "cuda", "library": "$cuda_plugin",
     "abi": {"major": 1, "minor": 1}, "enabled": true, "priority": 100, "options": {}}
  ]
}
EOF
if [ -x "$rootspan" ]; then
  step providers "$rootspan" providers --manifest "$tmp/gpu-manifest.json"
fi

# ---- 3. the test suite -------------------------------------------------------------------
# The ROCm plugin needs libamdhip64, which an NVIDIA machine usually lacks.
filter='-*/rocm'
if [ -f "$rocm_plugin" ] && ! ldd "$rocm_plugin" | grep -q "not found"; then
  filter='*'
fi
step gpu_tests "$gpu_tests" --gtest_color=no "--gtest_filter=$filter"

# ---- 4. bandwidth --------------------------------------------------------------------------
step bandwidth "$bandwidth" --bytes "${GPU_BANDWIDTH_BYTES:-268435456}" --reps "${GPU_BANDWIDTH_REPS:-10}"
# The bandwidth program exits 0 with "no CUDA device: <reason>" when there is
# none; on the machine this script is for, that is a failure.
if [ "$require_device" -eq 1 ] && grep -q "^no CUDA device" "$logs/bandwidth.log"; then
  failures+=("$(grep -m1 '^no CUDA device' "$logs/bandwidth.log") (pass --allow-no-device for a dry run)")
fi

echo
if [ "${#failures[@]}" -ne 0 ]; then
  echo "run-gpu-checks: FAILED:"
  printf '  %s\n' "${failures[@]}"
  exit 1
fi
echo "run-gpu-checks: all passed"
