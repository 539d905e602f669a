#!/usr/bin/env bash
# The install path as an embedding project sees it: `cmake --install` into a scratch prefix,
# then examples/quickstart.cc built against the installed tree twice — with find_package(wort)
# and with pkg-config — and run, examples/store.cc (wort::Store) built with pkg-config and
# run; and the installed `wort` command run from the prefix (its
# --help, a demo pool made and checked). Usage: run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/wort/index.h"
test -f "$tmp/prefix/lib/libwort.a"
test -x "$tmp/prefix/bin/wort"
# The installed command, run from the prefix: its help, then a pool made by `wort demo`
# that `wort check` calls sound (exit 0) and `wort dump` reads a key of (key 7 -> value 70).
"$tmp/prefix/bin/wort" --help | grep '^  check ' >/dev/null
"$tmp/prefix/bin/wort" demo --keys 1000 --pool "$tmp/demo.pool" >/dev/null
"$tmp/prefix/bin/wort" check --quiet "$tmp/demo.pool" | grep '^OK: ' >/dev/null
test "$("$tmp/prefix/bin/wort" dump "$tmp/demo.pool" 7 --u64)" = 70
cmake -S "$src/tests/install/project" -B "$tmp/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DQUICKSTART="$src/examples/quickstart.cc" >/dev/null
ninja -C "$tmp/consumer" >/dev/null
(cd "$tmp" && "$tmp/consumer/quickstart")
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
g++ -O1 "$src/examples/quickstart.cc" -o "$tmp/quickstart-pc" $(pkg-config --cflags --libs wort)
(cd "$tmp" && "$tmp/quickstart-pc")
# The key-value store from the installed tree: include/wort/store.h and libwort.a's store.
test -f "$tmp/prefix/include/wort/store.h"
g++ -std=c++20 -O1 "$src/examples/store.cc" -o "$tmp/store-pc" $(pkg-config --cflags --libs wort)
(cd "$tmp" && "$tmp/store-pc" >/dev/null)
echo "install: find_package(wort) and pkg-config builds of quickstart ran, the store example" \
     "built with pkg-config ran; bin/wort checked a pool"
