#!/usr/bin/env bash
# The main job of `make run`: the demo, then the default benchmark — every registered index
# on the WORT paper's Dense, Sparse and Clustered keys (insert, search, range), printing the
# Table-1-style comparison, with JSON, CSV and plots under results/.
#
# Environment:
#   WORT_KEYS        keys of the main benchmark (default 1000000)
#   WORT_SWEEP_KEYS  keys of the write-latency sweep, Fig. 8 (default 200000; 0 skips it)
#   WORT_LLC_KEYS    keys of the callgrind cache-simulation pass (default 100000; 0 skips it)
#   WORT_LLC_SIZE    simulated last-level cache of that pass (default 1M: this VM reports a
#                    bogus 320 MB L3, and a small cache keeps a small tree larger than it)
#   WORT_MIX_OPS     operations of the YCSB-A mix on Sparse keys (default 1000000; 0 skips it)
#   WORT_VAR_KEYS    keys of the variable-size key run: ROART's 4-128 random bytes, the
#                    words of /usr/share/dict/words, WORT's 20-byte keys (default 100000;
#                    0 skips it)
#   WORT_ROUNDS      rounds of `lookup_rounds` (tools/lookup_rounds.cc: art, WORT, WOART and
#                    ART+CoW interleaved on the main benchmark's keys; default 5; 0 skips it)
#   WORT_RESULTS     output folder (default results)
#
# Not run here (it takes about half an hour at 1M keys): build/store_compare --keys 1000000
# --rounds 3 --json results/store_compare.json (tools/store_compare: wort::Store against
# LMDB and RocksDB); tools/results_doc.py renders that file when it is in the results folder.
set -euo pipefail
build=${1:-build}
keys=${WORT_KEYS:-1000000}
sweep_keys=${WORT_SWEEP_KEYS:-200000}
llc_keys=${WORT_LLC_KEYS:-100000}
llc_size=${WORT_LLC_SIZE:-1M}
mix_ops=${WORT_MIX_OPS:-1000000}
var_keys=${WORT_VAR_KEYS:-100000}
rounds=${WORT_ROUNDS:-5}
out=${WORT_RESULTS:-results}
wort="$build/wort"
mkdir -p "$out"
failed=0

# Runs `wort bench "$@"`: exit 1 (some case failed: its ERROR row and JSON say why) is
# reported at the end; anything else non-zero (bad usage, crash) stops the job.
bench() {
  local rc=0
  "$wort" bench "$@" || rc=$?
  if [ "$rc" -eq 1 ]; then failed=1; elif [ "$rc" -ne 0 ]; then exit "$rc"; fi
}

echo "== wort demo"
"$wort" demo --keys 100000

llc=()
if [ "$llc_keys" != 0 ]; then llc=(--llc callgrind --llc-keys "$llc_keys" --llc-size "$llc_size"); fi
echo
echo "== wort bench: every index, Dense/Sparse/Clustered, $keys keys"
bench --keys "$keys" --recovery "${llc[@]}" \
  --json "$out/bench.json" --csv "$out/bench.csv" > "$out/bench.txt"
cat "$out/bench.txt"
"$wort" plot "$out/bench.json" --out "$out" >/dev/null

if [ "$rounds" != 0 ] && [ -x "$build/lookup_rounds" ]; then
  echo
  echo "== lookup_rounds: art, WORT, WOART, ART+CoW interleaved in $rounds rounds, $keys keys"
  "$build/lookup_rounds" --keys "$keys" --rounds "$rounds" --json "$out/rounds.json" | tee "$out/rounds.txt"
fi

if [ "$sweep_keys" != 0 ]; then
  echo
  echo "== wort bench: insert time against emulated PM write latency (Fig. 8), $sweep_keys keys"
  bench --keys "$sweep_keys" --write-latency 0,100,300,500 --range none \
    --json "$out/latency.json" --csv "$out/latency.csv" > "$out/latency.txt"
  sed -n '/^Insert ns\/op against emulated/,/^$/p' "$out/latency.txt"
  "$wort" plot "$out/latency.json" --out "$out/latency" >/dev/null
  if [ -f "$out/latency/fig8_latency.png" ]; then mv "$out/latency/fig8_latency.png" "$out/"; fi
  rm -rf "$out/latency"
fi

if [ "$mix_ops" != 0 ]; then
  echo
  echo "== wort bench: YCSB A (50% read, 50% update, zipfian 0.99) on Sparse keys, $mix_ops operations"
  bench --keys "$keys" --dist sparse --workload ycsb-a --ops "$mix_ops" \
    --json "$out/mix.json" --csv "$out/mix.csv" > "$out/mix.txt"
  sed -n '/^Phases/,/^$/p' "$out/mix.txt"
  "$wort" plot "$out/mix.json" --out "$out" >/dev/null
fi

if [ "$var_keys" != 0 ]; then
  echo
  echo "== wort bench: variable-size keys (random 4-128 bytes, words, 20-byte), $var_keys keys"
  bench --keys "$var_keys" --dist varbytes,words,fixed20 \
    --json "$out/varkeys.json" --csv "$out/varkeys.csv" > "$out/varkeys.txt"
  sed -n '/^Time per operation/,/^$/p' "$out/varkeys.txt"
fi

echo
[ "$failed" -eq 0 ] || echo "warning: some benchmark cases failed: see the ERROR rows above and 'error' in the JSON"
echo "results: $out/ (bench.json, bench.csv, bench.txt, *.png); docs: tools/results_doc.py $out"
