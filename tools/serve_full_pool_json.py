#!/usr/bin/env python3
"""tools/serve-load.sh MODE=full-pool's record: reads its raw lines (one per server, value
size and round: key=value pairs), writes them with the run's command, revision, date and
load to a JSON file, and prints the table tools/results_doc.py renders from it.

usage: serve_full_pool_json.py RAW JSON POOL_MB ROUNDS LOAD_AT_START BUILD_DIR"""
import json
import os
import subprocess
import sys
import time


def value(k, v):
    if k in ("kops_s", "load") or k.endswith("_us"):
        return float(v)
    return int(v) if v.lstrip("-").isdigit() else v


def main():
    raw, out, pool_mb, rounds, load0, build = sys.argv[1:7]
    here = os.path.dirname(os.path.abspath(__file__))
    rows = []
    for line in open(raw):
        d = dict(kv.split("=", 1) for kv in line.split())
        rows.append({k: value(k, v) for k, v in d.items()})
    rev = subprocess.run(["git", "-C", here, "rev-parse", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    names = ("ROUNDS", "SECONDS_PER_RUN", "CONNS", "THREADS", "PAIRS", "NEW", "RATE_KEYS",
             "FP_POOL_MB", "FP_SERVERS")
    env = " ".join(f"{k}='{os.environ[k]}'" if " " in os.environ[k] else f"{k}={os.environ[k]}"
                   for k in names if k in os.environ)
    mc = subprocess.run(["memcached", "-V"], capture_output=True, text=True).stdout.strip()
    doc = {"command_line": " ".join(x for x in ("MODE=full-pool", env, "tools/serve-load.sh", build) if x),
           "git_revision": rev, "date": time.strftime("%Y-%m-%d", time.gmtime()),
           "cpus": os.cpu_count(), "pool_mb": int(pool_mb), "rounds": int(rounds),
           "load_start": load0, "load_end": " ".join(open("/proc/loadavg").read().split()[:3]),
           "memcached": mc, "rows": rows}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    sys.path.insert(0, here)
    import results_doc
    print(results_doc.serve_full_pool_table(doc))


if __name__ == "__main__":
    main()
