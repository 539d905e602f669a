#!/usr/bin/env python3
"""Writes docs/RESULTS.md, whole, from the JSON files `tools/run-main.sh` (`make run`) leaves
in a results folder.

usage: results_doc.py RESULTS_DIR [--doc docs/RESULTS.md] [--experiments docs/experiments]

Reads RESULTS_DIR/bench.json (the default benchmark), and if present rounds.json
(lookup_rounds), latency.json (the write-latency sweep), mix.json (a YCSB mix),
varkeys.json (variable-size keys), store_compare.json (tools/store_compare: wort::Store
against LMDB and RocksDB, a separate command), compare.json (tools/compare/run.sh: each
index against its authors' code, a separate command) and serve_full_pool.json (`MODE=full-pool
tools/serve-load.sh`: wort serve against memcached in a full pool, a separate command) and
mutate.json (`make mutate`: the crash tests' mutation score, a separate command); copies the
plots next to the document (docs/results/).
The page opens with a contents list and a headline table (each figure with its metric,
revision and command), then lists the dated records of docs/experiments/ (measurements
`make run` does not make: against the authors' code, threads, memcached, ...), then the
generated sections. Nothing on the page is hand-written: rerun this script after `make run`.
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics

# The WORT paper (FAST'17), Table 1, 128M keys: (b) CLFLUSH per insertion, (d) leaf depth.
PAPER_TABLE1 = {
    "wort": {"flush": (2.2, 2.4, 2.3), "depth": (7.0, 7.0, 8.2), "llc_ins": (6.3, 7.2, 17.0), "llc_search": (6.5, 7.6, 11.5)},
    "woart": {"flush": (2.4, 3.5, 3.7), "depth": (4.0, 4.0, 4.2), "llc_ins": (5.7, 7.9, 11.2), "llc_search": (4.8, 7.9, 8.9)},
    "artcow": {"flush": (2.4, 3.8, 3.9), "depth": (4.0, 4.0, 4.2), "llc_ins": (5.0, 12.7, 12.9), "llc_search": (3.8, 6.2, 8.8)},
    "fptree": {"flush": (4.8, 4.8, 4.8), "depth": (3.0, 3.0, 3.0), "llc_ins": (6.8, 6.8, 6.8), "llc_search": (13.9, 14.1, 14.1)},
    "nvtree": {"flush": (3.3, 3.3, 3.3), "depth": (3.0, 3.0, 3.0), "llc_ins": (35.0, 35.6, 33.6), "llc_search": (33.5, 33.5, 33.3)},
    "wbtree": {"flush": (6.0, 6.0, 6.0), "depth": (4.0, 4.0, 4.0), "llc_ins": (22.3, 22.4, 22.4), "llc_search": (22.9, 22.8, 23.3)},
}
DISTS = ("dense", "sparse", "clustered")
VAR_DISTS = ("varbytes", "words", "fixed20")


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def phase(case, name):
    return next((p for p in case["phases"] if p["name"] == name), None)


def fmt(v, f="{:.2f}"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f.format(v)


def cases_by(doc, lat=None):
    lats = doc["options"]["flush_latencies_ns"] or [0]
    lat = lats[0] if lat is None else lat
    out = {}
    for c in doc["cases"]:
        if c["flush_latency_ns"] == lat:
            out[(c["index"], c["dist"])] = c
    return out


def indexes(doc):
    seen = []
    for c in doc["cases"]:
        if c["index"] not in seen:
            seen.append(c["index"])
    return seen


def table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def env_section(doc):
    e, o = doc["env"], doc["options"]
    return "\n".join([
        f"- git revision: `{e['git_revision']}`",
        f"- machine: {e['cpu_model']}, {e['cpus']} CPUs, {e['kernel']}",
        f"- compiler: {e['compiler']}; flags: `{e['build_flags']}` ({e['build_type']})",
        f"- PM mode: {e['pm_mode']}, flush instruction {e['flush_insn']} (CPU offers: {', '.join(e['cpu_flush_insns'])}); pools on `{o['pool_dir']}`",
        f"- hardware counters: {e['hw_counters']}",
        f"- one clock read (what each latency sample carries beyond its operation: the median of two back-to-back `steady_clock` reads): {fmt(e.get('clock_read_ns'), '{:.0f}')} ns",
        f"- seed {o['seed']}, {o['keys']:,} keys, {o['threads']} thread(s), measured {e['time_utc']}",
        f"- command: `{e['command_line']}`",
    ])


def lines_written_back(c):
    """Lines flushed per insert plus non-temporal 8-byte stores per insert (each writes its
    line back too: ROART's and the concurrent ART engine's commits), so that indexes that
    commit with movnti compare fairly with those that commit with a flushed store."""
    k = (phase(c, "insert") or {}).get("counters", {}) if c else {}
    if k.get("lines_per_op") is None:
        return None
    return k["lines_per_op"] + (k.get("nt_stores_per_op") or 0.0)


def table1_section(doc):
    by = cases_by(doc)
    rows = []
    for idx in indexes(doc):
        r = [idx]
        for key, get, f in (
            ("llc_ins", lambda c: (phase(c, "insert") or {}).get("cache", {}).get("llc_misses_per_op"), "{:.1f}"),
            ("flush", lines_written_back, "{:.2f}"),
            ("llc_search", lambda c: (phase(c, "search") or {}).get("cache", {}).get("llc_misses_per_op"), "{:.1f}"),
            ("depth", lambda c: c["stats"]["avg_leaf_depth"], "{:.2f}"),
        ):
            for d in DISTS:
                c = by.get((idx, d))
                r.append(fmt(get(c) if c else None, f))
        rows.append(r)
    head = ["index"] + [f"{g} {d[0].upper()}" for g in ("(a) LLC/ins", "(b) lines/ins", "(c) LLC/search", "(d) depth") for d in DISTS]
    return table(head, rows)


def write_back_calls(c):
    """Flush calls per insert plus non-temporal 8-byte stores per insert: what the paper's
    Table 1 (b) counts (CLFLUSH calls, one per flushed range, whatever its line count)."""
    k = (phase(c, "insert") or {}).get("counters", {}) if c else {}
    if k.get("flush_calls_per_op") is None:
        return None
    return k["flush_calls_per_op"] + (k.get("nt_stores_per_op") or 0.0)


def paper_side_by_side(doc):
    by = cases_by(doc)
    rows = []
    for idx in indexes(doc):
        p = PAPER_TABLE1.get(idx)
        r = [idx]
        for d_i, d in enumerate(DISTS):
            c = by.get((idx, d))
            ours = write_back_calls(c)
            r.append(f"{fmt(ours)} / {fmt(p['flush'][d_i], '{:.1f}') if p else '–'}")
        for d_i, d in enumerate(DISTS):
            c = by.get((idx, d))
            ours = lines_written_back(c)
            r.append(f"{fmt(ours)} / {fmt(p['flush'][d_i], '{:.1f}') if p else '–'}")
        for d_i, d in enumerate(DISTS):
            c = by.get((idx, d))
            ours = c["stats"]["avg_leaf_depth"] if c else None
            r.append(f"{fmt(ours)} / {fmt(p['depth'][d_i], '{:.1f}') if p else '–'}")
        rows.append(r)
    head = ["index"] + [f"flush calls/insert {d[0].upper()} (ours / paper)" for d in DISTS] + \
           [f"lines/insert {d[0].upper()} (ours / paper)" for d in DISTS] + \
           [f"depth {d[0].upper()} (ours / paper)" for d in DISTS]
    return table(head, rows)


def times_section(doc, key="ns_per_op", dists=DISTS):
    by = cases_by(doc)
    names = []
    for c in doc["cases"]:
        for p in c["phases"]:
            if p["name"] not in names:
                names.append(p["name"])
    rows = []
    for idx in indexes(doc):
        r = [idx]
        for n in names:
            for d in dists:
                c = by.get((idx, d))
                p = phase(c, n) if c else None
                r.append(fmt(p.get(key) if p else None, "{:.0f}"))
        rows.append(r)
    short = (lambda d: d[0].upper()) if dists == DISTS else (lambda d: d)
    head = ["index"] + [f"{n} {short(d)}" for n in names for d in dists]
    return table(head, rows)


def lookup_section(doc):
    by = cases_by(doc)
    rows = []
    for idx in indexes(doc):
        r = [idx]
        for d in DISTS:
            c, base = by.get((idx, d)), by.get(("art", d))
            p, b = (phase(c, "search-direct") if c else None), (phase(base, "search-direct") if base else None)
            ns = p.get("cpu_ns_per_op") if p else None
            rel = ns / b["cpu_ns_per_op"] if (ns and b and b.get("cpu_ns_per_op")) else None
            r.append(f"{fmt(ns, '{:.0f}')} ({fmt(rel, '{:.2f}x')})")
        for d in DISTS:
            c = by.get((idx, d))
            r.append(fmt(c.get("adapter_overhead") if c else None, "{:.3f}"))
        for d in DISTS:  # deterministic: callgrind instructions per lookup, virtual / direct
            c = by.get((idx, d))
            v, di = (phase(c, "search-virtual"), phase(c, "search-direct")) if c else (None, None)
            iv = ((v or {}).get("cache") or {}).get("instructions_per_op")
            idr = ((di or {}).get("cache") or {}).get("instructions_per_op")
            r.append(fmt(iv / idr if iv and idr else None, "{:.3f}"))
        rows.append(r)
    head = ["index"] + [f"lookup ns {d[0].upper()} (vs art)" for d in DISTS] + \
           [f"adapter overhead {d[0].upper()}" for d in DISTS] + \
           [f"adapter instr ratio {d[0].upper()}" for d in DISTS]
    return table(head, rows)


def rounds_section(doc):
    """lookup_rounds' JSON: per index and key set, median CPU ns per op and the median
    (min-max) of the per-round ratios to the baseline."""
    def cell(ns, ratios):
        med = statistics.median
        return f"{med(ns):.0f} ({med(ratios):.2f}x; {min(ratios):.2f}-{max(ratios):.2f})"

    rows, dists, order = {}, [], []
    for r in doc["rows"]:
        rows[(r["index"], r["dist"])] = r
        if r["dist"] not in dists:
            dists.append(r["dist"])
        if r["index"] not in order:
            order.append(r["index"])
    out = []
    for idx in order:
        line = [idx]
        for what in ("insert", "lookup"):
            for d in dists:
                r = rows.get((idx, d))
                line.append(cell(r[what + "_ns"], r[what + "_ratio"]) if r else "–")
        out.append(line)
    head = ["index"] + [f"{w} ns {d[0].upper()} (vs {doc['baseline']}; range)" for w in ("insert", "lookup") for d in dists]
    return table(head, out)


STORE_OPS = ("put", "get", "update", "scan100", "remove")


def store_compare_cells(doc):
    """store_compare's JSON: per (value size, threads, op, engine) the per-round ns/op, CPU
    (the process's: working threads plus an engine's background threads) and wall."""
    cells = {}
    for r in doc["rows"]:
        c = cells.setdefault((r["value_size"], r["threads"], r["op"], r["engine"]), {"cpu": {}, "wall": {}})
        c["cpu"][r["round"]] = r["cpu_ns"] / r["ops"]
        c["wall"][r["round"]] = r["wall_ns"] / r["ops"]
    return cells


def store_compare_section(doc, metric):
    cells = store_compare_cells(doc)
    engines = doc["engines"]
    stores = [e for e in engines if e.startswith("store-")]
    others = [e for e in engines if not e.startswith("store-")]
    configs = sorted({(k[0], k[1]) for k in cells})
    med = statistics.median

    def ratio(a, b):
        rs = [a[r] / b[r] for r in a if r in b and b[r] > 0]
        return f"{med(rs):.2f}x ({min(rs):.2f}-{max(rs):.2f})" if rs else "–"

    rows = []
    for vs, th in configs:
        for op in STORE_OPS:
            line = [f"{vs} B", str(th), op]
            for e in engines:
                c = cells.get((vs, th, op, e))
                line.append(f"{med(c[metric].values()):.0f}" if c else "–")
            for st in stores:
                for o in others:
                    a, b = cells.get((vs, th, op, st)), cells.get((vs, th, op, o))
                    line.append(ratio(a[metric], b[metric]) if a and b else "–")
            rows.append(line)
    head = ["value", "threads", "op"] + [f"{e} ns/op" for e in engines] + \
        [f"{st[6:]} / {o}" for st in stores for o in others]
    return table(head, rows)


def store_compare_verdict(doc):
    """Per operation and (store kind, rival): in which configurations (value size, threads)
    the store's median CPU ratio is below 1 (it wins) and where not (it loses)."""
    cells = store_compare_cells(doc)
    engines = doc["engines"]
    stores = [e for e in engines if e.startswith("store-")]
    others = [e for e in engines if not e.startswith("store-")]
    configs = sorted({(k[0], k[1]) for k in cells})
    rows = []
    for op in STORE_OPS:
        line = [op]
        for st in stores:
            for o in others:
                win, noise = [], []
                n = 0
                for vs, th in configs:
                    a, b = cells.get((vs, th, op, st)), cells.get((vs, th, op, o))
                    if not a or not b:
                        continue
                    n += 1
                    rs = [a["cpu"][r] / b["cpu"][r] for r in a["cpu"] if r in b["cpu"]]
                    if statistics.median(rs) < 1:
                        win.append(f"{vs} B/{th}t")
                    if min(rs) < 1 <= max(rs):
                        noise.append(f"{vs} B/{th}t")
                if len(win) == n:
                    cell = f"wins all {n}"
                elif not win:
                    cell = f"loses all {n}"
                else:
                    cell = f"wins {len(win)} of {n}: " + ", ".join(win)
                if noise:
                    cell += " (rounds disagree: " + ", ".join(noise) + ")"
                line.append(cell)
        rows.append(line)
    return table(["op"] + [f"{st[6:]} against {o}" for st in stores for o in others], rows)


def store_compare_text(doc):
    cmd = doc["command_line"]
    return [
        "## Key-value store against LMDB and RocksDB", "",
        "`wort::Store` (one per index kind: `wort`, the library's radix tree, and `fastfair`, a",
        "B+-tree like LMDB's) against LMDB and RocksDB in one process run, built by",
        "`tools/store_compare/store_compare.cc`, every engine in the same directory",
        f"(`{doc['dir']}`, a tmpfs: no DAX, no persistent memory) and at the same durability, an",
        "operation that returned survives `kill -9` of the process but not a power loss: the",
        "store as always (each write written back and committed before it returns), LMDB",
        f"`{doc['lmdb']}` (each commit writes the shared map in place, no msync: the fastest",
        "LMDB mode that survives `kill -9`; without WRITEMAP each commit also copies its pages",
        f"with pwrite), RocksDB {doc['rocksdb']} (each write appended to the WAL in the",
        "page cache; compression off because the values are random bytes, otherwise defaults).",
        f"{doc['keys']:,} keys of {doc['key_bytes']} bytes (a hash of the key number, then the number), one",
        "operation per transaction / commit; per round, value size and thread count each engine",
        "in turn (the order rotated each round) builds a fresh database and runs: put (every key",
        "inserted, random order), get (every key, random order; the value compared in place:",
        "the store's zero-copy `read`, LMDB's map, RocksDB's PinnableSlice), update (every key",
        f"replaced), scan100 ({doc['keys'] // doc['scan_len']:,} scans of {doc['scan_len']} keys from a random key,",
        "each key and value compared), remove (every key; the store and LMDB must report it was",
        "there, RocksDB cannot tell). Every answer is checked (a wrong one fails the run).",
        "RocksDB's background flushes and compactions a write phase leaves pending are waited",
        "for inside that phase's time. Threads split each phase's operations.", "",
        f"- command: `{cmd}`",
        f"- revision: `{doc['git_revision'][:12]}`; date: {doc['date']}; {doc['cpus']} CPUs ({doc['host']})",
        f"- load average (1, 5, 15 min): {doc['load_start']} at the start, {doc['load_end']} at the end"
        f" ({doc['minutes']:.0f} min; the machine's other jobs share its cores)", "",
        f"CPU ns per operation: the process's CPU time over the phase (the working threads and any",
        f"engine's own background threads; the JSON also has the working threads' alone) divided",
        f"by its operations, median of {doc['rounds']} rounds; then",
        "the store's ratio to each rival, median of the per-round ratios and their range",
        "(below 1: the store spends less).", "",
        store_compare_section(doc, "cpu"), "",
        "Wall ns per operation (the phase's elapsed time over its operations: with 2 threads, the",
        "inverse of the throughput; the machine's other jobs inflate it), and the same ratios:", "",
        store_compare_section(doc, "wall"), "",
        "Where the store wins and where it loses, by CPU per operation (a win: the median",
        "ratio below 1), over the value sizes and thread counts (B/t); \"rounds disagree\" names",
        "the configurations whose per-round ratios lie on both sides of 1:", "",
        store_compare_verdict(doc), "",
    ]


def compare_text(doc):
    """tools/compare/run.sh's JSON: each index against its authors' code, per key set: one
    table, a row per (entry, key set)."""
    rows = []
    for e in doc["indexes"]:
        for d in ("sparse", "dense"):
            x = e["dists"].get(d)
            if not x:
                continue
            t, c, i = x["time"], x["per_insert"], x["instructions"]
            rng = lambda p: f"{p['ratio']:.2f} ({p['ratio_min']:.2f}–{p['ratio_max']:.2f})"
            rows.append([e["index"], f"{e['authors']} `{e['authors_commit'][:7]}`",
                         e.get("setup", ""), d, rng(t["insert"]), rng(t["lookup"]),
                         f"{t['insert']['ours_ns']:.0f} / {t['insert']['theirs_ns']:.0f}",
                         f"{t['lookup']['ours_ns']:.0f} / {t['lookup']['theirs_ns']:.0f}",
                         f"{c['ours_lines']:.2f} + {c['ours_nt']:.2f} nt / {c['theirs_lines']:.2f}",
                         f"{c['ours_fences']:.2f} / {c['theirs_fences']:.2f}",
                         f"{i['ours']['insert']:.0f} / {i['theirs']['insert']:.0f}",
                         f"{i['ours']['lookup']:.0f} / {i['theirs']['lookup']:.0f}",
                         f"{t['wrong_ours']} / {t['wrong_theirs']}"])
    return [
        "## Against the authors' code (`tools/compare/run.sh`)", "",
        "Each index against the code its paper's authors published (or, for FPTree and P-ART,",
        "the public implementation named), in one process, on the same",
        f"{doc['keys']:,} 8-byte keys (Sparse: uniform 64-bit; Dense: 1..N), inserted in one shuffled",
        "order and looked up in another; our nodes in a pool file in /dev/shm, theirs where the",
        "column \"their side\" says; write-backs `clwb` + `sfence` on both sides, the authors' code",
        "patched only as tools/compare/README.md lists (each sed line explained). Time: thread-CPU",
        "ns per operation over 7 rounds, each a fresh tree of each side with the first side",
        "alternating; the ratio ours/theirs is the median of the per-round ratios, with its range",
        "(below 1: ours is faster). Lines written back and fences per insert from one round of a",
        "counting build (FPTree's theirs include PMDK's own; P-ART's theirs count each",
        "non-temporal store as a line); instructions per operation from callgrind at",
        f"{doc['cg_keys']:,} keys (the driver's loop and answer check included on both sides).",
        "Every lookup answer is checked on both sides (wrong answers: ours / theirs).", "",
        f"- command: `{doc['command_line']}`",
        f"- revision: `{doc['git_revision'][:12]}`; date: {doc['date']}; load average at the end {doc['load_end']:.1f}", "",
        table(["ours", "authors' code", "their side", "keys", "insert ratio", "lookup ratio",
               "insert ns ours / theirs", "lookup ns ours / theirs", "lines written back / insert",
               "fences / insert", "instructions / insert", "instructions / lookup",
               "wrong answers"], rows), "",
    ]


def serve_full_pool_table(doc):
    """tools/serve-load.sh MODE=full-pool's JSON: per (fill value size, server) over the
    rounds: items held after the fill (median, min..max), per MiB of -m, against
    memcached's in the same round; the new-size sets stored and their evictions; the set
    rate into the full pool and its ratio to memcached's in the same round."""
    def med(xs):
        xs = sorted(xs)
        n = len(xs)
        return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2

    def spread(xs, f):
        return f"{f.format(med(xs))} ({f.format(min(xs))}..{f.format(max(xs))})"

    by = {}
    for r in doc["rows"]:
        by.setdefault((r["value"], r["server"]), {})[r["round"]] = r
    rows = []
    for (v, s), rs in by.items():
        mc = by.get((v, "memcached"), {})
        held = [r["fill_items_after"] for r in rs.values()]
        rate = [r["kops_s"] for r in rs.values()]
        held_x = [r["fill_items_after"] / mc[k]["fill_items_after"] for k, r in rs.items() if k in mc]
        rate_x = [r["kops_s"] / mc[k]["kops_s"] for k, r in rs.items() if k in mc]
        one = next(iter(rs.values()))
        new, size = one["new"], one["new_size"]
        stored = sum(new - r["new_failed"] for r in rs.values())
        need = new * (64 + size) // (64 + v) + 1
        rows.append([f"{v} / {size}", s, spread(held, "{:,.0f}"), f"{med(held) / doc['pool_mb']:,.0f}",
                     spread(held_x, "{:.2f}x") if s != "memcached" else "1",
                     f"{stored} of {new * len(rs)}",
                     spread([r["new_evictions"] for r in rs.values()], "{:,.0f}"), f"{need:,}",
                     f"{sum(r['fill_failed'] for r in rs.values())}",
                     spread(rate, "{:.1f}"),
                     spread(rate_x, "{:.2f}x") if s != "memcached" else "1"])
    return table(["fill / new value B", "server", "items held", "per MiB", "held vs memcached",
                  "new-size sets stored", "their evictions", "their bytes in fill items",
                  "fill sets refused", "set kops/s, full", "set rate vs memcached"], rows)


def serve_full_pool_text(doc):
    return [
        "## `wort serve` in a full pool, against memcached", "",
        f"`wort serve` with each persistent index and {doc['memcached']} (Debian), both with",
        f"`-m {doc['pool_mb']}` (item memory: wort's pool file is larger, its index lives in it;",
        "src/server/README.md), the same clients on loopback, a fresh server per run, the servers",
        f"in turn within each of {doc['rounds']} rounds. Per run: `tests/server/full_pool_client.py`",
        "fills the cache past full (1.5 x -m of values of the fill size, 32-byte keys, pipelined",
        "100 sets at a time), then sets 300 values of the new size on new keys one at a time; then",
        "`tools/serve_load.cc` sets values of the fill size over 2,000,000 keys for a few seconds",
        "(nearly every set a new key, each one evicting). Items held: curr_items after the fill;",
        "the ratios to memcached are per round (median, min..max). Set rates are this shared",
        "machine's: compare within a round, not across runs.", "",
        f"- command: `{doc['command_line']}`",
        f"- revision: `{doc['git_revision'][:12]}`; date: {doc['date']}; {doc['cpus']} CPUs",
        f"- load average (1, 5, 15 min): {doc['load_start']} at the start, {doc['load_end']} at the end", "",
        serve_full_pool_table(doc), "",
    ]


def mutation_text(doc):
    """make mutate's JSON (tools/mutate.py --json): the crash tests' score per catalogue."""
    cats = doc["catalogues"]
    tot = {k: sum(c[k] for c in cats.values()) for k in next(iter(cats.values()))}
    def row(name, c):
        meaningful = c["mutations"] - c["na"] - c["harmless"]
        return [name, str(c["mutations"]), f"{c['killed']} / {meaningful}", str(c["harmless"]),
                str(c["survived"]), str(c["timeout"]), str(c["na"])]
    partial = doc["command_line"] != "make mutate"
    out = ["## Mutation score of the crash tests (`make mutate`)", "",
           "tools/mutate.py injects persistence bugs into the real code (a dropped write-back or",
           "fence, a commit left unflushed, unfenced, split into two 4-byte stores or moved before",
           "its data, a free hoisted above its unlink), one mutant at a time, and runs the crash",
           "tests that cover the mutated file. A mutant is killed when a test fails. One declared",
           "harmless in its catalogue line (tools/mutations/*.txt, with why) and surviving is not",
           "counted against the score; none is harmless because a test's pool is small (the crash",
           "tests also place blocks above 4 GiB).",
           "",
           f"`{doc['command_line']}` at {doc['git_revision'][:12]} on {doc['date']}, {doc['mode']}, "
           f"{doc['seconds']} s (load {doc['load_end']:.1f} at the end)"
           + (" — a partial run (`--only`)." if partial else "."), "",
           table(["catalogue", "mutations", "meaningful killed", "declared harmless",
                  "survived", "timed out", "not applicable"],
                 [row(n, c) for n, c in sorted(cats.items())] + [row("**all**", tot)]), ""]
    for name in doc["survivors"]:
        out.append(f"- survivor (not declared harmless): `{name}`")
    for name in doc["timeouts"]:
        out.append(f"- timed out (not counted as killed): `{name}`")
    if doc["survivors"] or doc["timeouts"]:
        out.append("")
    return out


def latency_section(doc):
    rows = []
    for c in doc["cases"]:
        if c["flush_latency_ns"] != (doc["options"]["flush_latencies_ns"] or [0])[0]:
            continue
        for p in c["phases"]:
            for op, lat in p["latency_ns"].items():
                rows.append([f"{c['index']}/{c['dist']}", p["name"], op, fmt(p["throughput_ops_s"] / 1e6 if p["throughput_ops_s"] else None, "{:.3f}"),
                             fmt(lat.get("samples"), "{:d}"), fmt(lat.get("mean"), "{:.0f}"), fmt(lat.get("phase_mean"), "{:.0f}"),
                             fmt(lat["p50"], "{:.0f}"), fmt(lat["p90"], "{:.0f}"), fmt(lat["p99"], "{:.0f}"), fmt(lat["p99_9"], "{:.0f}"),
                             fmt(p["counters"]["lines_per_op"] + (p["counters"].get("nt_stores_per_op") or 0.0)),
                             fmt(p["counters"]["lines_per_op"]), fmt(p["counters"].get("nt_stores_per_op")),
                             fmt(p["counters"]["fences_per_op"])])
    return table(["case", "phase", "op", "Mops/s", "samples", "sampled mean ns", "phase mean ns", "p50 ns", "p90 ns", "p99 ns", "p99.9 ns",
                  "lines written back/op", "lines flushed/op", "nt stores/op", "fences/op"], rows)


def chained_section(doc):
    """One lookup's latency (search-chained: each lookup's key chosen through the previous
    lookup's value) beside a loop's throughput (search-direct) and the sampled latencies of
    the `search` phase's lookups, each timed alone between two clock reads."""
    by = cases_by(doc)
    rows = []
    for idx in indexes(doc):
        for d in DISTS:
            c = by.get((idx, d))
            if not c or not phase(c, "search-chained"):
                continue
            di, ch, se = phase(c, "search-direct"), phase(c, "search-chained"), phase(c, "search")
            lat = ((se or {}).get("latency_ns") or {}).get("lookup") or {}
            chained = ch.get("cpu_ns_per_op")
            direct = (di or {}).get("cpu_ns_per_op")
            mean, p50 = lat.get("mean"), lat.get("p50")
            rows.append([f"{idx}/{d}", fmt(direct, "{:.0f}"), fmt(chained, "{:.0f}"),
                         fmt(chained / direct if chained and direct else None, "{:.2f}x"),
                         fmt(p50, "{:.0f}"), fmt(mean, "{:.0f}"),
                         fmt(mean / chained if mean and chained else None, "{:.2f}")])
    return table(["case", "loop ns/lookup (search-direct)", "one lookup ns (search-chained)", "chained / loop",
                  "sampled p50 ns (search)", "sampled mean ns (search)", "sampled mean / chained"], rows)


def instructions_section(doc):
    """Callgrind's instructions per insert and per lookup (search-direct), and the lookup
    ratio to `art`: deterministic for a given build, seed and key count."""
    by = cases_by(doc)
    def instr(idx, d, name):
        c = by.get((idx, d))
        p = phase(c, name) if c else None
        return ((p or {}).get("cache") or {}).get("instructions_per_op")
    rows = []
    for idx in indexes(doc):
        r = [idx]
        r += [fmt(instr(idx, d, "insert"), "{:.0f}") for d in DISTS]
        for d in DISTS:
            v, base = instr(idx, d, "search-direct"), instr("art", d, "search-direct")
            r.append(f"{fmt(v, '{:.0f}')} ({fmt(v / base if v and base else None, '{:.2f}x')})")
        rows.append(r)
    head = ["index"] + [f"instr/insert {d[0].upper()}" for d in DISTS] + [f"instr/lookup {d[0].upper()} (vs art)" for d in DISTS]
    return table(head, rows)


def insert_counters(c):
    return ((phase(c, "insert") or {}).get("counters") or {}) if c else {}


def written_back_cell(c):
    """Lines written back per insert: lines flushed plus non-temporal 8-byte stores (each
    sends its line to memory too), with both parts beside it."""
    k = insert_counters(c)
    fl, nt = k.get("lines_per_op"), k.get("nt_stores_per_op")
    if fl is None:
        return "–"
    nt = nt or 0.0
    return f"{fl + nt:.2f} ({fl:.2f} + {nt:.2f})"


HEADLINE_HEAD_NOTE = ("Each row is one metric on one key set (D = Dense, S = Sparse, C = Clustered: the "
                      "WORT paper's 8-byte keys); each cell one index. `revision` is the commit that was "
                      "measured, `command` the line of \"Reproduce\" that measured it.")


def headline(bench, rounds):
    """The figures a researcher quotes: (metric, key set) rows, one column per index, and the
    revision and command of each row."""
    by = cases_by(bench)
    idxs = indexes(bench)
    rev = (bench["env"].get("git_revision") or "?")[:7]
    rr = {}
    if rounds:
        for r in rounds["rows"]:
            rr[(r["index"], r["dist"])] = r

    def cpu(name):
        return lambda c: (phase(c, name) or {}).get("cpu_ns_per_op") if c else None

    def instr(name):
        return lambda c: (((phase(c, name) or {}).get("cache")) or {}).get("instructions_per_op") if c else None

    llc_keys = (((phase(bench["cases"][0], "insert") or {}).get("cache") or {}).get("at_keys") or 0)
    metrics = [
        ("lines written back per insert (flushed + non-temporal)", "B", written_back_cell, None),
        ("fences per insert", "B", lambda c: insert_counters(c).get("fences_per_op"), "{:.2f}"),
        ("CPU ns per insert", "B", cpu("insert"), "{:.0f}"),
        ("CPU ns per lookup (search-direct)", "B", cpu("search-direct"), "{:.0f}"),
        (f"instructions per lookup (callgrind, {llc_keys:,} keys)", "B", instr("search-direct"), "{:.0f}"),
        ("average leaf depth", "B", lambda c: c["stats"]["avg_leaf_depth"] if c else None, "{:.2f}"),
        ("PM bytes per key", "B", lambda c: c["stats"]["pm_bytes_per_key"] if c else None, "{:.1f}"),
    ]
    rows = []
    for name, cmd, get, f in metrics:
        for d in DISTS:
            r = [name, d[0].upper()]
            for idx in idxs:
                c = by.get((idx, d))
                r.append(get(c) if f is None else fmt(get(c) if c else None, f))
            if any(v != "–" for v in r[2:]):  # a metric this run did not measure is left out
                rows.append(r + [f"`{rev}`", cmd])
    if rounds:
        for what in ("lookup", "insert"):
            for d in DISTS:
                r = [f"{what} CPU time / `{rounds['baseline']}`, interleaved (median of {rounds['rounds']} rounds)", d[0].upper()]
                for idx in idxs:
                    x = rr.get((idx, d))
                    r.append(f"{statistics.median(x[what + '_ratio']):.2f}x" if x else "–")
                rows.append(r + [f"`{rev}`", "R"])
    return table(["metric", "keys"] + idxs + ["revision", "command"], rows)


def experiments(exp_dir, doc_dir):
    """The dated records under docs/experiments/, newest first: (date, title, link)."""
    out = []
    if not os.path.isdir(exp_dir):
        return out
    for name in sorted(os.listdir(exp_dir), reverse=True):
        if not re.match(r"\d{4}-\d{2}-\d{2}-.*\.md$", name):
            continue
        with open(os.path.join(exp_dir, name)) as f:
            first = f.readline().strip().lstrip("# ").strip()
        title = first.split(": ", 1)[1] if ": " in first else first
        out.append((name[:10], title, os.path.relpath(os.path.join(exp_dir, name), doc_dir)))
    return out


def anchor(title):
    """GitHub's heading anchor."""
    a = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
    return a



def space_section(doc):
    rows = []
    by = cases_by(doc)
    for (idx, d), c in by.items():
        s, r = c["stats"], c["recovery"]
        rec = "–"
        if r["measured"]:
            rec = f"{r['open_s'] * 1e3:.2f} / {r['reclaim_s'] * 1e3:.2f} ms, {r['lost']} lost of {r['acknowledged']:,}"
        elif r["error"]:
            rec = r["error"]
        rows.append([f"{idx}/{d}", fmt(s["pm_bytes_per_key"], "{:.1f}"), fmt(s["dram_bytes_per_key"], "{:.1f}"),
                     str(s["max_leaf_depth"]), rec])
    return table(["case", "PM bytes/key", "DRAM bytes/key", "max depth", "recovery: open+lookup / +reclaim"], rows)


def sweep_section(doc):
    lats = doc["options"]["flush_latencies_ns"]
    rows = []
    for idx in indexes(doc):
        for d in DISTS:
            r = [f"{idx}/{d}"]
            for lat in lats:
                c = cases_by(doc, lat).get((idx, d))
                p = phase(c, "insert") if c else None
                r.append(fmt(p["ns_per_op"] if p else None, "{:.0f}"))
            rows.append(r)
    return table(["case"] + [f"{lat} ns" for lat in lats], rows)


def mix_section(doc):
    rows = []
    for c in doc["cases"]:
        p = phase(c, "run")
        if not p:
            continue
        for op, lat in p["latency_ns"].items():
            rows.append([f"{c['index']}/{c['dist']}", fmt(p["throughput_ops_s"] / 1e6, "{:.3f}"), op,
                         str(p["per_type"][op]["ops"]), fmt(lat["p50"], "{:.0f}"), fmt(lat["p99"], "{:.0f}"),
                         fmt(lat["p99_9"], "{:.0f}")])
    return table(["case", "run Mops/s", "op", "ops", "p50 ns", "p99 ns", "p99.9 ns"], rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--doc", default=os.path.join(here, "..", "docs", "RESULTS.md"))
    ap.add_argument("--experiments", default=os.path.join(here, "..", "docs", "experiments"))
    args = ap.parse_args()
    bench = load(os.path.join(args.results, "bench.json"))
    if not bench:
        raise SystemExit(f"{args.results}/bench.json not found: run tools/run-main.sh first")
    sweep = load(os.path.join(args.results, "latency.json"))
    mix = load(os.path.join(args.results, "mix.json"))
    var = load(os.path.join(args.results, "varkeys.json"))
    rounds = load(os.path.join(args.results, "rounds.json"))
    store_cmp = load(os.path.join(args.results, "store_compare.json"))
    authors_cmp = load(os.path.join(args.results, "compare.json"))
    serve_fp = load(os.path.join(args.results, "serve_full_pool.json"))
    mutate = load(os.path.join(args.results, "mutate.json"))
    doc_dir = os.path.dirname(os.path.abspath(args.doc))
    img_dir = os.path.join(doc_dir, "results")
    os.makedirs(img_dir, exist_ok=True)
    imgs = []
    for name in sorted(os.listdir(args.results)):
        if name.endswith(".png"):
            shutil.copy(os.path.join(args.results, name), os.path.join(img_dir, name))
            imgs.append(name)
    res_abs = os.path.abspath(args.results) + "/"

    def command(d):
        words = d["env"]["command_line"].replace(res_abs, "results/").split(" ")
        return " ".join(["build/wort"] + words[1:])

    cmd = command(bench)
    keys = bench["options"]["keys"]
    out = [
        "## Environment",
        "",
        env_section(bench),
        "",
        "## Reproduce",
        "",
        "```sh",
        f"WORT_KEYS={keys} make run          # or: tools/run-main.sh build",
        cmd,
    ]
    if sweep:
        out.append(command(sweep))
    if mix:
        out.append(command(mix))
    if var:
        out.append(command(var))
    if rounds:
        out.append(f"build/lookup_rounds --keys {rounds['keys']} --rounds {rounds['rounds']} --json results/rounds.json")
    if store_cmp:
        out.append(store_cmp["command_line"] + "   # a separate command, not in make run")
    if serve_fp:
        out.append(serve_fp["command_line"] + "   # a separate command, not in make run")
    if mutate:
        out.append(mutate["command_line"] + "   # writes results/mutate.json; not in make run")
    out += ["tools/results_doc.py results", "```", ""]
    out += ["## Table 1 (the WORT paper's layout)", "",
            "(a) LLC misses per insert, (b) cache lines written back per insert (flushed lines plus 8-byte non-temporal stores: ROART and the concurrent ART engine commit with movnti), (c) LLC misses per search,",
            "(d) average leaf depth; D = Dense, S = Sparse, C = Clustered. LLC misses come from",
            "callgrind's cache simulation where the machine has no hardware counters (see notes).", "",
            table1_section(bench), ""]
    for n in bench.get("notes", []):
        out.append(f"- note: {n}")
    out += ["", "## Side by side with the paper's Table 1", "",
            "Only the figures that do not depend on the hardware. The paper inserted 128M keys; we",
            f"insert {keys:,}, so the trees are shallower: with 4-bit spans (WORT) depth grows by one",
            f"level per 16x more keys (log16(128M) = {math.log(128e6, 16):.1f} against log16({keys:,}) = "
            f"{math.log(keys, 16):.1f}), with 8-bit spans",
            f"(WOART, ART+CoW) by one level per 256x (log256: {math.log(128e6, 256):.2f} against "
            f"{math.log(keys, 256):.2f}). Lines flushed per insert",
            "depend little on the key count once the tree is past its first levels.", "",
            paper_side_by_side(bench), "",
            "## Time per operation (ns; Fig. 7 insert, Fig. 9 search, Fig. 10 range)", "",
            times_section(bench), "",
            "The same phases in CPU time of the benchmark thread (ns/op): steadier than wall time on",
            "a VM whose cores other jobs share.", "",
            times_section(bench, "cpu_ns_per_op"), "",
            "## Lookup time relative to the volatile ART, and the adapter's overhead", "",
            "CPU ns per lookup of `search-direct` (the same keys in the same order as `search`, a",
            "loop on the concrete index class: no virtual call, none of the bench's per-operation",
            "work), its ratio to `art` (the DRAM ART without persistence), and the adapter overhead:",
            "`search-virtual` / `search-direct` CPU time, the cost of calling through `wort::Index`,",
            "and the same ratio in instructions from the callgrind pass (deterministic; the time",
            "ratio is within this VM's noise).", "",
            lookup_section(bench), ""]
    if rounds:
        out += ["## Against the volatile ART, interleaved (`lookup_rounds`)", "",
                "The ratios above divide two phases that ran a minute apart, and this VM's speed",
                "drifts by tens of percent within a run. `tools/lookup_rounds.cc` measures them so that",
                f"the drift cancels: on the same {rounds['keys']:,} keys, {rounds['rounds']} rounds, each building a fresh",
                "tree of every index in turn (rotated order, each in its own pool, pages mapped first;",
                "`art`'s malloc'd arena faults its pages in during its inserts, as in `wort bench`)",
                "and timing its inserts, then three passes of lookups over every key (the concrete",
                "class's loop, as `search-direct`), the indexes in turn, an index's fastest pass being",
                "its figure for the round; every value is checked. Thread CPU ns per op (median of the",
                f"rounds), the median of the per-round ratios to `{rounds['baseline']}`, and their range.", "",
                rounds_section(rounds), ""]
    out += ["## Instructions per operation (callgrind)", "",
            f"From the callgrind pass ({(phase(bench['cases'][0], 'insert') or {}).get('cache', {}).get('at_keys', 0) or 0:,} keys; "
            "deterministic for a given build and seed, unlike the times above): instructions per",
            "insert, and per lookup of `search-direct` with its ratio to the volatile `art`.", "",
            instructions_section(bench), "",
            "## Latency percentiles and persistence cost per operation", "",
            "Latencies are sampled at random gaps (src/bench/sampler.h: a seeded geometric gap, so no",
            "periodic cost can alias with the sampling); `sampled mean` is the mean of the samples and",
            "`phase mean` the phase's wall time per operation: when the two agree, the percentiles",
            "describe the phase. (The machine's other jobs inflate the phase mean, not the samples.)",
            f"Each sample also carries one clock read ({fmt(bench['env'].get('clock_read_ns'), '{:.0f}')} ns on this run's machine: \"Environment\"),",
            "which the phase mean spreads over the operations between samples: an operation of",
            "100 ns is sampled a third slower for that alone. Lookups differ for another reason too:",
            "see \"One lookup's latency against a loop's throughput\" below.", "",
            latency_section(bench), "",
            "## One lookup's latency against a loop's throughput", "",
            "Why the sampled lookup latencies sit above the lookup phases' ns/op: `search-direct`",
            "is a loop of independent lookups, whose cache misses the core overlaps with the next",
            "lookups' (a throughput); `search-chained` runs the same lookups with each key's address",
            "computed from the previous lookup's value (plus a zero that depends on it:",
            "`bench::lookup_chained`), so no lookup starts before the one before it has read its",
            "leaf (a latency). A sampled lookup is timed alone between two clock reads, so its mean",
            "should match `search-chained`, not `search-direct` (CPU ns for the two loops; the",
            "samples are wall time, which the machine's other jobs can only inflate).", "",
            chained_section(bench), "",
            "## Space and recovery", "",
            "Recovery: a child process loads the keys into a file pool and is killed with SIGKILL",
            "half-way; then `Pool::open` + `Index::open` + the first lookup, and then the allocator's",
            "reclaim, are timed, and every acknowledged key is looked up.", "",
            space_section(bench), ""]
    if sweep:
        out += ["## Insert time against emulated write latency (ns/op; Fig. 8)", "",
                f"{sweep['options']['keys']:,} keys; the latency is a busy-wait per flushed cache line,",
                "added after the real write-back instruction. Between the larger latencies the slope is",
                "close to the lines flushed per insert (Table 1 (b)); the first step is smaller, most",
                "likely because the busy-wait overlaps the real write-back that the next fence would",
                "otherwise wait for.", "",
                sweep_section(sweep), ""]
    if mix:
        out += [f"## Mixed workload: {mix['options']['workload']} ({mix['options']['mix']['ratios']}, {mix['options']['mix']['choice']})", "",
                mix_section(mix), ""]
    if var:
        by = cases_by(var)
        srcs = sorted({f"{c['dist']}: {c['key_source']}, {c['keys']:,} keys of {c['avg_key_len']:.1f} bytes on average" for c in var["cases"]})
        out += ["## Variable-size keys (ns/op)", "",
                "ROART's random byte strings of 4 to 128 bytes (varbytes), a real word list (words),",
                "and the WORT paper's 20-byte Memcached keys (fixed20):", ""]
        out += [f"- {s}" for s in srcs]
        out += ["", times_section(var, dists=VAR_DISTS), "",
                "Lines flushed per insert and PM bytes per key:", "",
                table(["index"] + [f"lines/insert {d}" for d in VAR_DISTS] + [f"PM B/key {d}" for d in VAR_DISTS],
                      [[idx] + [fmt((phase(by[(idx, d)], "insert") or {}).get("counters", {}).get("lines_per_op") if (idx, d) in by else None) for d in VAR_DISTS]
                       + [fmt(by[(idx, d)]["stats"]["pm_bytes_per_key"] if (idx, d) in by else None, "{:.1f}") for d in VAR_DISTS]
                       for idx in indexes(var)]), ""]
    if store_cmp:
        out += store_compare_text(store_cmp)
    if authors_cmp:
        out += compare_text(authors_cmp)
    if serve_fp:
        out += serve_full_pool_text(serve_fp)
    if mutate:
        out += mutation_text(mutate)
    if imgs:
        out += ["## Plots", ""]
        for name in imgs:
            out.append(f"![{name}](results/{name})")
            out.append("")
    rounds_cmd = (f"build/lookup_rounds --keys {rounds['keys']} --rounds {rounds['rounds']} "
                  "--json results/rounds.json") if rounds else None
    records = experiments(args.experiments, doc_dir)
    sections = [l[3:] for l in out if l.startswith("## ")]
    head = [
        "# Results",
        "",
        "Measured on this project's development machine by `make run` (which runs",
        "`tools/run-main.sh`), then written, whole, by `tools/results_doc.py results`.",
        "The machine is a shared 2-core VM with no persistent memory: pools live on `/dev/shm`,",
        "the flush instruction really runs (PM mode `real`), and write latency is emulated where",
        "a table says so. Absolute times are this VM's and are noisy (other jobs share the cores);",
        "the counts (lines written back, fences, depth, bytes, instructions, simulated cache",
        "misses) are exact and repeat for a given seed. Compare within one run, not across runs;",
        "for ratios between indexes prefer the interleaved rows (command R), since the bench's",
        "cases run one after another while the machine's speed drifts.",
        "",
        "## Contents",
        "",
        "- [Headline figures](#headline-figures)",
    ]
    if records:
        head.append("- [Other measurements (dated records)](#other-measurements-dated-records)")
    head += [f"- [{t}](#{anchor(t)})" for t in sections]
    head += ["", "## Headline figures", "",
             f"{keys:,} keys, one thread, seed {bench['options']['seed']}. " + HEADLINE_HEAD_NOTE, "",
             headline(bench, rounds), "",
             f"- B: `{cmd}`"]
    if rounds_cmd:
        head.append(f"- R: `{rounds_cmd}`")
    head.append("")
    if records:
        head += ["## Other measurements (dated records)", "",
                 "Measurements `make run` does not make (against the authors' code, threads, memcached,",
                 "mechanisms one at a time, the mutation score, design decisions): each is a dated",
                 "record with its question, method (command and revision), result and decision.", ""]
        head += [f"- {d}: [{t}]({link})" for d, t, link in records]
        head.append("")
    with open(args.doc, "w") as f:
        f.write("\n".join(head + out))
    print(args.doc)


if __name__ == "__main__":
    main()
