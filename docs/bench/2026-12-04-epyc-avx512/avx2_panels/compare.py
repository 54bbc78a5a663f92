"""Old against new, round by round: python3 compare.py BASE_PREFIX NEW_PREFIX ROUNDS
(reads BASE_PREFIX_1.json ... and NEW_PREFIX_1.json ..., Google Benchmark JSON with median aggregates)."""
import json
import sys


def load(path):
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("aggregate_name") == "median":
            name = b["run_name"].replace("/real_time", "").replace("/pool_MiB:256", "").replace("from_memory/", "")
            out[name] = b.get("GFLOP/s") or b.get("weights_GB/s")
    return out


base, new, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
pairs = {}
for r in range(1, rounds + 1):
    a, b = load(f"{base}_{r}.json"), load(f"{new}_{r}.json")
    for k in sorted(a):
        pairs.setdefault(k, []).append((a[k], b[k]))
for k, v in pairs.items():
    print(f"{k:45s}", "  ".join(f"{x:.1f}->{y:.1f}" for x, y in v), " new/old", " ".join(f"{y / x:.2f}" for x, y in v))
