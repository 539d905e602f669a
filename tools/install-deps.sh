#!/usr/bin/env bash
# Installs the Debian 12 packages wort needs, only those missing. Run as root (CI is) or
# with sudo available.
set -euo pipefail
pkgs=(g++ cmake ninja-build pkg-config libpmem2-dev libgtest-dev valgrind python3 python3-dev python3-venv python3-matplotlib wamerican
      memcached python3-pymemcache libmemcached-tools nutcracker
      liblmdb-dev librocksdb-dev)  # the last two: tools/store_compare (wort::Store against them)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
