#!/usr/bin/env bash
# A mutation check: applies each one-line rule-breaking change of
# mutations.txt on its own, rebuilds the targets it names, runs its meson
# test, restores the file, and reports whether a test caught it ("killed") or
# not ("SURVIVED": the rule has no test that fails when it breaks).
# Usage: tests/mutation/run.sh [BUILD_DIR [ID...]]   (default build dir: build)
# Each rebuild and test run holds /tmp/rootspan-build.lock, as every build on
# the shared machine does. Not part of CI: it rebuilds once per change.
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build}"
shift || true
only=" $* "
list=tests/mutation/mutations.txt
lock=/tmp/rootspan-build.lock
[ -f "$build/build.ninja" ] || { echo "no configured build in $build (meson setup $build -Dtests=enabled)"; exit 2; }

backup=$(mktemp -d)
restore() {
  if [ -n "${current:-}" ]; then cp "$backup/file" "$current"; touch "$current"; fi
  rm -rf "$backup"
}
trap restore EXIT

results=()
survivors=0
while IFS= read -r line; do
  case "$line" in '' | '#'*) continue ;; esac
  IFS=$'\x1f' read -r id file expression targets test rule <<<"$(sed 's/ @@ /\x1f/g' <<<"$line")"
  if [ "$only" != "  " ] && [[ "$only" != *" $id "* ]]; then continue; fi
  cp -p "$file" "$backup/file"
  current="$file"
  sed -i -e "$expression" "$file"
  if cmp -s "$file" "$backup/file"; then
    verdict="NOT APPLIED (the line is gone: update $list)"
  else
    log="$build/mutation-$id.log"
    # One hold of the lock per change: its rebuild, then its test. Exit
    # status 3 from the held command means the build failed.
    # shellcheck disable=SC2016 # expanded by the inner shell
    if flock "$lock" bash -c 'ninja -C "$1" $2 || exit 3; meson test -C "$1" --no-rebuild "$3"' \
      rebuild "$build" "$targets" "$test" >"$log" 2>&1; then
      verdict="SURVIVED"
      survivors=$((survivors + 1))
    elif [ $? = 3 ]; then
      verdict="BUILD FAILED (see $log)"
    else
      verdict="killed"
    fi
  fi
  cp "$backup/file" "$file"  # a fresh mtime, so ninja rebuilds it
  touch "$file"
  current=""
  results+=("$(printf '%-20s %-26s %-18s %s' "$id" "$verdict" "$test" "$rule")")
  echo "${results[-1]}"
done <"$list"

echo
echo "== rebuilding the unmutated targets"
flock "$lock" ninja -C "$build" >/dev/null
printf '%-20s %-26s %-18s %s\n' MUTATION VERDICT TEST RULE
printf '%s\n' "${results[@]}"
echo "$survivors of ${#results[@]} changes survived"
[ "$survivors" = 0 ]
