#!/usr/bin/env bash
# The Python package as a user installs it: a fresh venv, `pip install` of the repository
# root (pip fetches scikit-build-core, pybind11 and pytest from PyPI), then the pytest suite
# in tests/python/. The library is compiled again for the shared extension (position-
# independent; the Release build is not, for speed) at -O0 and without the command: about
# 30 s on 2 cores, where -O2 takes minutes.
# Usage: run.sh BUILD_DIR SOURCE_DIR   (BUILD_DIR: unused, kept for the ctest line)
set -euo pipefail
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q pytest
"$tmp/venv/bin/python" -m pip install -q -C cmake.build-type=Debug \
  -C cmake.define.WORT_LIB_BUILD_TYPE=None -C cmake.define.WORT_LIB_CXX_FLAGS=-O0 \
  -C build-dir="$tmp/build" "$src"
cd "$tmp"  # the installed package is imported, not python/wort in the tree
"$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/tests/python"
