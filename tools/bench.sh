#!/usr/bin/env bash
# Builds and runs every benchmark beside its baselines, then writes
# bench/results/latest.json and bench/results/latest.md (figures and ratios).
# Usage: tools/bench.sh [BUILD_DIR [rootspan_bench options...]]
#   e.g. tools/bench.sh build --quick     (small files: under a minute)
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build}"
shift || true
[ -d "$build" ] || meson setup "$build" -Dbench=enabled >/dev/null
meson configure "$build" -Dbench=enabled >/dev/null
ninja -C "$build" bench/rootspan_bench plugins/host/librootspan-host.so
"$build/bench/rootspan_bench" --results=bench/results "$@"
