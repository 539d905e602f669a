"""Shared by the interleaved-rounds tools (thread_scaling.py, op_ratios.py): the options every
such run takes, the machine's load recorded beside the JSON, and the "median (rounds)" cells.
"""
import argparse
import os
import statistics


def parser(doc, out, index):
    """The options every rounds tool takes; `out` and `index` are its defaults."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--out", default=out)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keys", type=int, default=1000000)
    ap.add_argument("--index", default=index)
    ap.add_argument("--summarize", action="store_true", help="only read the JSON in --out")
    return ap


def record_load(out):
    """Appends the 1-minute load average to OUT/loadavg.txt and returns it (a string)."""
    load = open("/proc/loadavg").read().split()[0]
    with open(os.path.join(out, "loadavg.txt"), "a") as f:
        f.write(load + "\n")
    return load


def print_load_range(out):
    path = os.path.join(out, "loadavg.txt")
    if os.path.exists(path):
        ls = [float(x) for x in open(path).read().split()]
        print(f"\nload average at the start of the runs: {min(ls):.2f} to {max(ls):.2f}")


def median_cell(xs, fmt):
    """(median or NaN, "median (x1, x2, ...)") with each number formatted by `fmt`."""
    m = statistics.median(xs) if xs else float("nan")
    return m, f"{fmt.format(m)} ({', '.join(fmt.format(x) for x in xs)})"
