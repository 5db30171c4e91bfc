#!/usr/bin/env bash
# Quick start, part 1: install what is missing, build, and run the main job on
# the built-in host provider.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/install-deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build

echo
echo "== rootspan providers (the build folder's manifest: every plugin this build made)"
./build/tools/rootspan providers --manifest build/config/providers-build.json
echo
echo "== host-memory example"
./build/tools/rootspan-host-example
echo
echo "== rootspan load (the example checkpoint the build wrote: two shards, a schema with a packed component)"
./build/tools/rootspan load build/tools/example-checkpoint --schema build/tools/example-checkpoint/schema.json --verify
