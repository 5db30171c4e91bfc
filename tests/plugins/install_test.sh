#!/bin/sh
# Installs a fresh build of the source tree into a temporary prefix and runs
# the installed `rootspan providers` from there: the installed manifest
# <datadir>/rootspan/manifest.d/10-rootspan.json must be found by L3 discovery
# with no environment variable, be valid against the installed
# manifest.schema.json, and list every provider plugin the build installed
# (host, and cuda and rocm where this machine builds them), each with its
# priority, the device plugins above the host. Each listed plugin must be
# reported: the host skipped under L6 beside the static one (loaded with
# --no-static), a device plugin loaded with its devices or "no device" with
# the runtime's reason.
#
# Then it embeds the installed library as another project would (issue 8):
# the headers and librootspan.so with its SONAME links are there, and
# installed_embed.c, which loads the example checkpoint and finds a component
# by id, is built with nothing but `pkg-config --cflags --libs rootspan`, and
# again with CMake's find_package(rootspan) and rootspan::rootspan, also from
# a copy of the prefix moved elsewhere. Each build runs and its output must
# match the checkpoint's bytes. The installed Python package must find the
# library through the libdir it recorded. Without cmake only the CMake part
# is skipped (exit 77 at the end).
#
# usage: install_test.sh SOURCE_ROOT [MESON]
# It configures and compiles the project once more (-Dtests=disabled, no
# optimization, on every core: meson runs it alone; the device plugins as
# this machine allows, since listing what was built is what is tested), so it
# takes minutes; meson runs it in suite 'install'.
set -eu

source_root=${1:?usage: install_test.sh SOURCE_ROOT [MESON]}
meson=${2:-meson}
# Debian's own Python first: tools/install-deps.sh installs python3-jsonschema for it.
python3=/usr/bin/python3
[ -x "$python3" ] || python3=$(command -v python3) || { echo "python3 not found: skipped"; exit 77; }
"$python3" -c 'import jsonschema' 2>/dev/null ||
  { echo "python3 has no jsonschema module (Debian: python3-jsonschema; tools/install-deps.sh installs it)"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/rootspan-install-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
prefix=$work/prefix

"$meson" setup "$work/build" "$source_root" --prefix="$prefix" --buildtype=plain \
  -Dtests=disabled -Dbench=disabled -Dfuzz=disabled >"$work/setup.log" 2>&1 ||
  { cat "$work/setup.log"; exit 1; }
"$meson" compile -C "$work/build" >"$work/compile.log" 2>&1 || { tail -n 50 "$work/compile.log"; exit 1; }
"$meson" install -C "$work/build" --no-rebuild >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }

library=$(find "$prefix" -name 'librootspan.so.0' | head -n 1)
[ -n "$library" ] || { echo "librootspan.so.0 was not installed under $prefix"; exit 1; }

# Nothing from this user's or this machine's configuration: only the
# installed prefix's own manifest.d folders are left for L3 to find.
run_providers() {
  env -u ROOTSPAN_MANIFEST XDG_CONFIG_HOME="$work/no-config-home" XDG_CONFIG_DIRS="$work/no-config-dirs" \
    LD_LIBRARY_PATH="$(dirname "$library")" "$prefix/bin/rootspan" providers --json "$@"
}
"$meson" introspect "$work/build" --targets >"$work/targets.json"
run_providers >"$work/with-static.json"
run_providers --no-static >"$work/no-static.json"

"$python3" - "$prefix" "$work/targets.json" "$work/with-static.json" "$work/no-static.json" <<'PY'
import json, os, sys

import jsonschema

prefix, targets, with_static, no_static = sys.argv[1:5]
manifest = os.path.join(prefix, "share", "rootspan", "manifest.d", "10-rootspan.json")
schema = os.path.join(prefix, "share", "rootspan", "manifest.schema.json")
failures = []

def check(condition, what):
    if not condition:
        failures.append(what)

# What the build installed as provider plugins, by name: {"cuda": path, ...}.
built = {}
for t in json.load(open(targets)):
    for f in t.get("install_filename") or []:
        if t.get("installed") and "/rootspan/plugins/" in f:
            built[os.path.basename(f)[len("librootspan-"):-len(".so")]] = f
check("host" in built, "the host plugin is built and installed: %s" % built)

document = json.load(open(manifest))
try:
    jsonschema.validate(document, json.load(open(schema)))
except jsonschema.ValidationError as e:
    check(False, "the installed manifest is valid against manifest.schema.json: %s" % e.message)
entries = {e["name"]: e for e in document["providers"]}
check(sorted(entries) == sorted(built), "the manifest lists every built plugin, no other: listed %s, built %s"
      % (sorted(entries), sorted(built)))
for name, e in entries.items():
    library = e["library"]
    check(e["kind"] == name and e.get("enabled") is True, "entry %s: kind and enabled: %s" % (name, e))
    check(os.path.isabs(library) and library.startswith(prefix + "/"), "plugin path inside the prefix: " + library)
    check(library.endswith("/rootspan/plugins/librootspan-%s.so" % name) and os.path.isfile(library),
          "plugin %s is installed under <libdir>/rootspan/plugins: %s" % (name, library))
    check(library == built.get(name), "entry %s names the installed file %s: %s" % (name, built.get(name), library))
    if name == "host":
        check(e["priority"] == 0, "host priority 0: %s" % e)
    else:
        check(isinstance(e["priority"], int) and e["priority"] > 0, "%s outranks the host: %s" % (name, e))

def check_device_plugin(p, what):
    if p["status"] == "loaded":
        check(len(p["devices"]) > 0 and p["reason"] is None, "%s: loaded with devices: %s" % (what, p))
    else:
        check(p["status"] == "no device" and p["devices"] == [] and p["reason"], "%s: no device, with the "
              "runtime's reason: %s" % (what, p))

report = json.load(open(with_static))
check(report["manifests"] == [manifest], "L3 found the installed manifest: %s" % report["manifests"])
providers = report["providers"]
static = [p for p in providers if p["origin"] == "static"]
plugin = {p["name"]: p for p in providers if p["origin"] == "manifest"}
check(len(static) == 1 and static[0]["name"] == "host" and static[0]["status"] == "loaded", "static host: %s" % static)
check(sorted(plugin) == sorted(built), "every installed plugin is reported: %s" % sorted(plugin))
for name, p in plugin.items():
    check(p["library"] == entries.get(name, {}).get("library") and p["manifest"] == manifest, "%s plugin: %s" % (name, p))
    check(p["priority"] == entries.get(name, {}).get("priority"), "%s priority as listed: %s" % (name, p))
    if name == "host":
        check(p["status"] == "skipped" and p["policy"] == "L6", "skipped under L6: %s" % p)
        check("a provider named 'host' is already loaded" in (p["reason"] or ""), "duplicate name reason: %s" % p)
    else:
        check_device_plugin(p, name)

report = json.load(open(no_static))
providers = {p["name"]: p for p in report["providers"]}
check(report["manifests"] == [manifest], "--no-static: manifests %s" % report["manifests"])
check(sorted(providers) == sorted(built), "--no-static: one provider per plugin: %s" % sorted(providers))
host = providers.get("host", {})
check(host.get("origin") == "manifest" and host.get("status") == "loaded", "--no-static host: %s" % host)
check(host.get("abi") == {"major": 1, "minor": 1} and len(host.get("devices", [])) == 1,
      "--no-static host abi/devices: %s" % host)
for name, p in providers.items():
    if name != "host":
        check_device_plugin(p, "--no-static " + name)

for f in failures:
    print("FAIL: " + f)
if failures:
    sys.exit(1)
print("installed rootspan found its manifest and its %d plugins (%s) under %s" % (len(built), ", ".join(sorted(built)),
                                                                              prefix))
PY

# ---- embedding the installed library -------------------------------------
libdir=$(dirname "$library")
for header in rootspan.h weights.h types.h provider.h; do
  [ -f "$prefix/include/rootspan/$header" ] || { echo "FAIL: $prefix/include/rootspan/$header was not installed"; exit 1; }
done
[ -f "$libdir/librootspan.so.0.7.0" ] && [ ! -L "$libdir/librootspan.so.0.7.0" ] ||
  { echo "FAIL: $libdir/librootspan.so.0.7.0 is not the installed library file"; ls -l "$libdir"; exit 1; }
[ "$(readlink "$libdir/librootspan.so.0")" = librootspan.so.0.7.0 ] &&
  [ "$(readlink "$libdir/librootspan.so")" = librootspan.so.0 ] ||
  { echo "FAIL: SONAME links librootspan.so -> .so.0 -> .so.0.7.0 missing"; ls -l "$libdir"; exit 1; }

example=$work/build/tools/example-checkpoint
schema=$example/schema.json
program=$source_root/tests/plugins/installed_embed.c
# What installed_embed must print for component ID made of the source
# tensors NAMES (in the example checkpoint, read here byte by byte).
expect() {
  "$python3" - "$example" "$@" <<'PY'
import json, os, struct, sys

folder, cid, dtype, shape, role = sys.argv[1:6]
names = sys.argv[6:]
weight_map = json.load(open(os.path.join(folder, "model.safetensors.index.json")))["weight_map"]
data = b""
for name in names:
    with open(os.path.join(folder, weight_map[name]), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        begin, end = json.loads(f.read(n))[name]["data_offsets"]
        f.seek(8 + n + begin)
        data += f.read(end - begin)
print("%s %s %s %d %s %s" % (cid, dtype, shape, len(data), role, data[:16].hex()))
PY
}
check_output() {  # WHAT EXPECTED ACTUAL
  [ "$2" = "$3" ] || { printf 'FAIL: %s printed\n  %s\nexpected\n  %s\n' "$1" "$3" "$2"; exit 1; }
  echo "ok: $1: $3"
}

# pkg-config: the .pc of this prefix and nothing else.
pc=$libdir/pkgconfig/rootspan.pc
[ -f "$pc" ] || { echo "FAIL: $pc was not installed"; exit 1; }
pc_prefix=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --variable=prefix rootspan)
[ "$pc_prefix" = "$prefix" ] || { echo "FAIL: pkg-config found rootspan with prefix '$pc_prefix', not $prefix"; exit 1; }
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs rootspan)
"${CC:-cc}" -std=c99 -pedantic -Wall -Werror "$program" $flags -o "$work/embed-pkg-config" ||
  { echo "FAIL: cc $program $flags"; exit 1; }
expected=$(expect layers.0.mlp.gate_up F32 "[2,64,32]" packed_values \
  model.layers.0.mlp.gate_proj.weight model.layers.0.mlp.up_proj.weight)
actual=$(LD_LIBRARY_PATH="$libdir" "$work/embed-pkg-config" "$example" layers.0.mlp.gate_up "$schema")
check_output "the pkg-config build" "$expected" "$actual"
if LD_LIBRARY_PATH="$libdir" "$work/embed-pkg-config" "$example" no.such.component "$schema" 2>"$work/absent.txt"; then
  echo "FAIL: finding an absent component succeeded"; exit 1
fi
grep -q 'no component "no.such.component": NotFound' "$work/absent.txt" ||
  { echo "FAIL: absent component message: $(cat "$work/absent.txt")"; exit 1; }

# Python: the installed package, given only its own site folder and no
# LD_LIBRARY_PATH, finds librootspan.so.0 through the libdir recorded at
# install time, and L3 finds the installed manifest.
python=/usr/bin/python3
[ -x "$python" ] || python=python3
install_paths=$(find "$prefix" -path '*/rootspan/_install_paths.py' | head -n 1)
[ -n "$install_paths" ] || { echo "FAIL: the Python package was not installed under $prefix"; exit 1; }
env -u ROOTSPAN_LIBRARY -u LD_LIBRARY_PATH -u ROOTSPAN_MANIFEST XDG_CONFIG_HOME="$work/no-config-home" \
  XDG_CONFIG_DIRS="$work/no-config-dirs" PYTHONPATH="$(dirname "$(dirname "$install_paths")")" \
  "$python" - "$libdir" "$example" "$schema" <<'PY' || { echo "FAIL: the installed Python package"; exit 1; }
import sys
import rootspan
libdir, example, schema = sys.argv[1:4]
assert rootspan.library_path() == libdir + "/librootspan.so.0", rootspan.library_path()
import os
from rootspan import _compiled  # the compiled module, installed beside the package's files where it was built
compiled = _compiled.describe()
if os.environ.get("ROOTSPAN_COMPILED_MODULE") == "built":
    assert compiled is not None and os.path.dirname(compiled.__file__) == os.path.dirname(rootspan.__file__), compiled
with rootspan.Context() as ctx:
    providers = ctx.providers()
    host = sorted((p.origin, p.state) for p in providers if p.name == "host")
    assert host == [("manifest", "skipped"), ("static", "loaded")], host
    # The device plugins the build installed: started, with or without a device.
    others = [(p.name, p.origin, p.state) for p in providers if p.name != "host"]
    assert all(origin == "manifest" and state in ("loaded", "no device") for _, origin, state in others), others
    with ctx.load(example, schema=schema) as weights:
        norm = weights["norm"]
        assert (norm.dtype, norm.shape, norm.role, norm.zero_copy) == ("F32", (32,), "values", True), norm
        assert len(norm.root.read()) == 128
print("ok: the installed Python package loaded " + rootspan.library_path())
PY

# CMake: find_package(rootspan) and the imported target, from the prefix and
# from a copy of it moved elsewhere (the package finds its own prefix).
if ! command -v cmake >/dev/null 2>&1; then
  echo "cmake not found: the CMake part is skipped"
  exit 77
fi
mkdir "$work/cmake-project"
cp "$program" "$work/cmake-project/"
cat >"$work/cmake-project/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(installed_embed C)
find_package(rootspan 0.1 REQUIRED)
add_executable(installed_embed installed_embed.c)
target_link_libraries(installed_embed PRIVATE rootspan::rootspan)
get_target_property(location rootspan::rootspan IMPORTED_LOCATION)
file(WRITE "${CMAKE_BINARY_DIR}/rootspan-location.txt" "${location}")
CMAKE
cp -a "$prefix" "$work/moved"
expected=$(expect norm F32 "[32]" values model.norm.weight)
for where in "$prefix" "$work/moved"; do
  build=$work/cmake-build-$(basename "$where")
  cmake -S "$work/cmake-project" -B "$build" -DCMAKE_PREFIX_PATH="$where" >"$build.log" 2>&1 &&
    cmake --build "$build" >>"$build.log" 2>&1 || { echo "FAIL: CMake build against $where"; cat "$build.log"; exit 1; }
  location=$(cat "$build/rootspan-location.txt")
  case $location in
    "$where"/*) ;;
    *) echo "FAIL: rootspan::rootspan from $where is $location"; exit 1 ;;
  esac
  # No LD_LIBRARY_PATH: the imported target's location gives the build its run path.
  actual=$("$build/installed_embed" "$example" norm "$schema")
  check_output "the CMake build against $where" "$expected" "$actual"
done
# The version file refuses another ABI major.
mkdir "$work/cmake-major-1"
sed 's/find_package(rootspan 0.1 REQUIRED)/find_package(rootspan 1.0 REQUIRED)/' \
  "$work/cmake-project/CMakeLists.txt" >"$work/cmake-major-1/CMakeLists.txt"
cp "$program" "$work/cmake-major-1/"
if cmake -S "$work/cmake-major-1" -B "$work/cmake-major-1/build" -DCMAKE_PREFIX_PATH="$prefix" \
    >"$work/cmake-major-1.log" 2>&1; then
  echo "FAIL: find_package(rootspan 1.0) accepted version 0.7.0"; exit 1
fi
grep -q 'rootspan-config.cmake, version: 0.7.0' "$work/cmake-major-1.log" ||
  { echo "FAIL: find_package(rootspan 1.0) failed for another reason:"; cat "$work/cmake-major-1.log"; exit 1; }
echo "ok: find_package(rootspan 1.0) is refused by the version file"
