#!/usr/bin/env python3
"""Same-run % of the FMA peak from bench_kernels JSON files (one invocation each).

  python3 summarize.py RUN.json [RUN.json ...]

For each file: heads/stream/d:64 at 2,048 and 4,096 positions, 1 and 2 threads, as a share of the
fma_peak/threads:<t> of the same invocation; from the medians of the repetitions when the file holds
aggregates. "real" divides GFLOP/s over wall time; "cpu" (one thread only) over the thread's CPU time,
which a busy machine's other processes inflate less (both benchmarks run on the calling thread)."""
import json
import re
import sys


def rows(path):
    data = json.load(open(path))
    found = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = re.sub(r"/real_time(_median)?$", "", b["run_name"] if "run_name" in b else b["name"])
        found[name] = b
    return data.get("context", {}), found


def main():
    for path in sys.argv[1:]:
        context, found = rows(path)
        print(f"{path} ({context.get('date', '?')}, load {context.get('load_avg', '?')})")
        for threads in (1, 2):
            peak = found.get(f"fma_peak/threads:{threads}")
            if not peak:
                continue
            for n in (2048, 4096):
                b = found.get(f"heads/stream/d:64/threads:{threads}/positions:{n}")
                if not b:
                    continue
                real = b["GFLOP/s"] / peak["GFLOP/s"]
                line = f"  threads:{threads} positions:{n}  {b['GFLOP/s']:.1f} / {peak['GFLOP/s']:.1f} GFLOP/s = {100 * real:.1f} % (real)"
                if threads == 1:
                    cpu = (b["GFLOP/s"] * b["real_time"] / b["cpu_time"]) / (
                        peak["GFLOP/s"] * peak["real_time"] / peak["cpu_time"])
                    line += f", {100 * cpu:.1f} % (cpu)"
                print(line)
        for part in ("scores", "values", "block"):
            b = found.get(f"stream_parts/{part}/d:64")
            peak = found.get("fma_peak/threads:1")
            if b and peak:
                print(f"  stream_parts/{part}: {100 * b['GFLOP/s'] / peak['GFLOP/s']:.1f} %")
        b = found.get("stream_parts/softmax/d:64")
        if b:
            print(f"  stream_parts/softmax: {b['ns_per_score']:.3f} ns a score")


if __name__ == "__main__":
    main()
