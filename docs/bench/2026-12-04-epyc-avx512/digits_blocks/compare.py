"""The digits' products with a K block's four groups unrolled (blocks_<round>.json) against the
group-at-a-time loop before (base_<round>.json), and 64-bit variable shifts for the codes
(shifts_64bit_<round>.json) against the same two (shifts_base_, shifts_blocks_), and Q4_K's high
nibbles left in place (q4_k_nibbles/nibbles_) against blocks (q4_k_nibbles/blocks_): from memory, one
thread, rounds of each binary in turn; medians over the rounds of each run's median, GFLOP/s
(two per weight), and the range over the rounds.

    python3 compare.py
"""
import json
import pathlib
import statistics

HERE = pathlib.Path(__file__).parent


def medians(prefix):
    runs = {}
    for path in sorted(HERE.glob(f"{prefix}_[0-9].json")):
        for b in json.loads(path.read_text())["benchmarks"]:
            if b.get("aggregate_name") == "median" and "GFLOP/s" in b:
                runs.setdefault(b["run_name"], []).append(b["GFLOP/s"])
    return {name: (statistics.median(v), min(v), max(v)) for name, v in runs.items()}


for title, prefixes in (("blocks against base", ["base", "blocks"]),
                        ("64-bit shifts", ["shifts_base", "shifts_blocks", "shifts_64bit"]),
                        ("Q4_K's high nibbles in place", ["q4_k_nibbles/blocks", "q4_k_nibbles/nibbles"])):
    runs = [medians(p) for p in prefixes]
    print(f"\n{title}\n\n| product | " + " | ".join(prefixes) + f" | {prefixes[-1]}/{prefixes[0]} |")
    print("|---|" + "---:|" * (len(prefixes) + 1))
    for name, first in runs[0].items():
        cells = [f"{r[name][0]:.1f} ({r[name][1]:.1f}–{r[name][2]:.1f})" for r in runs]
        short = name.replace("from_memory/", "").replace("/pool_MiB:256/real_time", "")
        print(f"| {short} | " + " | ".join(cells) + f" | {runs[-1][name][0] / first[0]:.2f}× |")
