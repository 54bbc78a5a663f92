"""Medians of run.sh's rounds: prefill tokens/s and decoding ms/token, before and after, per round."""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
rows = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    name, build, round_, _ = os.path.basename(path).rsplit(".", 3)
    with open(path) as f:
        data = json.load(f)
    prefill = data["prefill"][0]
    decode = data["decode"][0]
    rows.setdefault(name, {}).setdefault(int(round_), {})[build] = (
        prefill["tokens"] / statistics.median(prefill["seconds"]),
        1000 * statistics.median(decode["seconds"]) / decode["steps"],
    )
for name, rounds in rows.items():
    print(f"## {name}, two threads\n")
    print("| round | prefill 128 tok/s before | after | after / before | decode @128 ms/token before | after | before / after |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    ratios_p, ratios_d = [], []
    for r in sorted(rounds):
        b, a = rounds[r].get("before"), rounds[r].get("after")
        if not (a and b):
            continue
        ratios_p.append(a[0] / b[0])
        ratios_d.append(b[1] / a[1])
        print(f"| {r} | {b[0]:.0f} | {a[0]:.0f} | {a[0] / b[0]:.3f} | {b[1]:.2f} | {a[1]:.2f} | {b[1] / a[1]:.3f} |")
    before_p = statistics.median(rounds[r]["before"][0] for r in rounds)
    after_p = statistics.median(rounds[r]["after"][0] for r in rounds)
    before_d = statistics.median(rounds[r]["before"][1] for r in rounds)
    after_d = statistics.median(rounds[r]["after"][1] for r in rounds)
    print(f"| median | {before_p:.0f} | {after_p:.0f} | {statistics.median(ratios_p):.3f} | {before_d:.2f} | {after_d:.2f} | {statistics.median(ratios_d):.3f} |\n")
