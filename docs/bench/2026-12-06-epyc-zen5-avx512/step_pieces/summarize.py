"""Each repetition of an attn_bench_checkpoint peer run with --read-bandwidth 1 --read-step 1 (step_pieces.patch):
the step's GB/s (weights and cache), the read bandwidth and the step's arrays read beside it, and the shares; then
the ways printed to stderr (per repetition, two passes of: 2 runs, 4 runs, 4 runs with the next array prefetched).

    python3 summarize.py RUN.json RUN.ways.txt
"""
import json
import re
import sys

run = json.load(open(sys.argv[1]))
ways = [float(rate) for rate in re.findall(r"way \d: ([\d.]+)", open(sys.argv[2]).read())]
weights = run["step_weights_bytes"]
for entry in run["decode"]:
    steps = entry["steps"]
    step = [(weights + entry["cache_bytes_per_step"]) * steps / s / 1e9 for s in entry["seconds"]]
    read = [r / 1e9 for r in entry.get("read_bytes_per_second", [])]
    pieces = [r / 1e9 for r in entry.get("step_read_bytes_per_second", [])]
    print("ctx", entry["context"], "step ms", " ".join("%.2f" % (s / steps * 1e3) for s in entry["seconds"]))
    print(" step GB/s", " ".join("%.1f" % r for r in step))
    print(" read GB/s", " ".join("%.1f" % r for r in read))
    print(" step-read GB/s", " ".join("%.1f" % r for r in pieces))
    print(" share of read", " ".join("%.0f%%" % (100 * a / b) for a, b in zip(step, read)))
    print(" share of step-read", " ".join("%.0f%%" % (100 * a / b) for a, b in zip(step, pieces)))
print(" ways (2 runs, 4 runs, 4 runs + next prefetched):")
for i in range(0, len(ways), 6):
    print("  rep", i // 6, " ".join("%.1f" % x for x in ways[i:i + 6]))
