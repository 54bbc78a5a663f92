"""Real-size checkpoints: load time, peak memory and forward speed, reported in docs/bench/<date>-<machine>/.

    /usr/bin/python3 tools/benchmarks/bench_checkpoint.py [--build build/bench] [--out docs/bench/<date>-<machine>/checkpoints.md]
                                               [--shapes gpt2-small] [--dtypes F32 BF16]

Writes each random checkpoint (tools/references/hf_checkpoints.py; never committed) into a scratch
directory, then for each: `attn_bench_checkpoint DIR load` three times in fresh processes
(load seconds, peak resident memory against the loaded weights' bytes), and the Google
Benchmark run of its forward, prefill and decoding (JSON). Build the benchmarks first:
`cmake --workflow --preset bench`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages
from common.run_folder import run_folder  # noqa: E402


def machine() -> str:
    """lscpu's model name and the widest vector extension, for every figure."""
    text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("Flags")), [])
    vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    return f"{model}, {vector}, {os.cpu_count()} cores"


def run_json(command: list[str]) -> dict:
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    return json.loads(output)


def measure(binary: Path, directory: Path) -> tuple[list[dict], dict]:
    loads = [run_json([str(binary), str(directory), "load"]) for _ in range(3)]
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run([str(binary), str(directory), f"--benchmark_out={out.name}", "--benchmark_out_format=json",
                        "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true"],
                       check=True, stdout=subprocess.DEVNULL)
        speed = json.loads(Path(out.name).read_text())
    return loads, speed


def table(shape: str, dtype: str, loads: list[dict], speed: dict) -> list[str]:
    best = min(loads, key=lambda load: load["load_seconds"])
    every_load = ", ".join(f"{load['load_seconds']:.2f}" for load in loads)
    lines = [f"### {shape}, {dtype} checkpoint ({best['parameters'] / 1e6:.1f} M parameters, "
             f"{best['checkpoint_bytes'] / 2**20:.0f} MiB of safetensors, {best['weights_bytes'] / 2**20:.0f} MiB "
             "loaded as float)", "",
             f"- load: {best['load_seconds']:.2f} s (best of 3: {every_load}), peak resident memory "
             f"{best['peak_resident_bytes'] / 2**20:.0f} MiB = {best['peak_over_weights']:.3f} × the loaded weights",
             "", "| benchmark | median ms | tokens/s |", "|---|---:|---:|"]
    for run in speed["benchmarks"]:
        if run.get("aggregate_name") != "median":
            continue
        name = run["run_name"].removeprefix("checkpoint/").removesuffix("/real_time")
        lines.append(f"| {name} | {run['real_time']:.2f} | {run.get('tokens_per_second', 0):.1f} |")
    return lines + [""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "bench")
    parser.add_argument("--out", type=Path, default=run_folder(ROOT) / "checkpoints.md")
    parser.add_argument("--shapes", nargs="+", default=["gpt2-small"])
    parser.add_argument("--dtypes", nargs="+", default=["F32", "BF16"])
    args = parser.parse_args()
    binary = args.build / "bench" / "attn_bench_checkpoint"
    if not binary.exists():
        sys.exit(f"{binary} is missing: run `cmake --workflow --preset bench` first")
    lines = ["# Real-size checkpoints: loading and speed", "",
             f"{datetime.date.today().isoformat()}, {machine()}. Command: `/usr/bin/python3 tools/benchmarks/bench_checkpoint.py`"
             " (random checkpoints written by tools/references/hf_checkpoints.py; attn loads them as float).", "",
             "Peak resident memory is the whole process's (VmHWM) after loading, the executable and its libraries "
             "included; the loaded weights are the model's float arrays.", ""]
    with tempfile.TemporaryDirectory() as scratch:
        for shape in args.shapes:
            for dtype in args.dtypes:
                directory = Path(scratch) / f"{shape}-{dtype}"
                subprocess.run([sys.executable, str(ROOT / "tools" / "references" / "hf_checkpoints.py"), "--shape", shape,
                                "--dtype", dtype, "--out", str(directory)], check=True)
                load_before = os.getloadavg()[0]
                loads, speed = measure(binary, directory)
                lines += table(shape, dtype, loads, speed)
                lines.insert(len(lines) - 1, f"(the machine's 1-minute load average before this run: {load_before:.1f}, "
                             "2 cores shared)\n")
                print("\n".join(lines[-12:]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
