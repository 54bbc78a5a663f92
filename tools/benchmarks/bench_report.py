#!/usr/bin/python3
"""Runs attn's benchmark suite and the peers in one go; prints the side-by-side table.

    cmake --workflow --preset bench            # builds build/bench (Release, -march=native)
    /usr/bin/python3 tools/benchmarks/bench_report.py     # about 3 minutes on 2 quiet cores

Steps: (1) build/bench/bench/attn_bench_kernels on the peer shapes (4 heads x 64, causal),
16 ... 4,096 positions, medians of --repetitions runs, plus Eigen's 1,024^3 float GEMM in
the same process; (2) the long shapes (8,192 and 16,384 positions, streaming path), each in
its own process so its peak resident memory is its own; (3) tools/benchmarks/bench_peers.py (PyTorch,
NumPy) with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset for that command only, i.e.
`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tools/benchmarks/bench_peers.py ...`,
at --threads and at 1 thread (the peers' best of the two is reported). Every command runs
with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (--no-hugetlb to skip): first-touch page faults
cost ~18 us per 4 KiB on these VMs, which would otherwise dominate every path that
allocates a positions² buffer per call (all peer formulations; attn's weights/plain paths).
Writes docs/bench/<date>-<machine>/attn_kernels.json, long_*.json, peers.json, summary.json, table.md and
the log-log plot scaling.png there. --portable BUILD_DIR adds the same streaming
shapes from a build without -march=native.
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))  # the role packages
from common.run_folder import run_folder  # noqa: E402


def run(command, env=None):
    shown = " ".join(command)
    if env and "GLIBC_TUNABLES" in env:
        shown = f"GLIBC_TUNABLES={env['GLIBC_TUNABLES']} {shown}"
    print("$", shown, file=sys.stderr, flush=True)
    subprocess.run(command, check=True, env=env, cwd=ROOT)


def load_runs(path):
    """Benchmark name (without /real_time) -> its median (or only) run."""
    with open(path) as f:
        data = json.load(f)
    runs = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b.get("run_name", b["name"]).replace("/real_time", "")
        if "BigO" in b["name"] or "RMS" in b["name"]:
            continue
        runs[name] = b
    return data, runs


def complexity(path):
    """Family -> fitted complexity string, e.g. 'heads/stream/d:64/threads:2' -> '0.21 N^2'."""
    with open(path) as f:
        data = json.load(f)
    fits = {}
    for b in data["benchmarks"]:
        if b["name"].endswith("_BigO"):
            family = b["name"].replace("/real_time_BigO", "").replace("_BigO", "")
            fits[family] = f"{b.get('real_coefficient', b.get('cpu_coefficient', 0)):.3g} {b.get('big_o', '')}"
    return fits


def ms(run):
    unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[run.get("time_unit", "ns")]
    return run["real_time"] * unit


def load_average():
    try:
        return open("/proc/loadavg").read().split()[:3]
    except OSError:
        return None


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "bench"), help="benchmark build directory")
    parser.add_argument("--threads", type=int, default=2, help="threads for the headline table (1 or 2)")
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--positions", type=int, nargs="+", default=[160, 512, 2048, 4096], help="peer shapes")
    parser.add_argument("--out", default=str(run_folder(ROOT)))
    parser.add_argument("--skip-long", action="store_true", help="leave out 8,192 and 16,384 positions")
    parser.add_argument("--skip-peers", action="store_true", help="reuse OUT/peers.json")
    parser.add_argument("--portable", help="build directory of a portable (no -march=native) benchmark build")
    parser.add_argument("--replot", action="store_true", help="only redraw OUT/scaling.png from OUT's JSON files")
    parser.add_argument("--no-hugetlb", action="store_true",
                        help="do not set GLIBC_TUNABLES=glibc.malloc.hugetlb=1 for every run")
    return parser.parse_args()


def malloc_environment(no_hugetlb):
    # Page faults are expensive on these VMs (~18 us per 4 KiB page: a fresh 64 MB buffer costs
    # ~0.3 s to touch). Every peer formulation and attn's weights/plain paths allocate
    # positions² buffers per call, so by default every command runs with glibc's malloc
    # asking for transparent huge pages, which removes that tax for everyone alike.
    env = dict(os.environ)
    if not no_hugetlb:
        env["GLIBC_TUNABLES"] = ":".join(filter(None, [env.get("GLIBC_TUNABLES"), "glibc.malloc.hugetlb=1"]))
    return env


def replot(args):
    """--replot: scaling.png again from the JSON files already in --out."""
    ours = load_runs(os.path.join(args.out, "attn_kernels.json"))[1]
    long_runs = {}
    for n in (8192, 16384):
        path = os.path.join(args.out, f"long_{n}.json")
        if os.path.exists(path):
            long_runs.update(load_runs(path)[1])
    peers = {"results": []}
    for path, threads in ((os.path.join(args.out, "peers.json"), args.threads),
                          (os.path.join(args.out, "peers_1thread.json"), 1)):
        if os.path.exists(path):
            with open(path) as f:
                peers["results"] += json.load(f)["results"]
    plot(ours, long_runs, peers, args.threads, os.path.join(args.out, "scaling.png"))


def run_ours(args, binary, env):
    """attn's runs: (context, runs by name, fitted complexities, long runs, portable-build runs)."""
    # (1) our suite on the peer shapes, 4 heads x 64, and the GEMM reference, one process
    ours_json = os.path.join(args.out, "attn_kernels.json")
    run([binary, "--benchmark_filter=^(matrix_multiply/.*|heads/(stream|weights|plain)/d:64/threads:[12]/.*)$",
         f"--benchmark_repetitions={args.repetitions}", "--benchmark_report_aggregates_only=true",
         f"--benchmark_out={ours_json}", "--benchmark_out_format=json"], env=env)
    context, ours = load_runs(ours_json)
    fits = complexity(ours_json)

    # (2) the long shapes, one process each (peak RSS is per process)
    long_runs = {}
    if not args.skip_long:
        for n in (8192, 16384):
            path = os.path.join(args.out, f"long_{n}.json")
            run([binary, f"--benchmark_filter=^long/stream/d:64/threads:{args.threads}/positions:{n}/",
                 f"--benchmark_out={path}", "--benchmark_out_format=json"], env=env)
            long_runs.update(load_runs(path)[1])

    portable = {}
    if args.portable:
        path = os.path.join(args.out, "attn_kernels_portable.json")
        pbinary = os.path.join(args.portable, "bench", "attn_bench_kernels")
        run([pbinary, "--benchmark_filter=^(matrix_multiply/.*|heads/stream/d:64/threads:[12]/positions:(2048|4096)/)",
             f"--benchmark_repetitions={args.repetitions}", "--benchmark_report_aggregates_only=true",
             f"--benchmark_out={path}", "--benchmark_out_format=json"], env=env)
        portable = load_runs(path)[1]
    return context, ours, fits, long_runs, portable


def run_peers(args, env):
    """(3) the peers, OpenBLAS left to pick its kernels: their results at each thread count, merged.

    The peers at the same thread count and, if that is more than one, at one thread too:
    "PyTorch best" is the fastest formulation at either (OpenMP's start-up makes PyTorch
    slower on 2 threads than on 1 at small sizes on these VMs)."""
    peer_env = {k: v for k, v in env.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    peer_files = {args.threads: os.path.join(args.out, "peers.json")}
    if args.threads > 1:
        peer_files[1] = os.path.join(args.out, "peers_1thread.json")
    for threads, path in peer_files.items():
        if not args.skip_peers:
            print("$ env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ...", file=sys.stderr)
            run(["/usr/bin/python3", os.path.join(ROOT, "tools", "benchmarks", "bench_peers.py"), "--threads", str(threads),
                 "--positions", *map(str, args.positions), "--json", path], env=peer_env)
    peers = None
    for threads, path in peer_files.items():
        with open(path) as f:
            data = json.load(f)
        for r in data["results"]:
            r["threads"] = threads
        if peers is None:
            peers = data
        else:
            peers["results"] += data["results"]
    return peers


def table_rows(positions, t, ours, peers, portable):
    """(GEMM GFLOP/s by thread count, one row per peer shape: attn's times against the peers')."""
    def peer_best(library, n, weights):
        rows = [r for r in peers["results"]
                if r["library"] == library and r["positions"] == n and r["weights"] == weights]
        return min(rows, key=lambda r: r["median_ms"]) if rows else None

    gemm = {th: ours[f"matrix_multiply/threads:{th}/size:1024"]["GFLOP/s"] for th in (1, 2)
            if f"matrix_multiply/threads:{th}/size:1024" in ours}
    rows = []
    for n in positions:
        def our(path, threads=t):
            return ours.get(f"heads/{path}/d:64/threads:{threads}/positions:{n}")
        # the plain path on one thread: Eigen without OpenMP, as consumers build it
        stream, weights, plain = our("stream"), our("weights"), our("plain", 1)
        torch_best, torch_weights = peer_best("pytorch", n, False), peer_best("pytorch", n, True)
        numpy_best, numpy_weights = peer_best("numpy", n, False), peer_best("numpy", n, True)
        row = {
            "positions": n, "threads": t,
            "stream_ms": ms(stream), "stream_gflops": stream["GFLOP/s"],
            "stream_1thread_ms": ms(our("stream", 1)),
            "weights_ms": ms(weights), "plain_ms": ms(plain),
            "pytorch_ms": torch_best["median_ms"],
            "pytorch_formulation": f"{torch_best['formulation']} ({torch_best['threads']} thread(s))",
            "pytorch_weights_ms": torch_weights["median_ms"] if torch_weights else None,
            "pytorch_weights_formulation":
            f"{torch_weights['formulation']} ({torch_weights['threads']} thread(s))" if torch_weights else None,
            "numpy_ms": numpy_best["median_ms"], "numpy_threads": numpy_best["threads"],
            "numpy_weights_ms": numpy_weights["median_ms"] if numpy_weights else None,
        }
        row["stream_fraction_of_gemm"] = row["stream_gflops"] / gemm[t] if t in gemm else None
        row["speedup_vs_pytorch"] = row["pytorch_ms"] / row["stream_ms"]
        row["speedup_vs_numpy"] = row["numpy_ms"] / row["stream_ms"]
        if row["pytorch_weights_ms"]:
            row["weights_speedup_vs_pytorch"] = row["pytorch_weights_ms"] / row["weights_ms"]
        if row["numpy_weights_ms"]:
            row["weights_speedup_vs_numpy"] = row["numpy_weights_ms"] / row["weights_ms"]
        if portable:
            p = portable.get(f"heads/stream/d:64/threads:{t}/positions:{n}")
            row["portable_stream_ms"] = ms(p) if p else None
        rows.append(row)

    return gemm, rows


def fmt(x, digits=2):
    return "—" if x is None else (f"{x:,.{digits}f}" if x < 100 else f"{x:,.0f}")


def table_markdown(t, gemm, rows, peers, env, long_runs, fits, portable):
    lines = [
        f"4 heads × 64, causal, float32, {t} thread{'s' if t > 1 else ''}; medians. GEMM (Eigen, 1,024³ float, "
        f"same run): {fmt(gemm.get(1), 0)} GFLOP/s on 1 thread, {fmt(gemm.get(2), 0)} on 2.",
        "",
        "| positions | attn streaming | GFLOP/s (% of GEMM) | attn with weights | attn plain path (1 thread) "
        "| PyTorch best | NumPy | vs PyTorch | vs NumPy | PyTorch with weights | with weights: vs PyTorch |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['positions']:,} | {fmt(r['stream_ms'], 3)} ms | {fmt(r['stream_gflops'], 0)} "
            f"({100 * r['stream_fraction_of_gemm']:.0f}%) | {fmt(r['weights_ms'], 2)} ms | {fmt(r['plain_ms'], 2)} ms "
            f"| {fmt(r['pytorch_ms'], 2)} ms | {fmt(r['numpy_ms'], 2)} ms | {r['speedup_vs_pytorch']:.1f}× "
            f"| {r['speedup_vs_numpy']:.1f}× | {fmt(r['pytorch_weights_ms'], 2)} ms "
            f"| {r.get('weights_speedup_vs_pytorch', 0):.1f}× |")
    lines.append("")
    lines.append("PyTorch best (outputs only): " + "; ".join(
        f"{r['positions']:,}: {r['pytorch_formulation']}" for r in rows) + ".")
    lines.append("PyTorch best with weights: " + "; ".join(
        f"{r['positions']:,}: {r['pytorch_weights_formulation']}" for r in rows) + ".")
    lines.append("Peers: fastest of 1 and %d threads; NumPy from OpenBLAS %s; environment: %s." % (
        t, ", ".join(sorted({str(i.get("architecture")) for i in peers["blas"].get("threadpoolctl", [])
                             if i.get("internal_api") == "openblas"})) or "?",
        "GLIBC_TUNABLES=" + env["GLIBC_TUNABLES"] if env.get("GLIBC_TUNABLES") else "default malloc"))
    for n, r in sorted(long_runs.items()):
        lines.append(f"`{n}`: {ms(r):,.0f} ms, {r['GFLOP/s']:.0f} GFLOP/s, peak RSS {r['maxrss_MB']:.0f} MB "
                     f"(one positions² float matrix: {r['scores_matrix_MB']:.0f} MB)")
    fitted = {k: v for k, v in fits.items() if "/d:64/" in k}
    lines.append("Fitted complexity (time in positions): " + "; ".join(f"{k} {v}" for k, v in sorted(fitted.items())))
    if portable:
        lines.append("Portable build (no -march=native), streaming: " + "; ".join(
            f"{r['positions']:,}: {fmt(r.get('portable_stream_ms'), 2)} ms" for r in rows if r.get("portable_stream_ms"))
            + "; its GEMM: " + ", ".join(
            f"{th} thread(s) {portable[f'matrix_multiply/threads:{th}/size:1024']['GFLOP/s']:.0f} GFLOP/s"
            for th in (1, 2) if f"matrix_multiply/threads:{th}/size:1024" in portable))
    return "\n".join(lines)


def main():
    args = parse_args()
    env = malloc_environment(args.no_hugetlb)
    os.makedirs(args.out, exist_ok=True)
    if args.replot:
        replot(args)
        return
    binary = os.path.join(args.build, "bench", "attn_bench_kernels")
    if not os.path.exists(binary):
        sys.exit(f"{binary} not found: run `cmake --workflow --preset bench` first")
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load_before = load_average()
    context, ours, fits, long_runs, portable = run_ours(args, binary, env)
    peers = run_peers(args, env)
    load_after = load_average()

    t = args.threads
    gemm, rows = table_rows(args.positions, t, ours, peers, portable)
    table = table_markdown(t, gemm, rows, peers, env, long_runs, fits, portable)
    print(table)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table + "\n")

    summary = {"started": started, "glibc_tunables": env.get("GLIBC_TUNABLES"), "load_average_before": load_before, "load_average_after": load_after,
               "host": platform.node(), "context": context.get("context"), "gemm_gflops": gemm, "rows": rows,
               "long": {k: {"ms": ms(v), "gflops": v["GFLOP/s"], "maxrss_MB": v["maxrss_MB"]}
                        for k, v in long_runs.items()},
               "complexity": fits, "peers": {k: v for k, v in peers.items() if k != "results"},
               "commands": {"ours": f"{binary} --benchmark_filter=... (see attn_kernels.json context)",
                            "peers": "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 "
                                     f"tools/benchmarks/bench_peers.py --threads {t} --positions "
                                     + " ".join(map(str, args.positions))}}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
        f.write("\n")
    plot(ours, long_runs, peers, t, os.path.join(args.out, "scaling.png"))


def plot(ours, long_runs, peers, threads, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    def series(prefix):
        points = []
        for name, r in list(ours.items()) + list(long_runs.items()):
            m = re.fullmatch(re.escape(prefix) + r"/positions:(\d+)(/iterations:\d+)?", name)
            if m:
                points.append((int(m.group(1)), ms(r)))
        return sorted(points)

    fig, ax = plt.subplots(figsize=(7.5, 5.2), dpi=120)
    s = "s" if threads > 1 else ""
    curves = [
        (series(f"heads/stream/d:64/threads:{threads}") +
         [p for p in series(f"long/stream/d:64/threads:{threads}")], f"attn streaming ({threads} thread{s})", "C0", "-"),
        (series("heads/stream/d:64/threads:1"), "attn streaming (1 thread)", "C0", ":"),
        (series(f"heads/weights/d:64/threads:{threads}"), f"attn, weights returned ({threads} thread{s})", "C2", "-"),
        (series("heads/plain/d:64/threads:1"), "attn plain path (full scores, Eigen GEMM, 1 thread)", "C7", "--"),
    ]
    for points, label, color, style in curves:
        if points:
            ax.plot(*zip(*points), style, color=color, marker="o", markersize=3, label=label)
    for library, color, label in (("pytorch", "C3", "PyTorch 1.13, fastest formulation"),
                                  ("numpy", "C1", "NumPy, the chapter's listing")):
        points = []
        for n in sorted({r["positions"] for r in peers["results"]}):
            rows = [r for r in peers["results"] if r["library"] == library and r["positions"] == n and not r["weights"]]
            if rows:
                points.append((n, min(r["median_ms"] for r in rows)))
        if points:
            ax.plot(*zip(*points), "-", color=color, marker="s", markersize=4,
                    label=f"{label} (best of 1 and {threads} threads)")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:,.0f}"))
    ax.set_yscale("log")
    ax.set_xlabel("positions")
    ax.set_ylabel("time per call (ms, median)")
    ax.set_title("Causal attention, 4 heads × 64, float32")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
