#!/bin/bash
# Compiles docs/examples/load_checkpoint.c with the compile line that
# docs/c-api.md documents (plus warnings as errors), runs it on the example
# checkpoint with both strategies, and checks what it prints and how it exits;
# also that docs/c-api.md shows the file as it is.
# Usage: example_test.sh SOURCE_ROOT BUILD_ROOT EXAMPLE_CHECKPOINT CC...
# (CC... is the C compiler command, possibly several words such as ccache cc)
set -euo pipefail
source_root=$1
build_root=$2
checkpoint=$3
cc=("${@:4}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

cd "$source_root"
# The page shows the example in full: its code block must be the file.
awk '/^```c$/{inside=1; next} /^```$/{if (inside) exit} inside' docs/c-api.md > "$work/shown.c"
diff -u docs/examples/load_checkpoint.c "$work/shown.c" >&2 \
  || fail "the code block in docs/c-api.md differs from docs/examples/load_checkpoint.c"
# The documented line, with the flags the project holds C code to.
# EXAMPLE_CFLAGS: extra flags from the build (the sanitizers), split on spaces.
read -r -a extra <<<"${EXAMPLE_CFLAGS:-}"
"${cc[@]}" -std=c99 -pedantic -Wall -Wextra -Werror ${extra[@]+"${extra[@]}"} \
  docs/examples/load_checkpoint.c -I abi -L "$build_root" -lrootspan -o "$work/load_checkpoint" \
  || fail "the example does not compile with the documented line"

export LD_LIBRARY_PATH="$build_root${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

for strategy in mmap read; do
  out=$("$work/load_checkpoint" "$checkpoint" "$strategy" 2>"$work/err") \
    || fail "$strategy: exit $? ($(cat "$work/err"))"
  grep -q '^loaded [0-9]* components into provider host$' <<<"$out" || fail "$strategy: no summary line: $out"
  count=$(sed -n 's/^loaded \([0-9]*\) components.*/\1/p' <<<"$out")
  rows=$(grep -c 'key (' <<<"$out")
  [ "$count" -gt 0 ] && [ "$rows" -eq "$count" ] || fail "$strategy: $count components but $rows rows: $out"
  if [ "$strategy" = mmap ]; then
    grep -q 'zero-copy' <<<"$out" || fail "mmap: no zero-copy component: $out"
    grep -q 'exclusive claim refused as expected: root is read-only' <<<"$out" \
      || fail "mmap: the read-only refusal is missing: $out"
  else
    grep -q 'zero-copy' <<<"$out" && fail "read: a component is zero-copy: $out"
  fi
done

# Both strategies see the same bytes.
strip() { "$work/load_checkpoint" "$checkpoint" "$1" | grep 'checksum' | sed 's/ *\(zero-copy\|copied\) */ /; s/key ([0-9,]*)//'; }
[ "$(strip mmap)" = "$(strip read)" ] || fail "the strategies read different bytes"

# A missing checkpoint: exit 1 and the library's message.
if "$work/load_checkpoint" "$work/no-such-checkpoint" >/dev/null 2>"$work/err"; then fail "a missing path succeeded"; fi
grep -q '^weights_load failed: ' "$work/err" || fail "missing path: unexpected error text: $(cat "$work/err")"
grep -q 'no-such-checkpoint' "$work/err" || fail "missing path: the error does not name the path: $(cat "$work/err")"

# Usage: exit 2.
set +e
"$work/load_checkpoint" >/dev/null 2>&1
[ $? -eq 2 ] || fail "usage error does not exit 2"
set -e
echo "ok"
