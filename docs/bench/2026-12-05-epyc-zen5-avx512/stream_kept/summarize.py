#!/usr/bin/env python3
"""run.sh's rounds as shares of the same invocation's FMA peak.  python3 summarize.py [folder]"""
import glob
import json
import os
import statistics
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
shares = {}
for path in sorted(glob.glob(os.path.join(folder, "round-*.json"))):
    with open(path) as f:
        data = json.load(f)
    median = {b["run_name"]: b["GFLOP/s"] for b in data["benchmarks"] if b.get("aggregate_name") == "median"}
    peak = {t: next(v for k, v in median.items() if k.startswith(f"fma_peak/threads:{t}")) for t in (1, 2)}
    print(f"{os.path.basename(path)} ({data['context']['date']}, load {data['context']['load_avg']}): "
          f"peak {peak[1]:.1f} / {peak[2]:.1f} GFLOP/s")
    for kind in ("heads", "heads_kept"):
        for t in (1, 2):
            for n in (2048, 4096):
                rate = median[f"{kind}/stream/d:64/threads:{t}/positions:{n}/real_time"]
                shares.setdefault((kind, t, n), []).append(100 * rate / peak[t])
                print(f"  {kind}/stream threads:{t} positions:{n}: {rate:.1f} GFLOP/s, {100 * rate / peak[t]:.1f} %")
print()
print("| timed as | threads | 2,048 positions (median) | 4,096 positions (median) |")
print("|---|---:|---|---|")
for kind in ("heads", "heads_kept"):
    for t in (1, 2):
        cells = [", ".join(f"{x:.1f}" for x in shares[(kind, t, n)]) + f" % ({statistics.median(shares[(kind, t, n)]):.1f})"
                 for n in (2048, 4096)]
        print(f"| {kind}/stream | {t} | {cells[0]} | {cells[1]} |")
