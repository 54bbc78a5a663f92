#!/usr/bin/python3
"""Sight at speed: attn's statistics, rows on demand and reused-storage weights
against its streaming kernel, the machine's FMA peak and the peers, in one go.

    cmake --workflow --preset bench
    /usr/bin/python3 tools/benchmarks/bench_sight.py          # ~10 minutes on 2 cores

Steps, each command printed as it runs:
 (1) build/bench/bench/attn_bench_kernels on fma_peak, matrix_multiply, sight/* (512 ... 4,096
     positions) and heads/{stream,weights}/d:64/threads:2 at 2,048, medians of 3, twice: in the
     default environment and with GLIBC_TUNABLES=glibc.malloc.hugetlb=1;
 (2) sight_long/{stream,statistics,statistics_only} at 16,384 (2 interleaved rounds, the faster of each kept)
     and 65,536 positions, and sight_long/rows at 16,384, each in a process of its own, so that
     its maxrss_MB is its own;
 (3) tools/benchmarks/bench_peers.py (OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset for that command only):
     the weights-returning formulations at 2,048 positions, with and without the tunable, and
     the statistics by materialising the weights at each of --peer-positions, one process each
     (peak memory per size).
Writes sight*.json, sight.md and sight_scaling.png into docs/bench/<date>-<machine>/.
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/: the role packages

from benchmarks.bench_report import load_runs, ms  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))  # the role packages
from common.run_folder import run_folder  # noqa: E402
HUGE = "glibc.malloc.hugetlb=1"


def run(command, huge=False, peer=False):
    env = dict(os.environ)
    shown = " ".join(command)
    if huge:
        env["GLIBC_TUNABLES"] = HUGE
        shown = f"GLIBC_TUNABLES={HUGE} {shown}"
    if peer:
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
        shown = f"env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE {shown}"
    print("$", shown, file=sys.stderr, flush=True)
    subprocess.run(command, check=True, env=env, cwd=ROOT)


def runs_of(path):
    """Benchmark name (without /real_time) -> its median (or only) run."""
    return load_runs(path)[1]


def measure(args):
    binary = os.path.join(args.build, "bench", "attn_bench_kernels")
    short = ("^(fma_peak/.*|matrix_multiply/threads:[12]/.*|sight/.*|"
             "heads/(stream|weights)/d:64/threads:2/positions:2048/)")
    for huge, name in ((False, "sight.json"), (True, "sight_hugetlb.json")):
        run([binary, f"--benchmark_filter={short}", "--benchmark_repetitions=3",
             "--benchmark_report_aggregates_only=true", f"--benchmark_out={os.path.join(args.out, name)}",
             "--benchmark_out_format=json"], huge=huge)
    # stream and statistics interleaved, `rounds` times at 16,384 (once at 65,536); the report
    # takes each one's fastest round, the least disturbed on a shared machine
    for n in args.long:
        for round_ in range(args.rounds if n < 65536 else 1):
            for what in ("stream", "statistics", "statistics_only"):
                path = os.path.join(args.out, f"sight_long_{what}_{n}_{round_}.json")
                run([binary, f"--benchmark_filter=^sight_long/{what}/d:64/threads:2/positions:{n}/",
                     f"--benchmark_out={path}", "--benchmark_out_format=json"])
    for n in args.rows:
        path = os.path.join(args.out, f"sight_long_rows_{n}.json")
        run([binary, f"--benchmark_filter=^sight_long/rows/d:64/threads:2/positions:{n}/",
             f"--benchmark_out={path}", "--benchmark_out_format=json"])
    peers = os.path.join(ROOT, "tools", "benchmarks", "bench_peers.py")
    for huge, name in ((False, "sight_peers_weights.json"), (True, "sight_peers_weights_hugetlb.json")):
        run([sys.executable, peers, "--threads", "2", "--positions", "2048", "--json", os.path.join(args.out, name)],
            huge=huge, peer=True)
    for n in args.peer_positions:
        run([sys.executable, peers, "--threads", "2", "--statistics", "--positions", str(n), "--min-runs", "3",
             "--json", os.path.join(args.out, f"sight_peers_statistics_{n}.json")], peer=True)


def report(args):
    short = runs_of(os.path.join(args.out, "sight.json"))
    huge = runs_of(os.path.join(args.out, "sight_hugetlb.json"))
    long_runs = {}
    for name in sorted(os.listdir(args.out)):
        if name.startswith("sight_long_") and name.endswith(".json"):
            for key, b in runs_of(os.path.join(args.out, name)).items():
                key = key.replace("/iterations:1", "")
                if key not in long_runs or ms(b) < ms(long_runs[key]):
                    long_runs[key] = b
    every = dict(short)
    every.update(long_runs)

    def our(what, n):
        prefix = "sight_long" if n >= 16384 else "sight"
        return every.get(f"{prefix}/{what}/d:64/threads:2/positions:{n}")

    peers_weights = {}
    for flag, name in ((False, "sight_peers_weights.json"), (True, "sight_peers_weights_hugetlb.json")):
        with open(os.path.join(args.out, name)) as f:
            results = json.load(f)["results"]
        best = min((r for r in results if r["library"] == "pytorch" and r["weights"]), key=lambda r: r["median_ms"])
        peers_weights[flag] = best
    peer_statistics = {}
    for n in args.peer_positions:
        path = os.path.join(args.out, f"sight_peers_statistics_{n}.json")
        if os.path.exists(path):
            with open(path) as f:
                data = json.load(f)
            peer_statistics[n] = {r["library"]: r["median_ms"] for r in data["results"]}
            peer_statistics[n]["maxrss_MB"] = data.get("maxrss_MB")

    lines = ["# Sight at speed: measurements", "",
             "4 heads × 64, causal, float32, 2 threads (attn on a kept `attn::Workers`), medians. "
             "Produced by `tools/benchmarks/bench_sight.py`.", ""]
    fma1, fma2 = short["fma_peak/threads:1"], short["fma_peak/threads:2"]
    lines += [f"FMA peak (fp32, {int(fma1['lanes'])} lanes): {fma1['GFLOP/s']:.1f} GFLOP/s on 1 thread, "
              f"{fma2['GFLOP/s']:.1f} on 2. Eigen's 1,024³ GEMM: "
              f"{short['matrix_multiply/threads:1/size:1024']['GFLOP/s']:.1f} / "
              f"{short['matrix_multiply/threads:2/size:1024']['GFLOP/s']:.1f}.", ""]
    lines += ["| positions | stream | GFLOP/s (% of 2-thread FMA peak) | statistics | statistics / stream | "
              "statistics only (no outputs) | max RSS, stream / statistics | one head's positions² floats | "
              "PyTorch statistics | NumPy statistics | vs PyTorch (statistics / statistics only) | PyTorch max RSS |",
              "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in (512, 2048, 4096, 16384, 65536):
        s, t, o = our("stream", n), our("statistics", n), our("statistics_only", n)
        if not s or not t:
            continue
        p = peer_statistics.get(n, {})
        torch_ms = p.get("pytorch")
        versus = ""
        if torch_ms:
            versus = f"{torch_ms / ms(t):.1f}×" + (f" / {torch_ms / ms(o):.1f}×" if o else "")
        lines.append(
            f"| {n:,} | {ms(s):.1f} ms | {s['GFLOP/s']:.1f} ({100 * s['GFLOP/s'] / fma2['GFLOP/s']:.0f}%) | "
            f"{ms(t):.1f} ms | {ms(t) / ms(s):.2f}× | " + (f"{ms(o):.1f} ms" if o else "") + " | "
            f"{s['maxrss_MB']:.0f} / {t['maxrss_MB']:.0f} MB | "
            f"{s['weights_matrix_MB']:,.0f} MB | " + (f"{torch_ms:.0f} ms" if torch_ms else "") + " | " +
            (f"{p['numpy']:.0f} ms" if p.get("numpy") else "") + " | " + versus + " | " +
            (f"{p['maxrss_MB']:,.0f} MB" if p.get("maxrss_MB") else "") + " |")
    lines += ["", "| rows on demand (64 rows × 4 heads, the last rows) | time | stream pass | share |",
              "|---:|---:|---:|---:|"]
    for n in (2048, 16384, 65536):
        r = every.get(f"{'sight_long' if n >= 16384 else 'sight'}/rows/d:64/threads:2/positions:{n}")
        s = our("stream", n)
        if r and s:
            lines.append(f"| {n:,} | {ms(r):.2f} ms | {ms(s):.0f} ms | {100 * ms(r) / ms(s):.2f}% |")
    lines += ["", "| weights at 2,048 positions | default environment | GLIBC_TUNABLES=glibc.malloc.hugetlb=1 |",
              "|---|---:|---:|"]
    for what, label in (("weights_reused", "attn, into reused storage (result + workspace kept)"),
                        ("weights_fresh", "attn, a new result every call")):
        lines.append(f"| {label} | {ms(short[f'sight/{what}/d:64/threads:2/positions:2048']):.1f} ms | "
                     f"{ms(huge[f'sight/{what}/d:64/threads:2/positions:2048']):.1f} ms |")
    lines.append(f"| PyTorch's fastest returning weights | {peers_weights[False]['median_ms']:.1f} ms "
                 f"({peers_weights[False]['formulation']}) | {peers_weights[True]['median_ms']:.1f} ms "
                 f"({peers_weights[True]['formulation']}) |")
    reused = ms(short["sight/weights_reused/d:64/threads:2/positions:2048"])
    reused_huge = ms(huge["sight/weights_reused/d:64/threads:2/positions:2048"])
    lines.append(f"| reused storage vs PyTorch | {peers_weights[False]['median_ms'] / reused:.1f}× | "
                 f"{peers_weights[True]['median_ms'] / reused_huge:.1f}× |")
    with open(os.path.join(args.out, "sight.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    plot(args, our, peer_statistics, short)


def plot(args, our, peer_statistics, short):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (time_axis, memory_axis) = plt.subplots(1, 2, figsize=(11, 4.2))
    sizes = (512, 2048, 4096, 16384, 65536)
    for what, label in (("stream", "attn, stream"), ("statistics", "attn, statistics"),
                        ("statistics_only", "attn, statistics without outputs"),
                        ("weights_reused", "attn, weights into reused storage")):
        points = [(n, our(what, n)) for n in sizes if our(what, n)]
        time_axis.loglog([n for n, _ in points], [ms(b) for _, b in points], "o-", label=label)
        memory_axis.loglog([n for n, _ in points], [b["maxrss_MB"] for _, b in points], "o-", label=label)
    peers = sorted(peer_statistics)
    for library in ("pytorch", "numpy"):
        points = [(n, peer_statistics[n][library]) for n in peers if library in peer_statistics[n]]
        if points:
            time_axis.loglog([n for n, _ in points], [t for _, t in points], "s--",
                             label=f"{'PyTorch' if library == 'pytorch' else 'NumPy'}, statistics from weights")
    points = [(n, peer_statistics[n]["maxrss_MB"]) for n in peers if peer_statistics[n].get("maxrss_MB")]
    if points:
        memory_axis.loglog([n for n, _ in points], [m for _, m in points], "s--",
                           label="PyTorch + NumPy statistics process")
    memory_axis.loglog(list(sizes), [4 * n * n * 4 / 2**20 for n in sizes], ":", color="grey",
                       label="4 heads × positions² floats")
    time_axis.set_xlabel("positions")
    time_axis.set_ylabel("ms per call")
    memory_axis.set_xlabel("positions")
    memory_axis.set_ylabel("peak resident memory, MB")
    time_axis.legend(fontsize=7)
    memory_axis.legend(fontsize=7)
    time_axis.set_title("time (4 heads × 64, 2 threads)")
    memory_axis.set_title("memory")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "sight_scaling.png"), dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--out", default=str(run_folder(ROOT)))
    parser.add_argument("--long", type=int, nargs="*", default=[16384, 65536])
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of the 16,384 runs")
    parser.add_argument("--rows", type=int, nargs="*", default=[16384], help="rows on demand at these (long) sizes")
    parser.add_argument("--peer-positions", type=int, nargs="*", default=[512, 2048, 4096, 8192])
    parser.add_argument("--report-only", action="store_true", help="only rewrite sight.md and the plot")
    args = parser.parse_args()
    if not args.report_only:
        measure(args)
    report(args)


if __name__ == "__main__":
    main()
