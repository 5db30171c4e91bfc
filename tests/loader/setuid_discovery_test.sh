#!/usr/bin/env bash
# L3 in a set-uid program: a copy of discovery_probe made set-uid root, run by
# an unprivileged user with ROOTSPAN_MANIFEST and the XDG_* variables pointing
# at real manifests, must not find any of them (the loader reads the
# environment through secure_getenv). A plain copy, run the same way, must find
# them: that shows the variables would have been honoured.
# Usage: setuid_discovery_test.sh PROBE
set -euo pipefail
probe="$1"
user=rootspan-unprivileged

if [ "$(id -u)" != 0 ]; then
  echo "SKIP: not running as root: cannot make a set-uid root program or act as another user (CI runs as root)"
  exit 77
fi
# Idempotent: another test run may have created the user already.
id -u "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user" >/dev/null 2>&1 ||
  id -u "$user" >/dev/null
uid=$(id -u "$user")
gid=$(id -g "$user")

dir=$(mktemp -d "${TMPDIR:-/tmp}/rootspan-setuid-XXXXXX")
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
install -m 0755 -o root -g root "$probe" "$dir/probe-plain"
install -m 4755 -o root -g root "$probe" "$dir/probe-setuid"
for folder in env home/rootspan/manifest.d dirs/rootspan/manifest.d; do mkdir -p "$dir/$folder"; done
echo '{"file_format_version": "1.0.0", "providers": []}' >"$dir/env/from-env.json"
cp "$dir/env/from-env.json" "$dir/home/rootspan/manifest.d/10-from-xdg-home.json"
cp "$dir/env/from-env.json" "$dir/dirs/rootspan/manifest.d/10-from-xdg-dirs.json"
chmod -R a+rX "$dir"

# Runs a probe as the unprivileged user with the given environment.
run_as_user() {
  local program="$1"
  shift
  env -i PATH=/usr/bin:/bin ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" "$@" \
    setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$program"
}
fail() {
  echo "FAIL: $*"
  exit 1
}

all_vars=(ROOTSPAN_MANIFEST="$dir/env/from-env.json" XDG_CONFIG_HOME="$dir/home" XDG_CONFIG_DIRS="$dir/dirs" HOME="$dir/home")
xdg_vars=(XDG_CONFIG_HOME="$dir/home" XDG_CONFIG_DIRS="$dir/dirs" HOME="$dir/home")

# The control: without set-uid the variables are honoured.
out=$(run_as_user "$dir/probe-plain" "${all_vars[@]}")
echo "plain copy, ROOTSPAN_MANIFEST set:"$'\n'"$out"
grep -qx "secure=0 euid=$uid" <<<"$out" || fail "the plain copy did not run as uid $uid without AT_SECURE"
grep -qx "$dir/env/from-env.json" <<<"$out" || fail "the plain copy ignored ROOTSPAN_MANIFEST"
out=$(run_as_user "$dir/probe-plain" "${xdg_vars[@]}")
echo "plain copy, XDG_* set:"$'\n'"$out"
grep -qx "$dir/home/rootspan/manifest.d/10-from-xdg-home.json" <<<"$out" || fail "the plain copy ignored XDG_CONFIG_HOME"
grep -qx "$dir/dirs/rootspan/manifest.d/10-from-xdg-dirs.json" <<<"$out" || fail "the plain copy ignored XDG_CONFIG_DIRS"

# The set-uid copy: it must run set-uid (else the test proves nothing) and
# find none of the manifests the environment names.
for vars in all xdg; do
  if [ "$vars" = all ]; then set -- "${all_vars[@]}"; else set -- "${xdg_vars[@]}"; fi
  out=$(run_as_user "$dir/probe-setuid" "$@")
  echo "set-uid copy, $vars variables set:"$'\n'"$out"
  grep -qx "secure=1 euid=0" <<<"$out" ||
    fail "the set-uid copy did not run set-uid (expected secure=1 euid=0; is $dir on a nosuid mount, or no_new_privs set?)"
  if grep -q "^$dir/" <<<"$out"; then fail "the set-uid program read a manifest location from its environment"; fi
done
echo "PASS"
