#!/usr/bin/env python3
"""run.sh's files as shares of the FMA peak measured the same way in the same round:
alone (one process on CPU 0), pair (two processes at once, one a CPU: their sum over fma_peak's
sum at once), team (one process, threads:2).   python3 summarize.py [folder]"""
import json
import statistics
import sys
from pathlib import Path


def gflops(path):
    for b in json.loads(path.read_text())["benchmarks"]:
        if b.get("aggregate_name") == "median":
            return b["GFLOP/s"] / 1e9 if b["GFLOP/s"] > 1e6 else b["GFLOP/s"]
    raise SystemExit(f"{path}: no median")


def main():
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
    rounds = sorted({int(p.stem.rsplit("-", 1)[1]) for p in folder.glob("fma-alone-*.json")})
    print("| round | positions | alone: stream / fma | pair: each CPU's stream / fma | team of 2: stream / fma |")
    print("|---:|---:|---|---|---|")
    shares = {}
    for r in rounds:
        fma = {mode: [gflops(folder / f"fma-{part}-{r}.json") for part in parts]
               for mode, parts in (("alone", ["alone"]), ("pair", ["pair0", "pair1"]), ("team", ["team"]))}
        for n in (2048, 4096):
            cells = []
            for mode, parts in (("alone", ["alone"]), ("pair", ["pair0", "pair1"]), ("team", ["team"])):
                stream = [gflops(folder / f"stream{n}-{part}-{r}.json") for part in parts]
                share = sum(stream) / sum(fma[mode])
                shares.setdefault((n, mode), []).append(share)
                each = " + ".join(f"{s:.1f}" for s in stream)
                peak = " + ".join(f"{f:.1f}" for f in fma[mode])
                cells.append(f"{each} / {peak} GFLOP/s = **{100 * share:.1f} %**")
            print(f"| {r} | {n:,} | " + " | ".join(cells) + " |")
    print()
    for (n, mode), values in sorted(shares.items()):
        print(f"- {n:,} positions, {mode}: median {100 * statistics.median(values):.1f} % "
              f"({', '.join(f'{100 * v:.1f}' for v in values)})")


if __name__ == "__main__":
    main()
