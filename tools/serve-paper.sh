#!/usr/bin/env bash
# tools/serve-paper.sh — the WORT paper's Memcached experiment (paper 000 §5.4, Fig. 11;
# 20-byte keys in the short version 002), as closely as its text allows on this machine.
#
# The paper put each tree inside Memcached in place of its hash table, behind one global
# tree lock, and ran mc-benchmark: a series of SETs, then a series of GETs, each key drawn
# uniformly from a set of string keys; 128M queries; Memcached with 4 threads, the client
# with 50 (mc-benchmark's default client count); two machines on 10 GbE. Here: `wort serve
# --index KIND --global-lock` (KIND-global: the paper's locking) and Debian's memcached as
# the reference, one fresh server (a new pool) per run, the same client (tools/serve_load.cc)
# on the same machine over loopback: OPS SETs (--get-ratio 0), then OPS GETs (--set-ratio 0)
# on that server, uniform over KEYS keys of 20 bytes, CONNS connections. Between the two
# every key is set once more, untimed (serve_load --preload), so every GET must hit: a miss
# (an item lost or evicted) fails the run (serve_load --expect-hits: exit 3), as in
# tools/serve-load.sh. Rounds interleave the servers (every round runs each once, in turn).
#
#   tools/serve-paper.sh [BUILD_DIR]          (default build/; needs BUILD_DIR/wort)
#   env: ROUNDS=3 OPS=200000 KEYS=100000 CONNS=50 THREADS=2 VALUE=3 POOL_MB=512
#        SERVERS="wort-global woart-global artcow-global fptree-global wbtree-global memcached"
#        OUT=results/serve-paper.md
# The paper's trees: WORT, WOART, ART+CoW, FPTree, wB+Tree (NV-Tree left out: no
# variable-size keys). VALUE=3 is mc-benchmark's default data size (it is redis-benchmark's
# code); the paper does not state its value size. Prints (and writes to $OUT) a markdown
# table: per server, SET and GET throughput, the median over the rounds with min..max, and
# the ratio to the first server's median; the raw lines go to $OUT.raw.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
wort="$build/wort"
[ -x "$wort" ] || { echo "no $wort (ninja -C $build wort)" >&2; exit 2; }
ROUNDS=${ROUNDS:-3}; OPS=${OPS:-200000}; KEYS=${KEYS:-100000}; CONNS=${CONNS:-50}
THREADS=${THREADS:-2}; VALUE=${VALUE:-3}; POOL_MB=${POOL_MB:-512}
SERVERS=${SERVERS:-"wort-global woart-global artcow-global fptree-global wbtree-global memcached"}
OUT=${OUT:-results/serve-paper.md}
mkdir -p "$(dirname "$OUT")"
tmp=$(mktemp -d /dev/shm/serve-paper.XXXXXX)
load="$tmp/serve_load"
c++ -O2 -std=c++20 -pthread -o "$load" "$here/serve_load.cc"
source "$here/serve-common.sh"  # start_server, stop_server, cleanup (on EXIT)

raw="$OUT.raw"
: >"$raw"
echo "# $(date -u +%FT%TZ) $(uname -m) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$raw"
echo "# ROUNDS=$ROUNDS OPS=$OPS KEYS=$KEYS CONNS=$CONNS THREADS=$THREADS VALUE=$VALUE POOL_MB=$POOL_MB" >>"$raw"
for r in $(seq "$ROUNDS"); do
  for s in $SERVERS; do
    rm -f "$tmp/$s.pool"
    start_server "$s"
    for phase in set get; do
      if [ $phase = set ]; then
        ratio=(--get-ratio 0 --set-ratio 1)
      else
        # (the uniform SETs left some keys unset: set each once, untimed, so a miss is a loss)
        "$load" 127.0.0.1 "${port[$s]}" --conns "$CONNS" --keys "$KEYS" --value-bytes "$VALUE" \
          --preload --seconds 0 --max-ops 0 >/dev/null
        ratio=(--get-ratio 1 --set-ratio 0 --expect-hits)
      fi
      line=$("$load" 127.0.0.1 "${port[$s]}" --conns "$CONNS" --keys "$KEYS" --value-bytes "$VALUE" \
        "${ratio[@]}" --max-ops "$OPS" --seconds 600 --seed "$r")
      echo "server=$s phase=$phase round=$r load=$(cut -d' ' -f1 /proc/loadavg) $line" | tee -a "$raw"
    done
    stop_server "$s"
    rm -f "$tmp/$s.pool"  # (one pool on /dev/shm at a time)
  done
done
python3 - "$raw" "$OUT" <<'PY'
import sys, collections
rows = collections.OrderedDict()
for l in open(sys.argv[1]):
    if l.startswith("#"): continue
    d = dict(kv.split("=", 1) for kv in l.split())
    rows.setdefault(d["server"], {}).setdefault(d["phase"], []).append(float(d["kops_s"]))
def med(xs):
    xs = sorted(xs); n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
first = next(iter(rows.values()))
out = ["| server | SET kops/s median (min..max) | SET vs %s | GET kops/s median (min..max) | GET vs %s |"
       % (next(iter(rows)), next(iter(rows))), "|---|---|---|---|---|"]
for s, ph in rows.items():
    cells = []
    for p in ("set", "get"):
        xs = ph[p]
        cells.append("%.1f (%.0f..%.0f)" % (med(xs), min(xs), max(xs)))
        cells.append("%.2fx" % (med(xs) / med(first[p])))
    out.append("| %s | %s |" % (s, " | ".join(cells)))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
