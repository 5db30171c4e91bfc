#!/usr/bin/env bash
# librootspan.so exports the C API and nothing else: every defined dynamic
# symbol is rootspan_* (no C++ internals, no third-party code), and every
# function the public headers declare with ROOTSPAN_API is among them.
# Usage: exported_symbols_test.sh LIBRARY HEADER...
set -euo pipefail
library="$1"
shift
exported=$(nm -D --defined-only "$library" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
[ -n "$exported" ] || { echo "FAIL: nm -D found no defined symbol in $library"; exit 1; }
foreign=$(grep -v '^rootspan_' <<<"$exported" || true)
if [ -n "$foreign" ]; then
  echo "FAIL: $library exports $(wc -l <<<"$foreign") symbols outside rootspan_*, the first:"
  head -n 20 <<<"$foreign"
  exit 1
fi
declared=$(sed -n 's/.*ROOTSPAN_API[^(]*[ *]\(rootspan_[a-z0-9_]*\)(.*/\1/p' "$@" | sort -u)
[ -n "$declared" ] || { echo "FAIL: no ROOTSPAN_API function found in $*"; exit 1; }
missing=$(comm -23 <(echo "$declared") <(echo "$exported"))
if [ -n "$missing" ]; then
  echo "FAIL: declared in the public headers but not exported by $library:"
  echo "$missing"
  exit 1
fi
echo "PASS: $(wc -l <<<"$exported") symbols, all rootspan_*; all $(wc -l <<<"$declared") declared functions exported"
