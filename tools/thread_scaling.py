#!/usr/bin/env python3
"""Throughput of the concurrent indexes at 1 and 2 threads, interleaved, as a markdown table.

usage: tools/thread_scaling.py [--build build] [--out DIR] [--rounds 3] [--keys 1000000]
                               [--index LIST] [--workloads paper,ycsb-a,ycsb-b,ycsb-c,ycsb-e]
                               [--threads 1,2] [--summarize]

Runs, for each round, each workload at each thread count in turn (1, 2, 1, 2, ...: the
machine's drift falls on both alike):
  paper    wort bench --index LIST --keys N --range none --no-search-direct --threads T
           (insert, then search, on Dense, Sparse and Clustered keys)
  ycsb-X   wort bench --index LIST --keys N --dist sparse --workload ycsb-X --ops N --threads T
and writes DIR/<workload>_r<round>_t<T>.json. With --summarize it only reads the JSON already
in DIR. Prints, per index and phase, the median over rounds of the total throughput (Mops/s)
at each thread count and the ratio 2-thread / 1-thread, with the machine's load average at
the start of each run (a ratio means little when the load was above ~1 on 2 cores).
"""
import glob
import json
import os
import re
import subprocess
import sys

import bench_rounds


def run(args):
    os.makedirs(args.out, exist_ok=True)
    for r in range(1, args.rounds + 1):
        for w in args.workloads:
            for t in args.threads:
                load = bench_rounds.record_load(args.out)
                cmd = [os.path.join(args.build, "wort"), "bench", "--index", args.index,
                       "--keys", str(args.keys), "--threads", str(t),
                       "--json", os.path.join(args.out, f"{w}_r{r}_t{t}.json")]
                if w == "paper":
                    cmd += ["--range", "none", "--no-search-direct"]
                else:
                    cmd += ["--dist", "sparse", "--workload", w, "--ops", str(args.keys)]
                print(f"round {r}, {w}, {t} thread(s), load {load}", file=sys.stderr)
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def summarize(out):
    # (workload, index, dist, phase) -> threads -> [Mops/s per round]
    rows = {}
    for path in sorted(glob.glob(os.path.join(out, "*_r*_t*.json"))):
        m = re.match(r"(.+)_r(\d+)_t(\d+)\.json$", os.path.basename(path))
        if not m:
            continue
        w, t = m.group(1), int(m.group(3))
        for c in json.load(open(path))["cases"]:
            if c.get("error"):
                continue
            for p in c["phases"]:
                if p["name"] == "load":
                    continue
                key = (w, c["index"], c["dist"], p["name"])
                rows.setdefault(key, {}).setdefault(t, []).append(p["throughput_ops_s"] / 1e6)
    threads = sorted({t for v in rows.values() for t in v})
    head = ["workload", "index", "keys", "phase"]
    for t in threads:
        head.append(f"{t} thr Mops/s (median; rounds)")
    if len(threads) == 2:
        head.append(f"{threads[1]}/{threads[0]}")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for (w, idx, dist, ph), v in sorted(rows.items(), key=lambda kv: (kv[0][0] != "paper",) + kv[0]):
        cells = [w, idx, dist, ph]
        med = {}
        for t in threads:
            med[t], cell = bench_rounds.median_cell(v.get(t, []), "{:.2f}")
            cells.append(cell)
        if len(threads) == 2:
            cells.append(f"{med[threads[1]] / med[threads[0]]:.2f}x")
        print("| " + " | ".join(cells) + " |")
    bench_rounds.print_load_range(out)


def main():
    ap = bench_rounds.parser(__doc__, "results/threads", "wort,woart,artcow,fastfair,fptree,roart")
    ap.add_argument("--workloads", default="paper,ycsb-a,ycsb-b,ycsb-c,ycsb-e")
    ap.add_argument("--threads", default="1,2")
    args = ap.parse_args()
    args.workloads = args.workloads.split(",")
    args.threads = [int(t) for t in args.threads.split(",")]
    if not args.summarize:
        run(args)
    summarize(args.out)


if __name__ == "__main__":
    main()
