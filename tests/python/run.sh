#!/usr/bin/env bash
# The Python package as a user installs it, without compiling the library again: the build
# installed into a scratch prefix, a fresh venv, `pip install` of the repository root linking
# that prefix (-C cmake.define.WORT_PREFIX: only python/src/binding.cc compiles; pip fetches
# scikit-build-core, pybind11 and pytest from PyPI), then the pytest suite in tests/python/.
# Usage: run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q pytest
"$tmp/venv/bin/python" -m pip install -q -C cmake.define.WORT_PREFIX="$tmp/prefix" \
  -C build-dir="$tmp/build" "$src"
cd "$tmp"  # the installed package is imported, not python/wort in the tree
"$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python"
