"""Keeping every head's attention rows against not, per file: medians of run.sh's interleaved repetitions.
    python3 compare.py"""
import glob
import json

for path in sorted(glob.glob("*.json")):
    medians = {b["run_name"]: b["real_time"] for b in json.load(open(path))["benchmarks"]
               if b.get("aggregate_name") == "median"}
    print(path)
    for name, plain in sorted(medians.items()):
        if "/attention/" in name:
            continue
        kept = medians[name.replace("/context:", "/attention/context:")]
        print(f"  {name.replace('/real_time', '')}: {plain:.3f} ms, rows kept {kept:.3f} ms, {100 * (kept / plain - 1):+.1f} %")
