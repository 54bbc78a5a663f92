#!/usr/bin/python3
"""What a cold process pays for its first pass: `generate`'s prefill in a fresh process against the
same prefill repeated in one process (issue: "the first pass costs what a later one does").

    cmake --preset bench && cmake --build build/bench --target generate attn_bench_checkpoint
    /usr/bin/python3 tools/benchmarks/bench_first_pass.py            # about a minute on 2 cores

For each thread count, --runs fresh processes of `build/bench/examples/generate --model DIR --ids
<prompt> --max-tokens 1 --json` (each loads the checkpoint, then prefills the prompt once: its
prefill_ms is a first pass, the prompt's last attention row kept, as generate keeps it), then one
process of `attn_bench_checkpoint DIR peer --prefill N --reps R --keep-rows last --untimed-first 0`,
which times the same prefill R times after one load (its first repetition is that process's first
pass too). The ratio is the median cold prefill over the median of the in-process repetitions after
the first.

DIR is a random GPT-2-small-shaped F32 checkpoint (tools/references/hf_checkpoints.py), written into
--cache once, where tools/benchmarks/bench_llamacpp.py keeps it too. Writes first_pass-<HHMM>.json
and first_pass-<HHMM>.md (the UTC start time; <HHMMSS> if a run of the same minute wrote its files there)
into --out (default docs/bench/<date>-<machine>/).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from benchmarks.bench_llamacpp import bench_env, cpu_description, hf_checkpoint, prompt_tokens  # noqa: E402
from common.run_folder import run_folder  # noqa: E402

def run(command):
    done = subprocess.run([str(c) for c in command], text=True, capture_output=True, env=bench_env())
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout)


def summarize(cold_ms, in_process_ms):
    """Medians and the ratio: cold (first passes of fresh processes) over warm (repetitions after
    the first in one process)."""
    warm = in_process_ms[1:] if len(in_process_ms) > 1 else in_process_ms
    cold_median, warm_median = statistics.median(cold_ms), statistics.median(warm)
    return {"cold_median_ms": cold_median, "warm_median_ms": warm_median,
            "in_process_first_ms": in_process_ms[0], "ratio": cold_median / warm_median}


def markdown(result):
    cpu = result["cpu"]
    widest = next((isa for flag, isa in (("avx512f", "AVX-512"), ("avx2", "AVX2")) if flag in cpu["vector_extensions"]),
                  "SSE2")
    lines = [f"# First pass against later ones: {result['shape']} {result['dtype']}, {result['positions']} positions",
             "",
             f"{cpu['model_name']}, {widest}, {cpu['cores']} cores; 1-minute load "
             f"{result['load_average']:.2f} at the start ({result['started']}). Command: `{result['command']}`.",
             "",
             "| threads | cold `generate` prefill, median (ms) | in one process, later passes, median (ms) "
             "| that process's first pass (ms) | cold / warm |",
             "|---:|---:|---:|---:|---:|"]
    for row in result["rows"]:
        lines.append(f"| {row['threads']} | {row['cold_median_ms']:.1f} | {row['warm_median_ms']:.1f} | "
                     f"{row['in_process_first_ms']:.1f} | {row['ratio']:.2f}× |")
    lines += ["", f"Every run's figures are in {result['stem']}.json."]
    return "\n".join(lines) + "\n"


def free_stem(folder, started):
    """first_pass-<HHMM> for a run started at `started` (UTC), or first_pass-<HHMMSS> where a run of the
    same minute already wrote its files into `folder`: an earlier result is never overwritten."""
    stem = time.strftime("first_pass-%H%M", started)
    if (Path(folder) / f"{stem}.json").exists():
        stem = time.strftime("first_pass-%H%M%S", started)
    return stem


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "bench")
    parser.add_argument("--cache", type=Path, default=Path("~/.cache/attn-peers"))
    parser.add_argument("--shape", default="gpt2-small")
    parser.add_argument("--dtype", default="F32")
    parser.add_argument("--positions", type=int, default=128)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--runs", type=int, default=7, help="fresh processes, and repetitions in one process")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    directory = hf_checkpoint(args.shape, args.dtype, args.cache.expanduser().resolve())
    vocab = json.loads((directory / "config.json").read_text())["vocab_size"]
    ids = ",".join(map(str, prompt_tokens(vocab, args.positions)))
    generate, bench = args.build / "examples" / "generate", args.build / "bench" / "attn_bench_checkpoint"
    started = time.gmtime()  # one reading: the file's name and its "started" must name the same minute
    result = {"shape": args.shape, "dtype": args.dtype, "positions": args.positions, "cpu": cpu_description(),
              "load_average": os.getloadavg()[0], "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", started),
              "stem": free_stem(args.out or run_folder(ROOT), started),
              "command": " ".join(["tools/benchmarks/bench_first_pass.py"] + sys.argv[1:]), "rows": []}
    for threads in [int(t) for t in args.threads.split(",")]:
        cold = [run([generate, "--model", directory, "--ids", ids, "--max-tokens", 1, "--threads", threads, "--json",
                     "--quiet"])["timings"]["prefill_ms"] for _ in range(args.runs)]
        peer = run([bench, directory, "peer", "--threads", threads, "--prefill", args.positions, "--decode",
                    args.positions, "--steps", 1, "--reps", args.runs, "--keep-rows", "last", "--untimed-first", 0])
        in_process = [1000 * s for s in peer["prefill"][0]["seconds"]]
        row = {"threads": threads, "cold_ms": cold, "in_process_ms": in_process, **summarize(cold, in_process)}
        result["rows"].append(row)
        print(f"threads {threads}: cold {row['cold_median_ms']:.1f} ms, warm {row['warm_median_ms']:.1f} ms, "
              f"ratio {row['ratio']:.2f}", file=sys.stderr)
    out = args.out or run_folder(ROOT)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{result['stem']}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / f"{result['stem']}.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
