#!/usr/bin/env bash
# The README's library example is examples/readme.cc word for word, and it runs twice on one
# pool (the second run opens what the first made). Usage: check-readme-example.sh SRC BINARY
set -euo pipefail
src=$1 bin=$2
python3 - "$src" <<'PY'
import sys
src = sys.argv[1]
readme = open(f"{src}/README.md").read()
start = readme.index("```cpp\n") + len("```cpp\n")
block = readme[start:readme.index("```\n", start)]
if block != open(f"{src}/examples/readme.cc").read():
    sys.exit("README.md's first C++ block differs from examples/readme.cc")
PY
pool=$(mktemp -u /tmp/wort-readme-XXXXXX.pool)
trap 'rm -f "$pool"' EXIT
first=$("$bin" "$pool")
second=$("$bin" "$pool")
grep -q "earlier run" <<<"$first" && { echo "first run found a pool" >&2; exit 1; }
grep -q "earlier run" <<<"$second" || { echo "second run did not reopen the pool" >&2; exit 1; }
echo "readme example: matches examples/readme.cc, ran twice on one pool"
