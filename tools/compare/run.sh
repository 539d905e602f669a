#!/bin/bash
# tools/compare/run.sh AUTHORS_DIR [BUILD] [KEYS] [CG_KEYS] — our indexes against the authors'
# code, one command. Builds each authors' repository present in AUTHORS_DIR (a checkout the
# user points at; nothing is copied into this repository) with its documented patch, runs
# the interleaved rounds of its driver on Sparse and Dense keys, and writes
# results/compare.json (tools/results_doc.py renders it). Run from the repository root.
#
#   AUTHORS_DIR/FAST_FAIR   github.com/DICL/FAST_FAIR: tools/compare/authors_fastfair.cc,
#                           patched by variants/fast_fair*.sed (README "FAST&FAIR")
#
# KEYS (default 1000000) per timed round; CG_KEYS (default 100000) for the callgrind
# instruction counts (valgrind needed). Our side is linked from BUILD (default build:
# `ninja -C BUILD wort_lib wort_bench` is run first). The other drivers (authors_wort for
# WORT and WOART, public_art) are still built by hand (README).
set -euo pipefail
A=$(cd "$1" && pwd)
BUILD=${2:-build}
N=${3:-1000000}
CG=${4:-100000}
V=tools/compare/variants
W=$(mktemp -d /tmp/compare.XXXXXX)
trap 'rm -rf "$W"' EXIT
[ -f tools/compare/authors_fastfair.cc ] || { echo "run from the repository root" >&2; exit 2; }
ninja -C "$BUILD" wort_lib wort_bench > /dev/null

link() {  # link DRIVER HEADER_DIR OUT [FLAGS...]
  local drv=$1 inc=$2 out=$3; shift 3
  g++ -O3 -std=c++20 -w "$@" -Iinclude -Isrc -I"$inc" "$drv" -o "$out" \
    -Wl,--whole-archive "$BUILD/libwort.a" -Wl,--no-whole-archive \
    "$BUILD/src/bench/libwort_bench.a" "$BUILD/libwort.a" -lpmem2 -lpthread
}

cg_total() {  # callgrind's total of one dump file
  sed -n 's/^totals: *//p' "$1"
}

entries=()
if [ -f "$A/FAST_FAIR/single/src/btree.h" ]; then
  F=$A/FAST_FAIR/single/src/btree.h
  ff_commit=$(git -C "$A/FAST_FAIR" rev-parse HEAD 2>/dev/null || echo unknown)
  mkdir -p "$W/ff/clwb" "$W/ff/cg" "$W/ff/count"
  sed -f $V/fast_fair.sed "$F" | sed -f $V/fast_fair_clwb.sed > "$W/ff/clwb/btree.h"
  sed -f $V/fast_fair.sed "$F" > "$W/ff/cg/btree.h"
  sed -f $V/fast_fair.sed "$F" | sed -f $V/fast_fair_count.sed > "$W/ff/count/btree.h"
  link tools/compare/authors_fastfair.cc "$W/ff/clwb" "$W/aff_clwb"
  link tools/compare/authors_fastfair.cc "$W/ff/cg" "$W/aff_cg"
  link tools/compare/authors_fastfair.cc "$W/ff/count" "$W/aff_count" -DAUTHORS_COUNT
  for d in sparse dense; do
    "$W/aff_clwb" $d "$N" time "$W/ff-$d-time.json"
    "$W/aff_count" $d "$N" count | tee "$W/ff-$d-count.txt"
    for side in ours theirs; do
      valgrind --tool=callgrind --collect-atstart=no --instr-atstart=no \
        --callgrind-out-file="$W/cg-$d-$side" "$W/aff_cg" $d "$CG" cg-$side > /dev/null 2>&1
      echo "$d $side insert $(cg_total "$W/cg-$d-$side.1") lookup $(cg_total "$W/cg-$d-$side.2")" \
        >> "$W/ff-cg.txt"
    done
  done
  entries+=("fastfair DICL/FAST_FAIR $ff_commit")
fi
[ ${#entries[@]} -gt 0 ] || { echo "no authors' repository found in $A" >&2; exit 2; }

mkdir -p results
python3 - "$W" "$N" "$CG" "$(git rev-parse HEAD)" "$*" "${entries[@]}" <<'EOF'
import datetime, json, os, re, sys
w, n, cg, rev, args = sys.argv[1:6]
out = {"command_line": "tools/compare/run.sh " + args, "git_revision": rev,
       "date": datetime.date.today().isoformat(), "load_end": os.getloadavg()[0],
       "keys": int(n), "cg_keys": int(cg), "indexes": []}
for e in sys.argv[6:]:
    kind, repo, commit = e.split(" ")
    ent = {"index": kind, "authors": repo, "authors_commit": commit, "dists": {}}
    cgs = {}
    for line in open(f"{w}/ff-cg.txt"):
        d, side, _, ins, _, look = line.split()
        cgs.setdefault(d, {})[side] = {"insert": int(ins) / int(cg), "lookup": int(look) / int(cg)}
    for d in ("sparse", "dense"):
        t = json.load(open(f"{w}/ff-{d}-time.json"))
        c = open(f"{w}/ff-{d}-count.txt").read()
        m = re.search(r"ours ([\d.]+) lines written back \+ ([\d.]+) non-temporal stores, ([\d.]+) "
                      r"fences; theirs ([\d.]+) lines written back, ([\d.]+) fences", c)
        ent["dists"][d] = {
            "time": t,
            "per_insert": {"ours_lines": float(m[1]), "ours_nt": float(m[2]), "ours_fences": float(m[3]),
                           "theirs_lines": float(m[4]), "theirs_fences": float(m[5])},
            "instructions": cgs[d]}
    out["indexes"].append(ent)
json.dump(out, open("results/compare.json", "w"), indent=1)
print("results/compare.json")
EOF
