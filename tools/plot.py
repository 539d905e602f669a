#!/usr/bin/env python3
"""Draws the WORT paper's figures from a `wort bench --json` file.

usage: plot.py RESULTS.json [--out DIR]

Writes into DIR (default: the JSON's folder), each only when the run has the data:
  fig7_insert.png    insertion time per key distribution (paper Fig. 7)
  fig8_latency.png   insertion time against emulated PM write latency (Fig. 8)
  fig9_search.png    search time per key distribution (Fig. 9)
  fig10_range.png    range query time for each range size (Fig. 10)
  table1.png         LLC misses and lines written back per insert, LLC misses per search,
                     average leaf depth (Table 1)
  mix_latency.png    latency percentiles per operation type (mix workloads)
  mix_timeline.png   throughput over time (mix workloads)

Times are the worker threads' CPU time per operation (JSON cpu_ns_per_op): on a shared
machine wall time adds whatever else ran; the subtitle gives the machine's load average at
the start and end of the run. Lines written back = lines flushed + non-temporal stores,
drawn as two stacked parts. Every index has one colour in every figure, whatever the
order of --index. After drawing, each figure is checked: value labels that overlap each
other or another bar, and a legend over a bar, are reported on stderr as warnings.
"""
import argparse
import json
import os
import sys
import zlib


def fail(msg):
    print(f"wort plot: {msg}", file=sys.stderr)
    sys.exit(1)


plt = Patch = None  # matplotlib, imported by main() once the JSON has been read


def import_matplotlib():
    global plt, Patch
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as pyplot
        from matplotlib.patches import Patch as patch
    except ImportError as e:
        fail(f"matplotlib is not installed for {sys.executable} ({e}); "
             "tools/install-deps.sh installs python3-matplotlib")
    plt, Patch = pyplot, patch


DIST_LABEL = {"dense": "Dense", "sparse": "Sparse", "clustered": "Clustered"}

# One colour per index kind, in every figure. A kind with create options ("roart:1") has
# its kind's colour, hatched; a label not listed here gets one of EXTRA by a hash of it.
KIND_COLOUR = {
    "art": "#7f7f7f", "wort": "#1f77b4", "woart": "#ff7f0e", "artcow": "#2ca02c",
    "roart": "#d62728", "fptree": "#9467bd", "fastfair": "#8c564b", "wbtree": "#e377c2",
    "nvtree": "#bcbd22",
}
EXTRA = ["#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd",
         "#e6550d", "#31a354", "#756bb1"]


def colour(label):
    kind = label.split(":")[0]
    if kind in KIND_COLOUR:
        return KIND_COLOUR[kind]
    return EXTRA[zlib.crc32(label.encode()) % len(EXTRA)]


def hatch(label):
    return "//" if ":" in label and label.split(":")[0] in KIND_COLOUR else None


def load(path):
    try:
        f = open(path)
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    with f:
        try:
            doc = json.load(f)
        except (ValueError, UnicodeDecodeError) as e:
            fail(f"{path}: not JSON ({e})")
    if not isinstance(doc, dict) or doc.get("schema") != "wort-bench":
        fail(f"{path}: not a wort bench JSON file")
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


def load_text(env):
    """The machine's load average (1 min) at the start and end of the run."""
    start, end = env.get("load_start") or [None], env.get("load_end") or [None]
    cpus = env.get("cpus")
    if start[0] is None and end[0] is None:
        return "load average not recorded"

    def f(v):
        return "?" if v is None else f"{v:.2f}"
    text = f"load average (1 min) {f(start[0])} at the start, {f(end[0])} at the end, on {cpus} CPUs"
    if cpus and max(v for v in (start[0], end[0]) if v is not None) > cpus:
        text += " (more runnable tasks than CPUs: wall time would include waiting)"
    return text


def subtitle(doc):
    o, e = doc["options"], doc["env"]
    return (f"{o['keys']:,} keys, PM mode {e['pm_mode']} ({e['flush_insn']}), "
            f"{e['cpu_model']}, git {e['git_revision'][:10]}\n{load_text(e)}")


def value_label(ax, x, y, text, fontsize=7):
    t = ax.annotate(text, (x, y), ha="center", va="bottom", rotation=90, fontsize=fontsize,
                    xytext=(0, 2), textcoords="offset points")
    ax._wort_labels = getattr(ax, "_wort_labels", []) + [t]
    return t


def grouped_bars(ax, indexes, dists, value, ylabel, fmt="{:.0f}", parts=None):
    """One group of bars per distribution, one bar per index. With `parts` (index, dist) ->
    (lower, upper), each bar is the two stacked, the upper one hatched, and labelled with
    the total and both parts."""
    width = 0.8 / max(1, len(indexes))
    top = 0
    for i, idx in enumerate(indexes):
        for j, d in enumerate(dists):
            v = value(idx, d)
            if v is None:
                continue
            x = j + (i - (len(indexes) - 1) / 2) * width
            kw = dict(color=colour(idx), edgecolor="black", linewidth=0)
            if parts:
                lo, hi = parts(idx, d)
                ax.bar([x], [lo], width, hatch=hatch(idx), label=idx, **kw)
                ax.bar([x], [hi], width, bottom=[lo], hatch="xx", alpha=0.55, **kw)
                text = f"{fmt.format(v)} = {fmt.format(lo)}+{fmt.format(hi)}"
            else:
                ax.bar([x], [v], width, hatch=hatch(idx), label=idx, **kw)
                text = fmt.format(v)
            value_label(ax, x, v, text, 6 if parts else 7)
            top = max(top, v)
    ax.set_xticks(range(len(dists)))
    ax.set_xticklabels([DIST_LABEL.get(d, d) for d in dists])
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    if top > 0:
        ax.set_ylim(0, top * 1.15)


def legend_outside(ax, handles=None, labels=None):
    """The legend to the right of the axes, where it covers no bar."""
    kw = dict(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
        # One entry per label (a stacked bar draws each index twice).
        uniq = {}
        for h, lab in zip(handles, labels):
            uniq.setdefault(lab, h)
        handles, labels = list(uniq.values()), list(uniq.keys())
    return ax.legend(handles, labels, **kw)


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


def cpu_ns_per_op(p):
    return p.get("cpu_ns_per_op")


def fit_labels(fig):
    """Raises each axes' top until its value labels fit inside it (rotated labels of tall
    bars would otherwise cross the title), then shrinks labels that overlap each other or
    another bar. Returns how many overlaps remain."""
    fig.canvas.draw()
    for ax in fig.axes:
        labels = getattr(ax, "_wort_labels", [])
        if not labels:
            continue
        for _ in range(4):
            box = ax.get_window_extent()
            over = max(t.get_window_extent().y1 for t in labels) + 6 - box.y1  # 6 px clear
            if over <= 0:
                break
            lo, hi = ax.get_ylim()
            ax.set_ylim(lo, hi + (hi - lo) * (over + 2) / max(box.height, 1))
            fig.canvas.draw()
        for size in (6, 5, 4):
            if not overlaps(fig, ax):
                break
            for t in labels:
                t.set_fontsize(min(t.get_fontsize(), size))
            fig.canvas.draw()
    return sum(overlaps(fig, ax) for ax in fig.axes)


def overlaps(fig, ax):
    """Value labels of `ax` that overlap another label or a bar other than their own."""
    labels = getattr(ax, "_wort_labels", [])
    boxes = [t.get_window_extent().padded(-0.5) for t in labels]
    n = 0
    for i, b in enumerate(boxes):
        if any(b.overlaps(o) for o in boxes[i + 1:]):
            n += 1
            continue
        x = labels[i].xy[0]
        for bar in ax.patches:
            bx = bar.get_x()
            if bx <= x <= bx + bar.get_width():
                continue  # its own bar (or the part stacked on it)
            if b.overlaps(bar.get_window_extent()) and bar.get_height() > 0:
                n += 1
                break
    return n


def legend_over_bars(fig):
    """Legends that cover a bar or a line's point."""
    n = 0
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None:
            continue
        box = leg.get_window_extent()
        for other in fig.axes:
            if any(p.get_height() > 0 and box.overlaps(p.get_window_extent()) for p in other.patches):
                n += 1
                break
    return n


def save(fig, out, name, written):
    overlapping = fit_labels(fig)
    covered = legend_over_bars(fig)
    path = os.path.join(out, name)
    # bbox_inches="tight" takes in the legends outside the axes and the two-line titles.
    fig.savefig(path, dpi=120, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    if overlapping:
        print(f"wort plot: warning: {name}: {overlapping} value labels overlap", file=sys.stderr)
    if covered:
        print(f"wort plot: warning: {name}: a legend covers bars", file=sys.stderr)
    written.append(path)


def fig_time(data, out, written, name, phase_name, title):
    fig, ax = plt.subplots(figsize=(8, 4.4))
    grouped_bars(ax, data.indexes, data.dists,
                 lambda i, d: data.phase_value(i, d, phase_name, cpu_ns_per_op),
                 "CPU ns per operation")
    ax.set_title(f"{title}, CPU time per operation\n{subtitle(data.doc)}", fontsize=9)
    legend_outside(ax)
    save(fig, out, name, written)


def fig_latency_sweep(data, out, written):
    if len(data.lats) < 2:
        return
    fig, axes = plt.subplots(1, len(data.dists), figsize=(4 * len(data.dists) + 1, 3.8), squeeze=False)
    for ax, d in zip(axes[0], data.dists):
        for idx in data.indexes:
            pts = [(lat, data.phase_value(idx, d, "insert", cpu_ns_per_op, lat)) for lat in data.lats]
            pts = [(x, y) for x, y in pts if y is not None]
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=idx,
                    color=colour(idx), linestyle="--" if hatch(idx) else "-")
        ax.set_title(DIST_LABEL.get(d, d), fontsize=9)
        ax.set_xlabel("write latency per flushed line (ns)")
        ax.set_ylabel("insert CPU ns per operation")
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    legend_outside(axes[0][-1])
    fig.suptitle("Insertion time against emulated PM write latency (Fig. 8), CPU time per operation\n"
                 + subtitle(data.doc), fontsize=9)
    fig.tight_layout()
    save(fig, out, "fig8_latency.png", written)


def fig_range(data, out, written):
    names = order(p["name"] for c in data.cases for p in c["phases"] if p["name"].startswith("range"))
    if not names:
        return
    fig, axes = plt.subplots(1, len(names), figsize=(6 * len(names) + 1, 4.4), squeeze=False)
    for ax, name in zip(axes[0], names):
        grouped_bars(ax, data.indexes, data.dists,
                     lambda i, d: data.phase_value(i, d, name, cpu_ns_per_op), "CPU ns per range query")
        ax.set_title(f"range covering {name[5:]} of the keys", fontsize=9)
    legend_outside(axes[0][-1])
    fig.suptitle("Range query time (Fig. 10), CPU time per query\n" + subtitle(data.doc), fontsize=9)
    fig.tight_layout()
    save(fig, out, "fig10_range.png", written)


def per_op(p, key):
    return p["cache"].get(key)


def written_back(p):
    """(lines flushed, non-temporal stores) per operation; their sum is written back."""
    k = p["counters"]
    return k.get("lines_per_op") or 0.0, k.get("nt_stores_per_op") or 0.0


def fig_table1(data, out, written):
    def wb(i, d):
        parts = data.phase_value(i, d, "insert", written_back)
        return None if parts is None else parts[0] + parts[1]

    panels = [
        ("(a) LLC misses per insertion",
         lambda i, d: data.phase_value(i, d, "insert", lambda p: per_op(p, "llc_misses_per_op")), "{:.1f}", None),
        ("(b) cache lines written back per insertion\n(lines flushed, solid, + non-temporal stores, crossed)",
         wb, "{:.2f}", lambda i, d: data.phase_value(i, d, "insert", written_back)),
        ("(c) LLC misses per search",
         lambda i, d: data.phase_value(i, d, "search", lambda p: per_op(p, "llc_misses_per_op")), "{:.1f}", None),
        ("(d) average leaf depth",
         lambda i, d: (data.case(i, d) or {}).get("stats", {}).get("avg_leaf_depth"), "{:.2f}", None),
    ]
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.5))
    for ax, (title, value, fmt, parts) in zip(axes.flat, panels):
        grouped_bars(ax, data.indexes, data.dists, value, "", fmt, parts)
        if all(value(i, d) is None for i in data.indexes for d in data.dists):
            ax.text(0.5, 0.5, "not measured\n(run with --llc perf or --llc callgrind)",
                    ha="center", va="center", transform=ax.transAxes, fontsize=9, color="gray")
            ax.set_yticks([])
        ax.set_title(title, fontsize=9)
    handles = [Patch(color=colour(i), hatch=hatch(i), label=i) for i in data.indexes]
    handles += [Patch(facecolor="lightgray", label="lines flushed"),
                Patch(facecolor="lightgray", hatch="xx", alpha=0.55, label="non-temporal stores")]
    legend_outside(axes[0][1], handles, [h.get_label() for h in handles])
    src = sorted({p["cache"]["source"] for c in data.cases for p in c["phases"] if p["cache"]["source"]})
    at = sorted({p["cache"]["at_keys"] for c in data.cases for p in c["phases"] if p["cache"]["source"] == "callgrind"})
    llc_size = data.doc["options"].get("llc_size") or 0
    note = f"; LLC from {', '.join(src)}" if src else ""
    if at:
        note += f" at {', '.join(f'{k:,}' for k in at)} keys"
        if llc_size:
            note += f", simulated LL {llc_size // 1024} KiB"
    fig.suptitle("Table 1 of the WORT paper, measured here" + note + "\n" + subtitle(data.doc), fontsize=9)
    fig.tight_layout()
    save(fig, out, "table1.png", written)


def fig_mix(data, out, written):
    runs = [(c, phase(c, "run")) for c in data.cases if phase(c, "run")]
    if not runs:
        return
    one_dist = len({c["dist"] for c, _ in runs}) == 1
    groups_n = sum(len(p["latency_ns"]) for _, p in runs)
    # ~0.75 inch a group: each tick label ("fastfair" over "update") fits under its bars.
    fig, ax = plt.subplots(figsize=(max(9, 0.75 * groups_n), 4.4))
    labels, groups = [], []
    for c, p in runs:
        for op, lat in p["latency_ns"].items():
            name = c["index"] if one_dist else f"{c['index']}/{c['dist']}"
            labels.append(f"{name}\n{op}")
            groups.append([lat.get(k) for k in ("p50", "p90", "p99", "p99_9")])
    width = 0.2
    for k, name in enumerate(("p50", "p90", "p99", "p99.9")):
        ax.bar([x + (k - 1.5) * width for x in range(len(groups))], [g[k] or 0 for g in groups],
               width, label=name, color=plt.cm.Blues(0.35 + 0.2 * k))
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("latency (ns, sampled, wall clock)")
    legend_outside(ax)
    dist = f" on {DIST_LABEL.get(runs[0][0]['dist'], runs[0][0]['dist'])} keys" if one_dist else ""
    ax.set_title(f"Latency percentiles, workload {data.doc['options']['workload']}{dist}\n"
                 f"{subtitle(data.doc)}", fontsize=9)
    save(fig, out, "mix_latency.png", written)

    fig, ax = plt.subplots(figsize=(9, 4.2))
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
        ax.plot(xs, ys, label=f"{c['index']}/{c['dist']}", color=colour(c["index"]))
        lines += 1
    if lines == 0:  # runs shorter than the 100 ms sampling interval: no time series
        plt.close(fig)
        return
    ax.set_xlabel("seconds")
    ax.set_ylabel("Mops/s (wall clock)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    legend_outside(ax)
    ax.set_title(f"Throughput over time (run phase)\n{subtitle(data.doc)}", fontsize=9)
    save(fig, out, "mix_timeline.png", written)


def main():
    ap = argparse.ArgumentParser(prog="wort plot", description=__doc__.split("\n")[0])
    ap.add_argument("json")
    ap.add_argument("--out", help="output folder (default: the JSON's folder)")
    args = ap.parse_args()
    doc = load(args.json)
    import_matplotlib()
    out = args.out or os.path.dirname(os.path.abspath(args.json))
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        fail(f"{out}: {e.strerror}")
    data = Data(doc)
    written = []
    try:
        if doc["options"]["workload"] == "paper":
            fig_time(data, out, written, "fig7_insert.png", "insert", "Insertion time (Fig. 7)")
            fig_time(data, out, written, "fig9_search.png", "search", "Search time (Fig. 9)")
            fig_latency_sweep(data, out, written)
            fig_range(data, out, written)
            fig_table1(data, out, written)
        else:
            fig_mix(data, out, written)
    except OSError as e:
        fail(f"{e.filename or out}: {e.strerror}")
    except (KeyError, TypeError) as e:
        fail(f"{args.json}: missing or malformed field {e} (a JSON of another version?)")
    for w in written:
        print(w)


if __name__ == "__main__":
    main()
