#!/bin/bash
# .ci/check-docs on the tree must pass, and on a page of broken references it
# must fail and name each one with its file and line (and none of the good
# ones beside them).
# Usage: check_docs_test.sh SOURCE_ROOT BUILD_ROOT
set -euo pipefail
source_root=$1
build_root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

python3 "$source_root/.ci/check-docs" --build "$build_root" || fail "the tree's documents have broken references"

# Named cli.md, so the options are checked as in docs/cli.md.
cat > "$work/cli.md" <<'PAGE'
# broken references

The subcommands are `version`, `providers`, `inspect`, `load` and `plan`.
Good: `core/span.hpp`, `weights/placement/materialize.*`, `ManifestL1.*`, `rootspan_version`, test `rust_example`, `--verify`.
A path `core/no_such_file.cpp`, a link [x](no-such-doc.md), a file `no_such_file.hpp`.
Test `NoSuchSuite.NoSuchTest`, the `no_such_meson` test, and test_no_such_python.
Call `rootspan_no_such_function()` with `--no-such-option`.
PAGE
status=0
python3 "$source_root/.ci/check-docs" --build "$build_root" "$work/cli.md" > "$work/out" 2>&1 || status=$?
cat "$work/out"
[ "$status" = 1 ] || fail "check-docs exited $status on broken references, not 1"
for expected in \
  "cli.md:3: list of subcommands lacks hash, sign, help" \
  "cli.md:5: path \`core/no_such_file.cpp\` does not exist" \
  "cli.md:5: link target no-such-doc.md does not exist" \
  "cli.md:5: path \`no_such_file.hpp\` does not exist" \
  "cli.md:6: test NoSuchSuite.NoSuchTest is not in tests/" \
  "cli.md:6: test no_such_meson is not a meson or Python test" \
  "cli.md:6: Python test test_no_such_python is not in bindings/python/tests" \
  "cli.md:7: rootspan_no_such_function is not declared" \
  "cli.md:7: option --no-such-option is in no"; do
  grep -qF "$expected" "$work/out" || fail "not reported: $expected"
done
[ "$(grep -c '^/.*cli.md:4:' "$work/out")" = 0 ] || fail "a good reference was reported"
echo "check_docs_test: ok"
