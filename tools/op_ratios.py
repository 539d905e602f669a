#!/usr/bin/env python3
"""The FPTree paper's base-operation experiment (its §6.2, Fig. 6): after a warm-up load,
back-to-back Finds, Inserts, Updates and Deletes; prints each index's time per operation
and the speed-up of one index (--base, default fptree) over each other one, as the paper
reports it ("FPTree outperforms NV-Tree and wBTree by x/x/x/x for Find/Insert/Update/Delete").

usage: tools/op_ratios.py [--build build] [--out DIR] [--index fptree,nvtree,wbtree]
                          [--base fptree] [--keys 1000000] [--dist sparse] [--rounds 3]
                          [--ops find,insert,update,delete] [--write-latency 0]
                          [--steps] [--summarize]

ROART's Fig. 16 (each mechanism's gain, from the raw tree with all four off to the full
one) is the same experiment over one kind with create options, read as steps:
  tools/op_ratios.py --index roart:15,roart:11,roart:9,roart:1,roart --dist varbytes \
      --ops insert,find,update,delete,scan --steps
(word 0 bits, src/index/roart/README.md: 8 = no MO, 4 = no SMP, 2 = no EC, 1 = no LC; so
raw, +SMP, +EC, +MO, +LC = the paper's order.) --steps prints each index's gain over the
one before it in --index order instead of the speed-ups over --base.

For each round, each operation is one `wort bench` call over every index (so the indexes of
one operation run back to back, and the rounds interleave them):
  find    --workload mix --mix lookup=100 --dist-choice shuffled --ops N
  insert  --workload mix --mix insert=100 --ops N          (N fresh keys after the load)
  update  --workload mix --mix update=100 --dist-choice shuffled --ops N
  delete  --workload mix --mix remove=100 --dist-choice shuffled --ops N
each after loading N keys (--keys N --dist D, one thread). `shuffled` touches every loaded
key once (as the paper's back-to-back operations do; uniform choice would draw keys twice).
Figures are the median over rounds of the run phase's CPU ns/op (the benchmark thread's CPU
time: steadier than wall time on a shared VM). --write-latency adds emulated ns per line
written back (the paper's SCM latency also slows reads, which we cannot emulate: say so).
"""
import glob
import json
import os
import re
import subprocess
import sys

import bench_rounds

OPS = {
    "find": ["--mix", "lookup=100", "--dist-choice", "shuffled"],
    "insert": ["--mix", "insert=100"],
    "update": ["--mix", "update=100", "--dist-choice", "shuffled"],
    "delete": ["--mix", "remove=100", "--dist-choice", "shuffled"],
  "scan": ["--mix", "scan=100", "--dist-choice", "shuffled"],  # 100 keys per scan
}


def run(a):
    os.makedirs(a.out, exist_ok=True)
    for r in range(1, a.rounds + 1):
        for op in a.ops:
            flags = OPS[op]
            load = bench_rounds.record_load(a.out)
            print(f"round {r}, {op}, load {load}", file=sys.stderr)
            cmd = [os.path.join(a.build, "wort"), "bench", "--index", a.index, "--keys", str(a.keys),
                   "--dist", a.dist, "--workload", "mix", "--ops", str(a.keys),
                   "--write-latency", str(a.write_latency),
                   "--json", os.path.join(a.out, f"{op}_r{r}.json")] + flags
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def summarize(a):
    ns = {}  # (index, op) -> [cpu ns/op per round]
    misses = {}
    counts = {}  # (index, op) -> (lines written back, fences, instructions or None) per op
    for path in sorted(glob.glob(os.path.join(a.out, "*_r*.json"))):
        m = re.match(r"(\w+)_r(\d+)\.json$", os.path.basename(path))
        if not m or m.group(1) not in OPS:
            continue
        op = m.group(1)
        for c in json.load(open(path))["cases"]:
            if c.get("error"):
                continue
            p = next(p for p in c["phases"] if p["name"] == "run")
            ns.setdefault((c["index"], op), []).append(p["cpu_ns_per_op"])
            k = p.get("counters", {})
            counts[(c["index"], op)] = (k.get("lines_per_op", 0) + k.get("nt_stores_per_op", 0),
                                        k.get("fences_per_op", 0))
            misses[(c["index"], op)] = p.get("misses", 0)
    ops = [op for op in a.ops if any(o == op for _, o in ns)]
    order = a.index.split(",")
    indexes = sorted({i for i, _ in ns}, key=lambda i: (order.index(i) if i in order else len(order), i))
    if not a.steps:
        indexes.sort(key=lambda i: i != a.base)
    print("| index | " + " | ".join(f"{op} CPU ns/op (rounds)" for op in ops) + " |")
    print("|---|" + "---|" * len(ops))
    med = {}
    for i in indexes:
        cells = []
        for op in ops:
            med[(i, op)], cell = bench_rounds.median_cell(ns.get((i, op), []), "{:.0f}")
            cells.append(cell)
        print(f"| {i} | " + " | ".join(cells) + " |")
    print()
    if a.steps:
        print("| step | " + " | ".join(f"{op} gain" for op in ops) + " |")
        print("|---|" + "---|" * len(ops))
        for prev, i in zip(indexes, indexes[1:]):
            print(f"| {prev} -> {i} | " +
                  " | ".join(f"{(med[(prev, op)] / med[(i, op)] - 1) * 100:+.1f}%" for op in ops) + " |")
    else:
        print(f"| {a.base} speed-up over | " + " | ".join(ops) + " |")
        print("|---|" + "---|" * len(ops))
        for i in indexes:
            if i == a.base:
                continue
            print(f"| {i} | " + " | ".join(f"{med[(i, op)] / med[(a.base, op)]:.2f}x" for op in ops) + " |")
    print("\nLines written back (flushed + non-temporal stores) and fences per operation "
          "(exact counters, the same in every round):\n")
    print("| index | " + " | ".join(f"{op} lines / fences" for op in ops) + " |")
    print("|---|" + "---|" * len(ops))
    for i in indexes:
        print(f"| {i} | " + " | ".join(
            "{:.2f} / {:.2f}".format(*counts[(i, op)]) if (i, op) in counts else "-" for op in ops) + " |")
    bad = {k: v for k, v in misses.items() if v}
    if bad:
        print("\nmisses (operations that found no key):", bad)
    bench_rounds.print_load_range(a.out)


def main():
    ap = bench_rounds.parser(__doc__, "results/op_ratios", "fptree,nvtree,wbtree")
    ap.add_argument("--base", default="fptree")
    ap.add_argument("--dist", default="sparse")
    ap.add_argument("--write-latency", type=int, default=0)
    ap.add_argument("--ops", default="find,insert,update,delete")
    ap.add_argument("--steps", action="store_true",
                    help="gain of each --index entry over the one before it")
    a = ap.parse_args()
    a.ops = a.ops.split(",")
    for op in a.ops:
        if op not in OPS:
            ap.error(f"--ops: unknown operation '{op}' (known: {', '.join(OPS)})")
    if not a.summarize:
        run(a)
    summarize(a)


if __name__ == "__main__":
    main()
