#!/bin/bash
# tools/compare/run.sh AUTHORS_DIR [BUILD] [KEYS] [CG_KEYS] — our indexes against the authors'
# code, one command. Builds each authors' repository present in AUTHORS_DIR (a checkout the
# user points at; nothing is copied into this repository) with its documented patch, runs
# the interleaved rounds of its driver on Sparse and Dense keys, and writes
# results/compare.json (tools/results_doc.py renders it). Run from the repository root.
#
#   AUTHORS_DIR/FAST_FAIR   github.com/DICL/FAST_FAIR: tools/compare/authors_fastfair.cc,
#                           patched by variants/fast_fair*.sed (README "FAST&FAIR")
#   AUTHORS_DIR/fptree      github.com/sfu-dis/fptree: tools/compare/authors_fptree.cc, their
#                           code unpatched, built with PMDK and TBB (README "FPTree")
#   AUTHORS_DIR/WORT        github.com/SeKwonLee/WORT: tools/compare/authors_wort.cc, patched
#                           by variants/wort*.sed, twice: their nodes from their posix_memalign,
#                           and from a bump arena in /dev/shm (README "WORT")
#   AUTHORS_DIR/ROART       github.com/madsys-dev/ROART: tools/compare/authors_roart.cc, patched
#                           by variants/roart_*.sed (README "ROART"; needs libnuma, TBB, PMDK)
#   AUTHORS_DIR/RECIPE      github.com/utsaslab/RECIPE: tools/compare/authors_part.cc, their
#                           P-ART patched by variants/part*.sed, against our woart and roart
#
# KEYS (default 1000000) per timed round; CG_KEYS (default 100000) for the callgrind
# instruction counts (valgrind needed). Our side is linked from BUILD (default build:
# `ninja -C BUILD wort_lib wort_bench` is run first). public_art and the WOART build of
# authors_wort are built by hand (README).
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

link() {  # link DRIVER INCLUDE_DIR OUT [FLAGS... --libs LIBS...]
  local drv=$1 inc=$2 out=$3 flags=() libs=(); shift 3
  while [ $# -gt 0 ] && [ "$1" != --libs ]; do flags+=("$1"); shift; done
  [ $# -gt 0 ] && shift && libs=("$@")
  g++ -O3 -std=c++20 -w "${flags[@]}" -Iinclude -Isrc -I"$inc" "$drv" "${libs[@]}" -o "$out" \
    -Wl,--whole-archive "$BUILD/libwort.a" -Wl,--no-whole-archive \
    "$BUILD/src/bench/libwort_bench.a" "$BUILD/libwort.a" -lpmem2 -lpthread -ldl
}

cg_total() {  # callgrind's total of one dump file
  sed -n 's/^totals: *//p' "$1"
}

# measure TAG TIME_BIN COUNT_BIN CG_BIN [ARGS...]: on Sparse and Dense, the timed rounds
# (TAG-DIST-time.json), the count (TAG-DIST-count.txt) and both callgrind sides (TAG-cg.txt);
# ARGS go after the mode (before the JSON path). CG_ENV: extra environment for callgrind.
measure() {
  local tag=$1 tb=$2 cb=$3 gb=$4; shift 4
  for d in sparse dense; do
    "$tb" $d "$N" time "$@" "$W/$tag-$d-time.json"
    "$cb" $d "$N" count "$@" | tee "$W/$tag-$d-count.txt"
    for side in ours theirs; do
      env ${CG_ENV:-} valgrind --tool=callgrind --collect-atstart=no --instr-atstart=no \
        --callgrind-out-file="$W/cg-$tag-$d-$side" "$gb" $d "$CG" cg-$side "$@" > /dev/null 2>&1
      local ins look
      ins=$(cg_total "$W/cg-$tag-$d-$side.1" 2>/dev/null || true)
      look=$(cg_total "$W/cg-$tag-$d-$side.2" 2>/dev/null || true)
      [ -n "$ins" ] && [ -n "$look" ] || { echo "callgrind run failed: $tag $d $side" >&2; exit 1; }
      echo "$d $side insert $ins lookup $look" >> "$W/$tag-cg.txt"
    done
  done
}

commit_of() { git -C "$1" rev-parse HEAD 2>/dev/null || echo unknown; }

# Each entry: TAG INDEX AUTHORS_REPO COMMIT SETUP (SETUP: how their side runs, its words
# joined by "~", shown by results_doc.py with spaces).
entries=()
if [ -f "$A/FAST_FAIR/single/src/btree.h" ]; then
  F=$A/FAST_FAIR/single/src/btree.h
  mkdir -p "$W/ff/clwb" "$W/ff/cg" "$W/ff/count"
  sed -f $V/fast_fair.sed "$F" | sed -f $V/fast_fair_clwb.sed > "$W/ff/clwb/btree.h"
  sed -f $V/fast_fair.sed "$F" > "$W/ff/cg/btree.h"
  sed -f $V/fast_fair.sed "$F" | sed -f $V/fast_fair_count.sed > "$W/ff/count/btree.h"
  link tools/compare/authors_fastfair.cc "$W/ff/clwb" "$W/aff_clwb"
  link tools/compare/authors_fastfair.cc "$W/ff/cg" "$W/aff_cg"
  link tools/compare/authors_fastfair.cc "$W/ff/count" "$W/aff_count" -DAUTHORS_COUNT
  measure ff "$W/aff_clwb" "$W/aff_count" "$W/aff_cg"
  entries+=("ff fastfair DICL/FAST_FAIR $(commit_of "$A/FAST_FAIR") nodes~in~a~/dev/shm~arena")
fi
if [ -f "$A/fptree/fptree.cpp" ]; then
  # Their code is compiled into the driver's unit (authors_fptree.cc says why); no source
  # patch: their flushes are PMDK's (clwb + sfence here once PMDK takes the pool for pmem),
  # their TBB speculative lock falls back to its spin lock without TSX.
  fpt=(-DPMEM -DBUILD_INSPECTOR=1 -DNDEBUG)
  fpl=(--libs -lpmemobj -lpmem -ltbb)
  link tools/compare/authors_fptree.cc "$A/fptree" "$W/afp" "${fpt[@]}" "${fpl[@]}"
  link tools/compare/authors_fptree.cc "$A/fptree" "$W/afp_count" "${fpt[@]}" -DAUTHORS_COUNT "${fpl[@]}"
  # PMEM_IS_PMEM_FORCE=1: PMDK would take the /dev/shm pool for non-pmem and msync it.
  # Under callgrind PMDK flushes with clflush (valgrind 3.19 stops at clwb and clflushopt).
  PMEM_IS_PMEM_FORCE=1 CG_ENV="PMEM_NO_CLWB=1 PMEM_NO_CLFLUSHOPT=1" \
    measure fpt "$W/afp" "$W/afp_count" "$W/afp"
  entries+=("fpt fptree sfu-dis/fptree $(commit_of "$A/fptree") PMDK~pool~in~/dev/shm,~no~TSX")
fi
if [ -f "$A/WORT/src/wort/wort.c" ]; then
  F=$A/WORT/src/wort/wort.c
  mkdir -p "$W/wort/inc/wort"
  cp "$A/WORT/src/wort/wort.h" "$W/wort/inc/wort/wort.h"
  sed -f $V/wort.sed "$F" | sed -f $V/wort_clwb.sed > "$W/wort/clwb.c"
  sed -f $V/wort.sed "$F" > "$W/wort/cg.c"
  sed -f $V/wort.sed "$F" | sed -f $V/wort_count.sed > "$W/wort/count.c"
  sed -f $V/wort.sed "$F" | sed -f $V/wort_clwb.sed | sed -f $V/wort_bump.sed > "$W/wort/bump.c"
  sed -f $V/wort.sed "$F" | sed -f $V/wort_bump.sed > "$W/wort/bumpcg.c"
  sed -f $V/wort.sed "$F" | sed -f $V/wort_count.sed | sed -f $V/wort_bump.sed > "$W/wort/bumpcount.c"
  for v in clwb cg count bump bumpcg bumpcount; do
    gcc -O3 -w -I"$A/WORT/src/wort" -c "$W/wort/$v.c" -o "$W/wort/$v.o"
    link tools/compare/authors_wort.cc "$W/wort/inc" "$W/aw_$v" \
      $([[ $v == *count ]] && echo -DAUTHORS_COUNT) --libs "$W/wort/$v.o"
  done
  measure wort "$W/aw_clwb" "$W/aw_count" "$W/aw_cg" wort
  entries+=("wort wort SeKwonLee/WORT $(commit_of "$A/WORT") nodes~from~their~posix_memalign")
  measure wortbump "$W/aw_bump" "$W/aw_bumpcount" "$W/aw_bumpcg" wort
  entries+=("wortbump wort SeKwonLee/WORT $(commit_of "$A/WORT") nodes~from~a~bump~arena~in~/dev/shm")
fi
if [ -f "$A/ROART/ART/Tree.cpp" ]; then
  # Three copies of their ART/, nvm_mgr/, benchmark/ (timed, callgrind, count), each patched
  # by variants/roart_*.sed and built at -O3 with the definitions of their CMakeLists.txt
  # (their -O0 -g -march=native left out: -O3 and no -march, as our Release build).
  rdef=(-DCLWB -DVARIABLE_LENGTH -DUSE_PMDK -DACMA -DFF_GC -DRECLAIM_MEMORY -DKEY_INLINE
        -DINSTANT_RESTART -DLEAF_ARRAY -DFIND_FIRST -DTRANSACTIONAL)
  for v in timed cg count; do
    r=$W/roart/$v
    mkdir -p "$r/obj"
    cp -r "$A/ROART/ART" "$A/ROART/nvm_mgr" "$A/ROART/benchmark" "$r/"
    sed -i -f $V/roart_util.sed "$r/nvm_mgr/util.h"
    [ $v != cg ] || sed -i -f $V/roart_cg.sed "$r/nvm_mgr/util.h" "$r/nvm_mgr/nvm_mgr.h"
    [ $v != count ] || sed -i -f $V/roart_count.sed "$r/nvm_mgr/util.h"
    sed -i -f $V/roart_config.sed "$r/benchmark/config.h"
    sed -i -f $V/roart_n.sed "$r/ART/N.cpp"
    for f in "$r"/ART/*.cpp "$r"/nvm_mgr/*.cpp; do
      g++ -O3 -std=c++17 -w "${rdef[@]}" -I"$r/ART" -I"$r/nvm_mgr" -I"$r/benchmark" \
        -c "$f" -o "$r/obj/$(basename "$f" .cpp).o" &
      [ "$(jobs -r | wc -l)" -lt 2 ] || wait -n
    done
    wait
    link tools/compare/authors_roart.cc "$r/ART" "$W/ar_$v" "${rdef[@]}" -I"$r/nvm_mgr" \
      -I"$r/benchmark" $([ $v = count ] && echo -DAUTHORS_COUNT) \
      --libs "$r"/obj/*.o -lpmemobj -lnuma -ltbb
  done
  measure roart "$W/ar_timed" "$W/ar_count" "$W/ar_cg"
  entries+=("roart roart madsys-dev/ROART $(commit_of "$A/ROART") their~NVM~file~in~/dev/shm")
fi
if [ -f "$A/RECIPE/P-ART/Tree.cpp" ]; then
  # A patched copy of P-ART/ (with RECIPE's Key.h beside it, as N.h includes ../Key.h) per
  # build; their flush instruction is their compile flag (-DCLWB timed and counted, -DCLFLUSH
  # under callgrind). Their -march=native left out, as in our Release build.
  for v in clwb cg count; do
    r=$W/part/$v
    mkdir -p "$r/P-ART"
    cp "$A/RECIPE/P-ART/"*.cpp "$A/RECIPE/P-ART/"*.h "$r/P-ART/"
    cp "$A/RECIPE/Key.h" "$r/"
    sed -i -f $V/part.sed "$r/P-ART/N.cpp"
    [ $v != count ] || sed -i -f $V/part_count.sed "$r/P-ART/N.cpp"
    link tools/compare/authors_part.cc "$r/P-ART" "$W/ap_$v" -DNDEBUG -faligned-new=64 -mcx16 \
      $([ $v = cg ] && echo -DCLFLUSH || echo -DCLWB) $([ $v = count ] && echo -DAUTHORS_COUNT) \
      --libs -ltbb
  done
  for kind in woart roart; do
    measure part-$kind "$W/ap_clwb" "$W/ap_count" "$W/ap_cg" $kind
    entries+=("part-$kind $kind utsaslab/RECIPE~(P-ART) $(commit_of "$A/RECIPE") their~nodes~from~new,~leaves~from~posix_memalign")
  done
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
    tag, kind, repo, commit, setup = e.split(" ")
    ent = {"index": kind, "authors": repo.replace("~", " "), "authors_commit": commit,
           "setup": setup.replace("~", " "), "dists": {}}
    cgs = {}
    for line in open(f"{w}/{tag}-cg.txt"):
        d, side, _, ins, _, look = line.split()
        cgs.setdefault(d, {})[side] = {"insert": int(ins) / int(cg), "lookup": int(look) / int(cg)}
    for d in ("sparse", "dense"):
        t = json.load(open(f"{w}/{tag}-{d}-time.json"))
        c = open(f"{w}/{tag}-{d}-count.txt").read()
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
