#!/usr/bin/env bash
# Quick start, part 2: build and run the whole test suite.
# Usage: tools/test.sh [BUILD_DIR [extra meson setup options...]]
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/install-deps.sh
build="${1:-build}"
shift || true
[ -d "$build" ] || meson setup "$build" -Dtests=enabled "$@" >/dev/null
ninja -C "$build"
# ROOTSPAN_TEST_ARGS: extra `meson test` arguments (CI leaves the install
# suite out of the sanitizer run: it builds the project a third time).
meson test -C "$build" --print-errorlogs --num-processes 2 ${ROOTSPAN_TEST_ARGS:-}
