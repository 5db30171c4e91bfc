#!/bin/sh
# Installs a fresh build of the source tree into a temporary prefix and runs
# the installed `rootspan providers` from there (issue 3, item 7): the
# installed manifest <datadir>/rootspan/manifest.d/10-rootspan.json must be
# found by L3 discovery with no environment variable, and the host plugin it
# names must be reported: skipped under L6 (a provider named "host" is already
# loaded: the static one), and loaded with --no-static.
#
# usage: install_test.sh SOURCE_ROOT [MESON]
# It configures and compiles the project once more (-Dtests=disabled, no
# optimization, one job), so it takes minutes; meson runs it in suite 'install'.
set -eu

source_root=${1:?usage: install_test.sh SOURCE_ROOT [MESON]}
meson=${2:-meson}
command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/rootspan-install-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
prefix=$work/prefix

"$meson" setup "$work/build" "$source_root" --prefix="$prefix" --buildtype=plain \
  -Dtests=disabled -Dbench=disabled -Dfuzz=disabled -Dcuda=disabled -Drocm=disabled >"$work/setup.log" 2>&1 ||
  { cat "$work/setup.log"; exit 1; }
"$meson" compile -C "$work/build" -j 1 >"$work/compile.log" 2>&1 || { tail -n 50 "$work/compile.log"; exit 1; }
"$meson" install -C "$work/build" --no-rebuild >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }

library=$(find "$prefix" -name 'librootspan.so.0' | head -n 1)
[ -n "$library" ] || { echo "librootspan.so.0 was not installed under $prefix"; exit 1; }

# Nothing from this user's or this machine's configuration: only the
# installed prefix's own manifest.d folders are left for L3 to find.
run_providers() {
  env -u ROOTSPAN_MANIFEST XDG_CONFIG_HOME="$work/no-config-home" XDG_CONFIG_DIRS="$work/no-config-dirs" \
    LD_LIBRARY_PATH="$(dirname "$library")" "$prefix/bin/rootspan" providers --json "$@"
}
run_providers >"$work/with-static.json"
run_providers --no-static >"$work/no-static.json"

python3 - "$prefix" "$work/with-static.json" "$work/no-static.json" <<'PY'
import json, os, sys

prefix, with_static, no_static = sys.argv[1:4]
manifest = os.path.join(prefix, "share", "rootspan", "manifest.d", "10-rootspan.json")
failures = []

def check(condition, what):
    if not condition:
        failures.append(what)

installed = json.load(open(manifest))["providers"][0]["library"]
check(os.path.isabs(installed) and installed.startswith(prefix + "/"), "plugin path inside the prefix: " + installed)
check(installed.endswith("/rootspan/plugins/librootspan-host.so") and os.path.isfile(installed),
      "the host plugin is installed under <libdir>/rootspan/plugins: " + installed)

report = json.load(open(with_static))
check(report["manifests"] == [manifest], "L3 found the installed manifest: %s" % report["manifests"])
providers = report["providers"]
static = [p for p in providers if p["origin"] == "static"]
plugin = [p for p in providers if p["origin"] == "manifest"]
check(len(static) == 1 and static[0]["name"] == "host" and static[0]["status"] == "loaded", "static host: %s" % static)
check(len(plugin) == 1, "one manifest provider: %s" % plugin)
if plugin:
    p = plugin[0]
    check(p["name"] == "host" and p["library"] == installed and p["manifest"] == manifest, "host plugin: %s" % p)
    check(p["status"] == "skipped" and p["policy"] == "L6", "skipped under L6: %s" % p)
    check("a provider named 'host' is already loaded" in (p["reason"] or ""), "duplicate name reason: %s" % p)

report = json.load(open(no_static))
providers = report["providers"]
check(report["manifests"] == [manifest], "--no-static: manifests %s" % report["manifests"])
check(len(providers) == 1, "--no-static: one provider: %s" % providers)
if providers:
    p = providers[0]
    check(p["name"] == "host" and p["origin"] == "manifest" and p["status"] == "loaded", "--no-static: %s" % p)
    check(p["abi"] == {"major": 1, "minor": 1} and len(p["devices"]) == 1, "--no-static abi/devices: %s" % p)

for f in failures:
    print("FAIL: " + f)
if failures:
    sys.exit(1)
print("installed rootspan found its manifest and host plugin under " + prefix)
PY
