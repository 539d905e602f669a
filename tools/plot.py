#!/usr/bin/env python3
"""Draws the WORT paper's figures from a `wort bench --json` file.

usage: plot.py RESULTS.json [--out DIR]

Writes into DIR (default: the JSON's folder), each only when the run has the data:
  fig7_insert.png    insertion time per key distribution (paper Fig. 7)
  fig8_latency.png   insertion time against emulated PM write latency (Fig. 8)
  fig9_search.png    search time per key distribution (Fig. 9)
  fig10_range.png    range query time for each range size (Fig. 10)
  table1.png         LLC misses and lines flushed per insert, LLC misses per search,
                     average leaf depth (Table 1)
  mix_latency.png    latency percentiles per operation type (mix workloads)
  mix_timeline.png   throughput over time (mix workloads)
"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

DIST_LABEL = {"dense": "Dense", "sparse": "Sparse", "clustered": "Clustered"}


def load(path):
    with open(path) as f:
        doc = json.load(f)
    if doc.get("schema") != "wort-bench":
        sys.exit(f"{path}: not a wort bench JSON file")
    return doc


def phase(case, name):
    for p in case["phases"]:
        if p["name"] == name:
            return p
    return None


def order(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def subtitle(doc):
    o, e = doc["options"], doc["env"]
    return (f"{o['keys']:,} keys, PM mode {e['pm_mode']} ({e['flush_insn']}), "
            f"{e['cpu_model']}, git {e['git_revision'][:10]}")


def grouped_bars(ax, indexes, dists, value, ylabel, fmt="{:.0f}"):
    """One group of bars per distribution, one bar per index."""
    width = 0.8 / max(1, len(indexes))
    for i, idx in enumerate(indexes):
        xs, ys = [], []
        for j, d in enumerate(dists):
            v = value(idx, d)
            if v is not None:
                xs.append(j + (i - (len(indexes) - 1) / 2) * width)
                ys.append(v)
        bars = ax.bar(xs, ys, width, label=idx)
        for b, y in zip(bars, ys):
            ax.annotate(fmt.format(y), (b.get_x() + b.get_width() / 2, y), ha="center",
                        va="bottom", fontsize=7, xytext=(0, 1), textcoords="offset points")
    ax.set_xticks(range(len(dists)))
    ax.set_xticklabels([DIST_LABEL.get(d, d) for d in dists])
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


class Data:
    def __init__(self, doc):
        self.doc = doc
        self.cases = doc["cases"]
        lats = doc["options"]["flush_latencies_ns"] or [0]
        self.lat0 = lats[0]
        self.lats = lats
        self.indexes = order(c["index"] for c in self.cases)
        self.dists = order(c["dist"] for c in self.cases)

    def case(self, idx, dist, lat=None):
        lat = self.lat0 if lat is None else lat
        for c in self.cases:
            if c["index"] == idx and c["dist"] == dist and c["flush_latency_ns"] == lat:
                return c
        return None

    def phase_value(self, idx, dist, name, get, lat=None):
        c = self.case(idx, dist, lat)
        p = phase(c, name) if c else None
        return get(p) if p else None


def ns_per_op(p):
    return p["ns_per_op"]


def save(fig, out, name, written):
    path = os.path.join(out, name)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)


def fig_time(data, out, written, name, phase_name, title):
    fig, ax = plt.subplots(figsize=(7, 4.2))
    grouped_bars(ax, data.indexes, data.dists,
                 lambda i, d: data.phase_value(i, d, phase_name, ns_per_op), "ns per operation")
    ax.set_title(f"{title}\n{subtitle(data.doc)}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, out, name, written)


def fig_latency_sweep(data, out, written):
    if len(data.lats) < 2:
        return
    fig, axes = plt.subplots(1, len(data.dists), figsize=(4 * len(data.dists), 3.8), squeeze=False)
    for ax, d in zip(axes[0], data.dists):
        for idx in data.indexes:
            pts = [(lat, data.phase_value(idx, d, "insert", ns_per_op, lat)) for lat in data.lats]
            pts = [(x, y) for x, y in pts if y is not None]
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=idx)
        ax.set_title(DIST_LABEL.get(d, d))
        ax.set_xlabel("write latency per flushed line (ns)")
        ax.set_ylabel("insert ns per operation")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Insertion time against emulated PM write latency (Fig. 8)\n" + subtitle(data.doc),
                 fontsize=9)
    fig.tight_layout()
    save(fig, out, "fig8_latency.png", written)


def fig_range(data, out, written):
    names = order(p["name"] for c in data.cases for p in c["phases"] if p["name"].startswith("range"))
    if not names:
        return
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names), 4.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        grouped_bars(ax, data.indexes, data.dists,
                     lambda i, d: data.phase_value(i, d, name, ns_per_op), "ns per range query")
        ax.set_title(f"range covering {name[5:]} of the keys")
        ax.legend(fontsize=8)
    fig.suptitle("Range query time (Fig. 10)\n" + subtitle(data.doc), fontsize=9)
    fig.tight_layout()
    save(fig, out, "fig10_range.png", written)


def per_op(p, key):
    c = p["cache"]
    return c.get(key)


def fig_table1(data, out, written):
    panels = [
        ("(a) LLC misses per insertion", lambda i, d: data.phase_value(i, d, "insert", lambda p: per_op(p, "llc_misses_per_op")), "{:.1f}"),
        ("(b) cache lines flushed per insertion", lambda i, d: data.phase_value(i, d, "insert", lambda p: p["counters"]["lines_per_op"]), "{:.2f}"),
        ("(c) LLC misses per search", lambda i, d: data.phase_value(i, d, "search", lambda p: per_op(p, "llc_misses_per_op")), "{:.1f}"),
        ("(d) average leaf depth", lambda i, d: (data.case(i, d) or {}).get("stats", {}).get("avg_leaf_depth"), "{:.2f}"),
    ]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    for ax, (title, value, fmt) in zip(axes.flat, panels):
        grouped_bars(ax, data.indexes, data.dists, value, "", fmt)
        if all(value(i, d) is None for i in data.indexes for d in data.dists):
            ax.text(0.5, 0.5, "not measured\n(run with --llc perf or --llc callgrind)",
                    ha="center", va="center", transform=ax.transAxes, fontsize=9, color="gray")
            ax.set_yticks([])
        ax.set_title(title, fontsize=10)
    axes.flat[1].legend(fontsize=8)
    src = sorted({p["cache"]["source"] for c in data.cases for p in c["phases"] if p["cache"]["source"]})
    at = sorted({p["cache"]["at_keys"] for c in data.cases for p in c["phases"] if p["cache"]["source"] == "callgrind"})
    llc_size = data.doc["options"].get("llc_size") or 0
    note = f"; LLC from {', '.join(src)}" if src else ""
    if at:
        note += f" at {', '.join(f'{k:,}' for k in at)} keys"
        if llc_size:
            note += f", simulated LL {llc_size // 1024} KiB"
    fig.suptitle("Table 1 of the WORT paper, measured here\n" + subtitle(data.doc) + note, fontsize=9)
    fig.tight_layout()
    save(fig, out, "table1.png", written)


def fig_mix(data, out, written):
    runs = [(c, phase(c, "run")) for c in data.cases if phase(c, "run")]
    if not runs:
        return
    fig, ax = plt.subplots(figsize=(8, 4.2))
    labels, groups = [], []
    for c, p in runs:
        for op, lat in p["latency_ns"].items():
            labels.append(f"{c['index']}/{c['dist']}\n{op}")
            groups.append([lat.get(k) for k in ("p50", "p90", "p99", "p99_9")])
    width = 0.2
    for k, name in enumerate(("p50", "p90", "p99", "p99.9")):
        ax.bar([x + (k - 1.5) * width for x in range(len(groups))], [g[k] or 0 for g in groups],
               width, label=name)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("latency (ns, sampled)")
    ax.legend(fontsize=8)
    ax.set_title(f"Latency percentiles, workload {data.doc['options']['workload']}\n{subtitle(data.doc)}",
                 fontsize=9)
    fig.tight_layout()
    save(fig, out, "mix_latency.png", written)

    fig, ax = plt.subplots(figsize=(8, 4))
    lines = 0
    for c, p in runs:
        tl = [(0.0, 0)] + [tuple(x) for x in (p.get("timeline") or [])]
        if len(tl) < 2:
            continue
        xs, ys = [], []
        for (t0, n0), (t1, n1) in zip(tl, tl[1:]):
            if t1 > t0:
                xs.append(t1)
                ys.append((n1 - n0) / (t1 - t0) / 1e6)
        ax.plot(xs, ys, label=f"{c['index']}/{c['dist']}")
        lines += 1
    if lines == 0:  # runs shorter than the 100 ms sampling interval: no time series
        plt.close(fig)
        return
    ax.set_xlabel("seconds")
    ax.set_ylabel("Mops/s")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Throughput over time (run phase)", fontsize=9)
    fig.tight_layout()
    save(fig, out, "mix_timeline.png", written)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("json")
    ap.add_argument("--out", help="output folder (default: the JSON's folder)")
    args = ap.parse_args()
    doc = load(args.json)
    out = args.out or os.path.dirname(os.path.abspath(args.json))
    os.makedirs(out, exist_ok=True)
    data = Data(doc)
    written = []
    if doc["options"]["workload"] == "paper":
        fig_time(data, out, written, "fig7_insert.png", "insert", "Insertion time (Fig. 7)")
        fig_time(data, out, written, "fig9_search.png", "search", "Search time (Fig. 9)")
        fig_latency_sweep(data, out, written)
        fig_range(data, out, written)
        fig_table1(data, out, written)
    else:
        fig_mix(data, out, written)
    for w in written:
        print(w)


if __name__ == "__main__":
    main()
