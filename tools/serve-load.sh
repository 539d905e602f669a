#!/usr/bin/env bash
# tools/serve-load.sh — load run: `wort serve` with each persistent index (wort, woart,
# artcow) and Debian's memcached on the same machine, the same client (tools/serve_load.cc),
# the same server thread count, in one run, interleaved (every round runs every server once
# per configuration, in turn). Loopback only; every run bounded in time and count.
#
#   tools/serve-load.sh [BUILD_DIR]          (default build/; needs BUILD_DIR/wort)
#   env: ROUNDS=2 SECONDS_PER_RUN=3 CONNS=4 THREADS=2 KEYS=20000 VALUES="32 4096"
#        MIXES="10:1 1:1" POOL_MB=256 SERVERS="wort woart artcow memcached" OUT=results/serve-load.md
#   A server named KIND-global is `wort serve --index KIND --global-lock` (the index behind
#   one reader/writer lock even if it is concurrent): SERVERS="wort wort-global memcached"
#   compares the two locking paths of one index in the same run.
#
# Prints (and writes to $OUT) a markdown table: per server, mix and value size the median
# over the rounds of throughput (with the min..max range) and of the p50/p99/p99.9
# latencies, and the gets that hit and missed over all rounds; the raw lines go to $OUT.raw.
# Every key is preloaded, so a miss fails the run (serve_load --expect-hits: exit 3). On a shared machine the rounds spread widely:
# compare medians, and only across servers of the same run.
#
# MODE=full-pool: the full pool, a cache's normal state. Per round, per FILL:NEW pair of
# value sizes (PAIRS="100:1000 1000:300") and per server in turn, a fresh server with
# -m FP_POOL_MB (default 64; both servers read -m as item memory) is filled past full by
# tests/server/full_pool_client.py (1.5 x -m of FILL-byte values with 32-byte keys,
# pipelined), then NEW=300 sets of NEW bytes on new keys one at a time (stored? evictions?),
# then SECONDS_PER_RUN of set-only load from serve_load over RATE_KEYS=2000000 keys of FILL
# bytes (nearly every set a new key: each one evicts). FP_SERVERS names the servers (default
# every persistent kind and memcached). Writes $JSON (default results/serve_full_pool.json:
# every round's figures) and prints the table tools/results_doc.py renders from it
# (docs/RESULTS.md): items held, per MiB and against memcached in the same round, new-size
# sets stored, their evictions, the set rate.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-build}
wort="$build/wort"
[ -x "$wort" ] || { echo "no $wort (ninja -C $build wort)" >&2; exit 2; }
ROUNDS=${ROUNDS:-2}; SECONDS_PER_RUN=${SECONDS_PER_RUN:-3}; CONNS=${CONNS:-4}
THREADS=${THREADS:-2}; KEYS=${KEYS:-20000}; VALUES=${VALUES:-"32 4096"}
MIXES=${MIXES:-"10:1 1:1"}; POOL_MB=${POOL_MB:-256}
SERVERS=${SERVERS:-"wort woart artcow memcached"}; OUT=${OUT:-results/serve-load.md}
mkdir -p "$(dirname "$OUT")"
MAX_OPS=${MAX_OPS:-5000000}
tmp=$(mktemp -d /dev/shm/serve-load.XXXXXX)
load="$tmp/serve_load"
c++ -O2 -std=c++20 -pthread -o "$load" "$here/serve_load.cc"

source "$here/serve-common.sh"  # start_server, stop_server, cleanup (on EXIT)

if [ "${MODE:-mix}" = full-pool ]; then
  POOL_MB=${FP_POOL_MB:-64}; PAIRS=${PAIRS:-"100:1000 1000:300"}; NEW=${NEW:-300}
  RATE_KEYS=${RATE_KEYS:-2000000}; JSON=${JSON:-results/serve_full_pool.json}
  SERVERS=${FP_SERVERS:-"wort woart artcow fastfair fptree wbtree nvtree roart memcached"}
  mkdir -p "$(dirname "$JSON")"
  raw="$JSON.raw"
  : >"$raw"
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  for r in $(seq "$ROUNDS"); do
    for pair in $PAIRS; do
      v=${pair%%:*} n=${pair##*:}
      fill=$((POOL_MB * 1048576 * 3 / 2 / (v + 64)))
      for s in $SERVERS; do
        rm -f "$tmp/$s.pool"
        start_server "$s"
        kv=$(python3 "$here/../tests/server/full_pool_client.py" "${port[$s]}" "$fill" "$NEW" "$n" "$v" | tail -1)
        line=$("$load" 127.0.0.1 "${port[$s]}" --conns "$CONNS" --keys "$RATE_KEYS" --value-bytes "$v" \
          --get-ratio 0 --set-ratio 1 --seconds "$SECONDS_PER_RUN" --max-ops "$MAX_OPS" --seed "$r")
        stop_server "$s"
        echo "server=$s value=$v new_size=$n new=$NEW fill=$fill round=$r load=$(cut -d' ' -f1 /proc/loadavg) $kv $line" | tee -a "$raw"
      done
    done
  done
  python3 "$here/serve_full_pool_json.py" "$raw" "$JSON" "$POOL_MB" "$ROUNDS" "$load0" "$build"
  exit 0
fi

for s in $SERVERS; do start_server "$s"; done
raw="$OUT.raw"
: >"$raw"
echo "# $(date -u +%FT%TZ) $(uname -m) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$raw"
echo "# ROUNDS=$ROUNDS SECONDS_PER_RUN=$SECONDS_PER_RUN CONNS=$CONNS THREADS=$THREADS KEYS=$KEYS VALUES='$VALUES' MIXES='$MIXES' POOL_MB=$POOL_MB" >>"$raw"
for v in $VALUES; do
  for s in $SERVERS; do  # every key set once at this size (untimed), so gets hit
    "$load" 127.0.0.1 "${port[$s]}" --conns "$CONNS" --keys "$KEYS" --value-bytes "$v" \
      --preload --seconds 0 --max-ops 0 >/dev/null
  done
  for r in $(seq "$ROUNDS"); do
    for m in $MIXES; do
      for s in $SERVERS; do
        line=$("$load" 127.0.0.1 "${port[$s]}" --conns "$CONNS" --keys "$KEYS" --value-bytes "$v" \
          --get-ratio "${m%%:*}" --set-ratio "${m##*:}" --seconds "$SECONDS_PER_RUN" \
          --max-ops "$MAX_OPS" --seed "$r" --expect-hits)
        echo "server=$s mix=$m value=$v round=$r $line" | tee -a "$raw"
      done
    done
  done
done
python3 - "$raw" "$OUT" <<'EOF'
import sys, collections
rows = collections.OrderedDict()
for l in open(sys.argv[1]):
    if l.startswith("#"): continue
    d = dict(kv.split("=", 1) for kv in l.split())
    rows.setdefault((d["value"], d["mix"], d["server"]), []).append(d)
out = ["| value B | GET:SET | server | kops/s median (min..max) | p50 us | p99 us | p99.9 us | get p99 us | set p50 us | set p99 us | gets hit / missed |",
       "|---|---|---|---|---|---|---|---|---|---|---|"]
for (v, m, s), ds in rows.items():
    def med(k):
        xs = sorted(float(d[k]) for d in ds)
        n = len(xs)
        return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
    ks = [float(d["kops_s"]) for d in ds]
    hits = sum(int(d["hits"]) for d in ds)
    misses = sum(int(d["misses"]) for d in ds)
    out.append("| %s | %s | %s | %.1f (%.0f..%.0f) | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %d / %d |" % (
        v, m, s, med("kops_s"), min(ks), max(ks), med("p50_us"), med("p99_us"), med("p999_us"),
        med("get_p99_us"), med("set_p50_us"), med("set_p99_us"), hits, misses))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
print("\n".join(out))
EOF
