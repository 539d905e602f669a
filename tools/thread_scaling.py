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
import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys


def run(args):
    os.makedirs(args.out, exist_ok=True)
    loads = []
    for r in range(1, args.rounds + 1):
        for w in args.workloads:
            for t in args.threads:
                load = open("/proc/loadavg").read().split()[0]
                loads.append(float(load))
                cmd = [os.path.join(args.build, "wort"), "bench", "--index", args.index,
                       "--keys", str(args.keys), "--threads", str(t),
                       "--json", os.path.join(args.out, f"{w}_r{r}_t{t}.json")]
                if w == "paper":
                    cmd += ["--range", "none", "--no-search-direct"]
                else:
                    cmd += ["--dist", "sparse", "--workload", w, "--ops", str(args.keys)]
                print(f"round {r}, {w}, {t} thread(s), load {load}", file=sys.stderr)
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(args.out, "loadavg.txt"), "w") as f:
        f.write(" ".join(map(str, loads)) + "\n")


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
            xs = v.get(t, [])
            med[t] = statistics.median(xs) if xs else float("nan")
            cells.append(f"{med[t]:.2f} ({', '.join(f'{x:.2f}' for x in xs)})")
        if len(threads) == 2:
            cells.append(f"{med[threads[1]] / med[threads[0]]:.2f}x")
        print("| " + " | ".join(cells) + " |")
    lf = os.path.join(out, "loadavg.txt")
    if os.path.exists(lf):
        ls = [float(x) for x in open(lf).read().split()]
        print(f"\nload average at the start of the runs: {min(ls):.2f} to {max(ls):.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default="results/threads")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--index", default="wort,woart,artcow,fastfair,fptree,roart")
    ap.add_argument("--workloads", default="paper,ycsb-a,ycsb-b,ycsb-c,ycsb-e")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--summarize", action="store_true", help="only read the JSON in --out")
    args = ap.parse_args()
    args.workloads = args.workloads.split(",")
    args.threads = [int(t) for t in args.threads.split(",")]
    if not args.summarize:
        run(args)
    summarize(args.out)


if __name__ == "__main__":
    main()
