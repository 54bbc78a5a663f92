#!/usr/bin/env python3
"""Summarizes run.sh's rounds: GFLOP/s of the streaming kernel per build, its share of the same
round's FMA peak, and two threads' rate over twice one thread's.  python3 summarize.py [folder]"""
import glob
import json
import os
import statistics
import sys

folder = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))


def medians(path):
    with open(path) as f:
        data = json.load(f)
    found = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") == "median":
            found[b["run_name"]] = b["GFLOP/s"] / 1e9 if b["GFLOP/s"] > 1e6 else b["GFLOP/s"]
    return found, data["context"]


rounds = sorted(int(p.split("-")[-1][:-5]) for p in glob.glob(os.path.join(folder, "fma-*.json")))
lines = ["| round | positions | FMA peak 1 / 2 threads | before: 1 / 2 threads (2T over 2×1T) | after: 1 / 2 threads (2T over 2×1T) |",
         "|---:|---:|---|---|---|"]
ratios = {}
for r in rounds:
    fma, context = medians(os.path.join(folder, f"fma-{r}.json"))
    peak = {t: next(v for k, v in fma.items() if f"threads:{t}" in k) for t in (1, 2)}
    runs = {b: medians(os.path.join(folder, f"{b}-{r}.json"))[0] for b in ("before", "after")}
    for n in (2048, 4096):
        cells = []
        for b in ("before", "after"):
            one = runs[b][f"heads/stream/d:64/threads:1/positions:{n}/real_time"]
            two = runs[b][f"heads/stream/d:64/threads:2/positions:{n}/real_time"]
            ratios.setdefault((b, n), []).append((one / peak[1], two / peak[2], two / (2 * one)))
            cells.append(f"{one:.1f} ({100 * one / peak[1]:.1f} %) / {two:.1f} ({100 * two / peak[2]:.1f} %) ({two / (2 * one):.3f})")
        lines.append(f"| {r} | {n:,} | {peak[1]:.1f} / {peak[2]:.1f} | {cells[0]} | {cells[1]} |")
lines.append("")
for (b, n), values in sorted(ratios.items()):
    one, two, scaling = (statistics.median(v[i] for v in values) for i in range(3))
    lines.append(f"- {b}, {n:,} positions: median {100 * one:.1f} % of the peak on 1 thread, {100 * two:.1f} % on 2; 2 threads over twice 1: {scaling:.3f}")
print("\n".join(lines))
