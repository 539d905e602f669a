#!/usr/bin/env bash
# The main job of `make run`. Until `wort bench` lands this is the demo: create a pool,
# insert and look up keys, print the flush/fence counters.
set -euo pipefail
build=${1:-build}
exec "$build/wort" demo
