#!/usr/bin/python3
"""The performance tables of docs/bench/ and of the README, from one command.

    /usr/bin/python3 tools/benchmarks/bench_tables.py                 # limits + real sizes, ~45 min on 2 cores
    /usr/bin/python3 tools/benchmarks/bench_tables.py --parts limits  # the machine's limits alone, ~5 min
    /usr/bin/python3 tools/benchmarks/bench_tables.py --parts limits,real_size,long   # + long prompts, ~40 min more

Parts, each writing into --out (default docs/bench/<UTC date>-<cpu>-<ISA>/tables-<HHMM>/, the day's folder of
tools/common/run_folder.py and a folder of this run's own, so that no earlier result is overwritten):
  limits     what bounds a product on this machine, and how close attn's kernels come to it, in the same
             processes: attn_bench_kernels' fma_peak (the fp32 FMA peak, 1 and 2 threads) beside the
             from_memory products of GPT-2 small's and SmolLM2-135M's layer shapes (weights in panels, as
             a model keeps them, cycling through 256 MiB so that they come from memory): prefill's 128 and
             512 rows as a share of the FMA peak, a decoding step's one row (float and BF16 panels, Q8_0
             blocks) as a share of the read bandwidth measured in the same process (the best of
             summing memory as one run, as 2, 4 or 8 runs side by side, and as 4 runs prefetched ahead as the
             products prefetch: READ_WAYS). Repetitions are randomly interleaved (Google Benchmark's
             --benchmark_enable_random_interleaving), so that a slow minute of a shared machine falls on
             every benchmark alike; medians. -> limits_kernels.json
  real_size  tools/benchmarks/bench_llamacpp.py, every system on the same random weights in one run:
             GPT-2 small F32, SmolLM2-135M BF16 kept in 16 bits, SmolLM2-135M Q4_K_M kept quantized;
             prefill of 128 and 512, decoding after 128 and 512; 1 and 2 threads; every system in turn,
             three times (--rounds: a slow minute of the VM falls on all alike); and a whole decoding
             step's weights (the bytes attn_bench_checkpoint reports a step reads) over its time, against
             the read bandwidth attn's process times beside each of its repetitions with as many threads
             (attn_bench_checkpoint --read-bandwidth 1; the limits' for older runs), and every system's
             prefill as GFLOP/s against the limits' FMA peak with as many threads (also for long).
             -> real_size*.{md,json}
  long       the same harness at long prompts: SmolLM2-135M F32 and BF16 at 2,048 positions (and
             --long-8192: 8,192, decoding after 8,176 so that the steps end at its context), GPT-2 small
             F32 at its 1,024; attn on the float checkpoints with its attention on float and on bfloat16
             numbers (LoadOptions::bfloat16_attention, as llama.cpp's defaults keep a 16-bit cache), on
             the BF16 one with its activations rounded and not. -> long_*.{md,json}
  sight      what seeing inside costs at long prompts: attn_bench_checkpoint's sight mode on SmolLM2-135M
             F32, Model::forward over 2,048 positions (and 8,192 with --long-8192) plain, with every head's
             statistics measured in the kernel, and with each row's log-sum-exp kept (from which any head's
             rows come afterwards), interleaved within each repetition; 1 and 2 threads. -> sight.json

--isa avx2 holds every part to AVX2 and FMA on a CPU with AVX-512: attn from build/bench-avx2 (`cmake --preset
bench-avx2`), the harness's peers as bench_llamacpp.py --isa avx2 holds them (llama.cpp's haswell variant alone,
PyTorch's AVX2 kernels); the folder is then tables-<HHMM>-avx2 and the README's table is left as it is (it shows
the machine's own instruction set).

Then it writes <out>/README.md (the machine as lscpu names it, its vector extensions and caches, the load
average before and after every part, the commands, every table) and, unless --no-readme, replaces the
README's table between the markers `<!-- bench_tables: begin -->` and `<!-- bench_tables: end -->` with
this run's headline table. --compose-only rebuilds both from the JSON files already in --out, running
nothing; --resume continues a run into --out that stopped (its record is saved after every command), running
the parts whose JSON is not there. Needs build/bench (`cmake --preset bench && cmake --build build/bench`; built here if missing)
and the llama.cpp peer (tools/benchmarks/peers/llamacpp_setup.py, run by the harness).
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))  # the role packages
from benchmarks import bench_llamacpp  # noqa: E402
from common.run_folder import run_folder  # noqa: E402

HARNESS = ROOT / "tools" / "benchmarks" / "bench_llamacpp.py"
README_BEGIN = "<!-- bench_tables: begin -->"
README_END = "<!-- bench_tables: end -->"

SHAPES = ("gpt2/query_key_value", "gpt2/output", "gpt2/up", "gpt2/down", "gpt2/unembedding",
          "smollm2/query", "smollm2/gate", "smollm2/down", "smollm2/unembedding")
PREFILL_ROWS = (128, 512)
STEP_LAYOUTS = ("float_panels", "bf16_panels", "q8_0")  # a decoding step's weights: one row of a
KERNEL_FILTER = ("^(fma_peak/threads:[12]"
                 "|from_memory/(gpt2|smollm2)/[a-z_]+/float_panels/rows:(1|128|512)/pool_MiB:256"
                 "|from_memory/(gpt2|smollm2)/[a-z_]+/bf16_rounded_panels/rows:(128|512)/pool_MiB:256"
                 "|from_memory/(gpt2|smollm2)/[a-z_]+/(bf16_panels|q8_0)/rows:1/pool_MiB:256)/")
# The ways of reading memory (bench/memory_benchmarks.hpp); the machine's read bandwidth is the best of them
# (none is best everywhere: on Zen 5 four runs of 512-bit loads read ~30 % below two runs, while four
# runs of 256-bit loads are AVX2's best; docs/bench/2026-12-06-epyc-zen5-avx512/read_isa)
READ_WAYS = ("read", "read_streams:2", "read_streams:4", "read_streams:8", "read_streams:4/ahead:2048")
MEMORY_FILTER = f"^memory/({'|'.join(READ_WAYS)}|copy)/threads:[12]/"
GBENCH_FLAGS = ["--benchmark_repetitions=5", "--benchmark_enable_random_interleaving=true",
                "--benchmark_report_aggregates_only=true", "--benchmark_min_time=0.2"]

# (file stem, harness arguments): the README's headline runs, then the long prompts
REAL_SIZE_RUNS = (
    ("real_size_f32", ["--models", "gpt2-small:F32", "--attn-weights", "converted"]),
    ("real_size_16bit", ["--models", "smollm2-135m:BF16", "--attn-weights", "stored_16_bit,bfloat16_activations"]),
    ("real_size_quantized", ["--models", "smollm2-135m:Q4_K_M", "--attn-weights", "stored_quantized"]),
)
REAL_SIZE_COMMON = ["--threads", "1,2", "--prefill", "128,512", "--decode", "128,512", "--steps", "16",
                    "--attn-keep-rows", "0"]
# Float checkpoints with attn's attention on float and on bfloat16 numbers (LoadOptions::bfloat16_attention,
# what llama.cpp's defaults do with their 16-bit cache); SmolLM2 in BF16 with the activations rounded too.
FLOAT_ATTENTIONS = ["--attn-weights", "converted,bfloat16_attention"]
BF16_ROUNDINGS = ["--attn-weights", "bfloat16_activations,stored_16_bit"]
LONG_RUNS = (
    ("long_smollm2", ["--models", "smollm2-135m:F32", "--prefill", "2048", "--decode", "2048", *FLOAT_ATTENTIONS]),
    ("long_smollm2_bf16", ["--models", "smollm2-135m:BF16", "--prefill", "2048", "--decode", "2048",
                           *BF16_ROUNDINGS]),
    ("long_gpt2", ["--models", "gpt2-small:F32", "--prefill", "1024", "--decode", "512",  # 1,024 positions
                   *FLOAT_ATTENTIONS]),
)
LONG_STEPS = 16
# Decoding at 8,192 - 16 cached: the 16 steps then end at SmolLM2's context of 8,192 (attn refuses
# positions past a model's context; llama.cpp only warns).
LONG_8192_RUNS = tuple(
    (stem, ["--models", model, "--prefill", "8192", "--decode", str(8192 - LONG_STEPS), "--pytorch-up-to", "2048",
            *weights])
    for stem, model, weights in (("long_smollm2_8192", "smollm2-135m:F32", FLOAT_ATTENTIONS),
                                 ("long_smollm2_bf16_8192", "smollm2-135m:BF16", BF16_ROUNDINGS)))
LONG_COMMON = ["--threads", "1,2", "--steps", str(LONG_STEPS), "--attn-keep-rows", "0"]
LONG_REPS = 2

SIGHT_CHECKPOINT = "smollm2-135m-F32-hf_checkpoints"  # the harness's cache name (bench_llamacpp.hf_checkpoint)
SIGHT_REPS = 3

MODEL_NAMES = {"gpt2-small": "GPT-2 small", "smollm2-135m": "SmolLM2-135M"}


# ---------------------------------------------------------------------------------------------------
# the machine


def machine(held_isa="native"):
    """What lscpu says of the CPU: model name, family and model numbers, caches, vector extensions; with a
    `held_isa` other than native, the instruction set the run held every system to (held_to), named in "isa"."""
    text = subprocess.run(["lscpu"], text=True, capture_output=True).stdout
    fields = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in text.splitlines() if ":" in line)}
    flags = fields.get("Flags", "").split()
    vector = sorted(f for f in flags if f.startswith(("avx", "amx", "fma", "f16c")))
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE2"
    held = {} if held_isa == "native" else {"held_to": held_isa.upper()}
    if held:
        isa = f"{isa}, every system held to {held['held_to']}"
    return {"model_name": fields.get("Model name", "?"), "family": fields.get("CPU family", "?"),
            "model": fields.get("Model", "?"), "cpus": fields.get("CPU(s)", "?"), "isa": isa, **held,
            "vector_extensions": vector,
            "caches": {k: fields[k] for k in ("L1d cache", "L2 cache", "L3 cache") if k in fields}}


def source_commit():
    """The commit the benchmarks were built from, "+ changes" if the tree differs from it."""
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, text=True, capture_output=True)
    if head.returncode != 0:
        return "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, text=True,
                           capture_output=True).stdout.strip()
    return head.stdout.strip() + (" + changes" if dirty else "")


def load_average():
    return round(os.getloadavg()[0], 2)


def now():
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


# ---------------------------------------------------------------------------------------------------
# running


def run(command, log, capture=False):
    """Runs a command from the repository's root, its line kept in `log` with the load before and after;
    with `capture`, returns what it printed (else it prints to this process's output)."""
    entry = {"command": shlex.join(str(c) for c in command), "started": now(), "load_before": load_average()}
    print("$", entry["command"], flush=True)
    env = dict(os.environ)
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):  # slow the peers' OpenBLAS; set on these machines
        env.pop(name, None)
    done = subprocess.run([str(c) for c in command], check=True, cwd=ROOT, env=env, capture_output=capture,
                          text=True)
    entry.update({"ended": now(), "load_after": load_average()})
    log.append(entry)
    return done.stdout


def bench_folder(isa):
    """Where the benchmarks of attn built for `isa` are."""
    return ROOT / "build" / bench_llamacpp.ATTN_BUILD_OF_ISA[isa] / "bench"


def build(isa, log):
    folder = bench_llamacpp.ATTN_BUILD_OF_ISA[isa]
    if not (ROOT / "build" / folder / "CMakeCache.txt").is_file():
        run(["cmake", "--preset", folder], log)
    run(["cmake", "--build", f"build/{folder}", "--target", "attn_bench_kernels", "attn_bench_checkpoint"], log)


def run_limits(out, isa, log):
    """The FMA peak, the products from memory and the ways of reading memory in one process, their
    repetitions interleaved (a VM's read bandwidth swings by a third from one minute to the next here:
    a limit timed in another process minutes apart made shares of 88–124 %)."""
    run([bench_folder(isa) / "attn_bench_kernels", f"--benchmark_filter={KERNEL_FILTER}|{MEMORY_FILTER}",
         *GBENCH_FLAGS, f"--benchmark_out={out / 'limits_kernels.json'}", "--benchmark_out_format=json"], log)


def run_harness(out, stem, arguments, common, reps, isa, log, rounds=1):
    run([sys.executable, HARNESS, *arguments, *common, "--reps", str(reps), "--rounds", str(rounds),
         "--isa", isa, "--out", out / f"{stem}.md"], log)


def run_sight(out, cache, long_8192, isa, log):
    """attn_bench_checkpoint's sight mode at 1 and 2 threads, into sight.json (written by the harness's
    checkpoint writer first if the long part has not)."""
    checkpoint = cache / "checkpoints" / SIGHT_CHECKPOINT
    if not (checkpoint / "config.json").is_file():
        bench_llamacpp.hf_checkpoint("smollm2-135m", "F32", cache)
    positions = "2048,8192" if long_8192 else "2048"
    results = []
    for threads in (1, 2):
        command = [bench_folder(isa) / "attn_bench_checkpoint", checkpoint, "sight", "--threads", str(threads),
                   "--positions", positions, "--reps", str(SIGHT_REPS)]
        results.append({"threads": threads, **json.loads(run(command, log, capture=True))})
        (out / "sight.json").write_text(json.dumps({"checkpoint": SIGHT_CHECKPOINT, "runs": results}, indent=1) + "\n",
                                        encoding="utf-8")


# ---------------------------------------------------------------------------------------------------
# tables (pure functions of the JSON files: tools/tests/test_bench_tables.py)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def sight_table(sight):
    """Markdown lines: per thread count and length, the plain forward's seconds and what statistics and kept
    log-sum-exps cost over it (medians of the repetitions, and the median of the per-repetition ratios)."""
    lines = ["| threads | positions | forward, s | with every head's statistics | with log-sum-exps kept |",
             "| ---: | ---: | ---: | ---: | ---: |"]
    for run in sight["runs"]:
        for entry in run["sight"]:
            plain = entry["plain"]

            def over(mode):
                ratios = [m / p for m, p in zip(entry[mode], plain)]
                return f"{median(entry[mode]):.2f} s, {median(ratios):.2f}×"
            lines.append(f"| {run['threads']} | {entry['positions']:,} | {median(plain):.2f} | {over('statistics')} | "
                         f"{over('log_sum_exp')} |")
    return lines + [""]


def medians(gbench):
    """Google Benchmark JSON -> {run name without /real_time: its median aggregate's entry}."""
    found = {}
    for b in gbench["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = re.sub(r"/real_time$", "", b.get("run_name", b["name"]))
        found[name] = b
    return found


def read_bandwidth(m, threads):
    """The best bytes/s of READ_WAYS in the medians m with this many threads (None if none ran); runs before
    2026-12-06 timed only read and read_streams:4, and runs before 04:30 that day none prefetched."""
    rates = [m.get(f"memory/{way}/threads:{threads}", {}).get("bytes_read") for way in READ_WAYS]
    rates = [r for r in rates if r]
    return max(rates) if rates else None


def percent(value, reference):
    return f"{100 * value / reference:.0f} %" if reference else "?"


def limits_tables(kernels, memory):
    """Markdown lines: the FMA peak and read bandwidth, then the products' share of them."""
    k, m = medians(kernels), medians(memory)
    peak = {t: k.get(f"fma_peak/threads:{t}", {}).get("GFLOP/s") for t in (1, 2)}
    read = {t: read_bandwidth(m, t) for t in (1, 2)}

    def gb(name, t):
        value = m.get(f"memory/{name}/threads:{t}", {}).get("bytes_read")
        return f"{value / 1e9:.1f}" if value else "?"

    def gf(value):
        return f"{value:.1f}" if value else "?"

    lines = ["| threads | FMA peak, GFLOP/s | read (the best), GB/s | one run | two runs side by side | four | eight "
             "| four, prefetched | copy (bytes read) |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for t in (1, 2):
        best = f"{read[t] / 1e9:.1f}" if read[t] else "?"
        lines.append(f"| {t} | {gf(peak[t])} | **{best}** | {gb('read', t)} | {gb('read_streams:2', t)} | "
                     f"{gb('read_streams:4', t)} | {gb('read_streams:8', t)} | {gb('read_streams:4/ahead:2048', t)} | "
                     f"{gb('copy', t)} |")
    def products(headings, name_of, counter, scale, reference):
        """A row per layer shape, a column per heading: the product's counter and its share of reference."""
        rows = ["| product | " + " | ".join(headings) + " |", "| --- |" + " ---: |" * len(headings)]
        for shape in SHAPES:
            cells = []
            for b in (k.get(f"from_memory/{shape}/{name_of(column)}/pool_MiB:256") for column in range(len(headings))):
                cells.append(f"{b[counter]:.1f}, {percent(b[counter] * scale, reference)}" if b else "not run")
            rows.append(f"| {shape} | " + " | ".join(cells) + " |")
        return rows

    lines += ["", "Prefill's products, one thread, weights from memory in panels (GFLOP/s and share of the FMA "
              "peak measured in the same process):", ""]
    lines += products([f"{r} rows" for r in PREFILL_ROWS], lambda i: f"float_panels/rows:{PREFILL_ROWS[i]}",
                      "GFLOP/s", 1.0, peak[1])
    lines += ["", "The same with BF16 weights and the activations rounded to bfloat16 (`bf16_rounded_panels`, "
              "LoadOptions::bfloat16_activations; with AVX-512 BF16 two depths a multiply-add instruction, so the "
              "share of the float FMA peak may pass 100 %):", ""]
    lines += products([f"{r} rows" for r in PREFILL_ROWS], lambda i: f"bf16_rounded_panels/rows:{PREFILL_ROWS[i]}",
                      "GFLOP/s", 1.0, peak[1])
    lines += ["", "A decoding step's products, one thread, one row (weights GB/s and share of the read "
              "bandwidth above, the best of its ways of reading):", ""]
    lines += products(list(STEP_LAYOUTS), lambda i: f"{STEP_LAYOUTS[i]}/rows:1", "weights_GB/s", 1e9, read[1])
    return lines + [""]


# The layer shapes of the harness's models (tools/benchmarks/bench_llamacpp.py): what a prefill computes.
PREFILL_SHAPES = {
    "gpt2-small": {"layers": 12, "width": 768, "qkv_width": 3 * 768, "query_width": 768, "mlp": 3072,
                   "gated": False, "heads": 12, "head_dim": 64, "vocabulary": 50257},
    "smollm2-135m": {"layers": 30, "width": 576, "qkv_width": 576 + 2 * 192, "query_width": 576, "mlp": 1536,
                     "gated": True, "heads": 9, "head_dim": 64, "vocabulary": 49152},
}


def prefill_flops(model, positions):
    """The floating-point operations a causal prefill of `positions` tokens needs (a multiply-add is 2): every
    layer's products, attention's q·k and weights·v over the keys each query sees (p + 1 at position p), and
    the last position's logits; None for a model not in PREFILL_SHAPES. Norms, activations and the softmax's
    exponentials are left out (under 1 % at these sizes)."""
    s = PREFILL_SHAPES.get(model)
    if s is None:
        return None
    n = positions
    layer_weights = s["width"] * s["qkv_width"] + s["query_width"] * s["width"] \
        + (3 if s["gated"] else 2) * s["width"] * s["mlp"]
    attention = 2 * 2 * s["heads"] * s["head_dim"] * n * (n + 1) // 2
    return s["layers"] * (2 * n * layer_weights + attention) + 2 * s["width"] * s["vocabulary"]


PREFILL_ARITHMETIC_TEXT = (
    "Prefill as arithmetic: the operations a causal prefill needs (every layer's products, attention over the "
    "keys each query sees, the last position's logits) over each system's median time, as GFLOP/s and a share "
    "of the limits' FMA peak with as many threads. A target of k× a peer asks for k times the peer's share:")


def prefill_arithmetic_table(entries, kernels):
    """Markdown lines: every system's prefill as arithmetic, GFLOP/s (prefill_flops over its median time) and
    a share of the same run's FMA peak with as many threads; what a target over a peer asks of the FMA peak
    follows from it. Empty without the peak or a known model."""
    k = medians(kernels) if kernels else {}
    peak = {t: k.get(f"fma_peak/threads:{t}", {}).get("GFLOP/s") for t in (1, 2)}
    if not any(peak.values()):
        return []
    lengths = sorted({n for e in entries if e["model"] in PREFILL_SHAPES for n in e.get("prefill", [])})
    lines = []
    for entry in entries:
        if entry["model"] not in PREFILL_SHAPES:
            continue
        for row in entry["rows"]:
            cells = []
            for n in lengths:
                rate = row["summary"].get(f"prefill_{n}_tokens_per_second")
                if rate is None or n not in entry.get("prefill", []):
                    cells.append("–")
                    continue
                gflops = prefill_flops(entry["model"], n) / (n / rate) / 1e9
                cells.append(f"{gflops:.0f}, {percent(gflops, peak.get(row['threads']))}")
            lines.append(f"| {model_label(entry)} | {row['threads']} | {system_label(row['system'], entry)} | "
                         + " | ".join(cells) + " |")
    if not lines:
        return []
    header = ["| model | threads | system | " + " | ".join(f"prefill {n}: GFLOP/s, share of FMA peak" for n in lengths)
              + " |", "|---|---:|---|" + "---:|" * len(lengths)]
    return header + sorted(lines, key=lambda line: line.split(" | ")[:2]) + [""]  # by model, then threads


STEP_SYSTEMS = ("llama.cpp", "llama.cpp defaults")  # beside attn: the same weights in the same storage
# Bytes of a cached key or value number: llama.cpp's float32 cache, and its defaults' float16 one
PEER_CACHE_BYTES = {"llama.cpp": 4, "llama.cpp defaults": 2}


def decode_entry(row, context):
    """The row's raw decode entry at this context (attn_bench_checkpoint's JSON), or {}."""
    return next((d for d in row.get("raw", {}).get("decode", []) if d.get("context") == context), {})


def step_bandwidth_table(entries, memory):
    """Markdown lines: what a whole decoding step reads over its time, as GB/s and a share of the read
    bandwidth with as many threads; attn's rows and llama.cpp's, which reads the same weights from its file in
    the same storage. A step reads the weights attn reports ("step_weights_bytes": every layer's matrices and
    the unembedding in the storage they are kept in) and the cache ("cache_bytes_per_step" in attn's float;
    llama.cpp's from "cache_numbers_per_step" and its cache's numbers: PEER_CACHE_BYTES); runs before the cache
    was reported count the weights alone. The read bandwidth is the one attn's process timed beside each
    repetition where it did (attn_bench_checkpoint --read-bandwidth 1: attn's share is the median of each
    repetition's over its own; llama.cpp's is over the median of attn's, its rounds interleaved with attn's),
    else the limits' (read_bandwidth), minutes away. Empty if no row has the bytes."""
    m = medians(memory) if memory else {}
    limits = {t: read_bandwidth(m, t) for t in (1, 2)}
    contexts = sorted({n for e in entries for n in e.get("decode", [])})
    lines = []
    for entry in entries:
        attn_rows = [r for r in entry["rows"] if r["system"].startswith("attn") and r.get("raw", {}).get(
            "step_weights_bytes")]
        if not attn_rows:
            continue
        weights = attn_rows[0]["raw"]["step_weights_bytes"]
        beside = {}  # (threads, context) -> attn's median read bandwidth timed beside its steps, bytes/s
        for r in attn_rows:
            for n in contexts:
                gb = r["summary"].get(f"decode_{n}_read_gb_per_second")
                if gb and (r["threads"], n) not in beside:
                    beside[(r["threads"], n)] = gb * 1e9
        for row in entry["rows"]:
            system = row["system"]
            if not (system.startswith("attn") and "keeping" not in system) and system not in STEP_SYSTEMS:
                continue
            cells = []
            for n in contexts:
                ms = row["summary"].get(f"decode_{n}_ms_per_token")
                if ms is None:
                    cells.append("–")
                    continue
                if system in PEER_CACHE_BYTES:
                    cache = decode_entry(attn_rows[0], n).get("cache_numbers_per_step", 0) * PEER_CACHE_BYTES[system]
                else:
                    cache = decode_entry(row, n).get("cache_bytes_per_step", 0)
                rate = (weights + cache) / (ms / 1e3)
                own = row["summary"].get(f"decode_{n}_read_share")
                if own is not None:
                    share = f"{100 * own:.0f} % of {row['summary'][f'decode_{n}_read_gb_per_second']:.1f}"
                elif (row["threads"], n) in beside:
                    reference = beside[(row["threads"], n)]
                    share = f"{percent(rate, reference)} of {reference / 1e9:.1f}"
                else:
                    share = f"{percent(rate, limits.get(row['threads']))} (limits)"
                cells.append(f"{ms:.2f} ms, {rate / 1e9:.1f} GB/s, {share}")
            lines.append(f"| {model_label(entry)}, {weights / 1e6:,.0f} MB | {row['threads']} | "
                         f"{system_label(system, entry)} | " + " | ".join(cells) + " |")
    if not lines:
        return []
    header = ["| weights a step reads | threads | system | "
              + " | ".join(f"decode at {n}: ms/token, GB/s, share of the read bandwidth (GB/s)" for n in contexts)
              + " |",
              "|---|---:|---|" + "---:|" * len(contexts)]
    return header + sorted(lines, key=lambda line: line.split(" | ")[:3]) + [""]  # by model, then threads


def model_label(entry):
    name = MODEL_NAMES.get(entry["model"], entry["model"])
    return f"{name} {entry['dtype']}"


def system_label(system, entry):
    """The headline table's row name: attn's rows name the model and how its weights are kept; the peers'
    rows follow it and name themselves."""
    if system.startswith("attn"):
        kept = system[len("attn"):].lstrip(", ")
        return f"attn, {model_label(entry)}" + (f", {kept}" if kept else "")
    return {"llama.cpp": "llama.cpp (float32 cache)", "llama.cpp defaults": "llama.cpp defaults (float16 cache)",
            "pytorch-eager": "PyTorch eager"}.get(system, system)


def headline_table(entries):
    """Markdown lines: one row per system of every entry, a column per prefill length and decode context, each
    cell "1 thread / 2 threads" (medians)."""
    prefill = sorted({n for e in entries for n in e.get("prefill", [])})
    decode = sorted({n for e in entries for n in e.get("decode", [])})
    lines = ["| threads: 1 / 2 | " + " | ".join([f"prefill {n}, tokens/s" for n in prefill]
                                                + [f"decode at {n}, ms/token" for n in decode]) + " |",
             "|---|" + "---:|" * (len(prefill) + len(decode))]
    for entry in entries:
        by_system = {}
        for row in entry["rows"]:
            by_system.setdefault(row["system"], {})[row["threads"]] = row["summary"]
        # attn's rows first, then its peers, each in the order the harness ran them
        for system, per_thread in sorted(by_system.items(), key=lambda item: not item[0].startswith("attn")):
            def cell(key, digits):
                values = [per_thread.get(t, {}).get(key) for t in (1, 2)]
                return " / ".join(f"{v:,.{digits}f}" if v is not None else "–" for v in values)
            cells = [cell(f"prefill_{n}_tokens_per_second", 0) for n in prefill]
            cells += [cell(f"decode_{n}_ms_per_token", 2) for n in decode]
            lines.append(f"| {system_label(system, entry)} | " + " | ".join(cells) + " |")
    return lines


def ratios_to_peers(entries):
    """Markdown lines: attn's figures over each peer's, per entry, thread count and length (> 1: attn ahead)."""
    lines = []
    for entry in entries:
        rows = {(r["system"], r["threads"]): r["summary"] for r in entry["rows"]}
        attn = [s for s, _ in rows if s.startswith("attn")]
        peers = [s for s, _ in rows if not s.startswith("attn")]
        for a in dict.fromkeys(attn):
            for peer in dict.fromkeys(peers):
                cells = []
                for t in (1, 2):
                    mine, theirs = rows.get((a, t)), rows.get((peer, t))
                    if not mine or not theirs:
                        continue
                    parts = [f"prefill {n} {mine[f'prefill_{n}_tokens_per_second'] / theirs[f'prefill_{n}_tokens_per_second']:.2f}×"
                             for n in entry.get("prefill", []) if f"prefill_{n}_tokens_per_second" in theirs]
                    parts += [f"decode @{n} {theirs[f'decode_{n}_ms_per_token'] / mine[f'decode_{n}_ms_per_token']:.2f}×"
                              for n in entry.get("decode", []) if f"decode_{n}_ms_per_token" in theirs]
                    if parts:
                        cells.append(f"{t} thread{'s' if t > 1 else ''}: " + ", ".join(parts))
                if cells:
                    lines.append(f"- {system_label(a, entry)} over {system_label(peer, entry)}: " + "; ".join(cells))
    return lines + ([""] if lines else [])


def peak_memory_lines(entries):
    lines = []
    for entry in entries:
        rss = {}
        for row in entry["rows"]:
            rss.setdefault(row["system"], []).append(row["summary"]["peak_rss_mib"])
        lines.append(f"- {model_label(entry)}: " + ", ".join(f"{system_label(s, entry)} {max(v):,.0f} MiB"
                                                             for s, v in rss.items()))
    return lines + [""]


def harness_entries(out, stems):
    entries = []
    for stem in stems:
        path = out / f"{stem}.json"
        if path.is_file():
            entries += json.loads(path.read_text(encoding="utf-8"))["results"]
    return entries


def machine_line(info):
    caches = ", ".join(f"{k} {v}" for k, v in info["caches"].items())
    return (f"{info['cpus']}-CPU {info['model_name']} (family {info['family']}, model {info['model']}; {info['isa']}"
            f"{'; ' + caches if caches else ''})")


def folder_readme(out, record):
    info = record["machine"]
    lines = [f"# {out.name}: the performance tables", "",
             "Written by `/usr/bin/python3 tools/benchmarks/bench_tables.py "
             + " ".join(record["arguments"]) + "` from " + record["started"] + " to " + record["ended"]
             + f", attn at commit {record.get('commit', 'unknown')}"
             + "".join(f"; resumed by `{' '.join(r['arguments'])}` at {r['started']} (attn at {r['commit']})"
                       for r in record.get("resumed", [])) + ".", "",
             *([record["note"], ""] if record.get("note") else []),
             f"Machine: {machine_line(info)}. Vector extensions: {' '.join(info['vector_extensions'])}.", "",
             "Commands, with the 1-minute load average of the machine (2 cores, shared) before and after each:", ""]
    for c in record["commands"]:
        lines.append(f"- `{c['command']}` ({c['started']} – {c['ended'][-9:]}; load {c['load_before']} → "
                     f"{c['load_after']})")
    lines.append("")
    def loaded(name):
        return json.loads((out / name).read_text()) if (out / name).is_file() else None

    # Runs before 2026-12-06 04:30 timed memory in attn_bench_cache, into limits_memory.json.
    kernels = loaded("limits_kernels.json")
    memory = loaded("limits_memory.json") or kernels
    if kernels:
        lines += ["## The machine's limits, and attn's products against them", ""]
        lines += limits_tables(kernels, memory)
    real = harness_entries(out, [stem for stem, _ in REAL_SIZE_RUNS])
    if real:
        lines += ["## Real sizes: attn, llama.cpp and PyTorch on the same weights", "",
                  "Medians; each run's own table, agreement and instruction sets: "
                  + ", ".join(f"[{stem}.md]({stem}.md)" for stem, _ in REAL_SIZE_RUNS
                              if (out / f"{stem}.json").is_file()) + ".", ""]
        lines += headline_table(real) + [""] + ratios_to_peers(real) + ["Peak resident memory:", ""]
        lines += peak_memory_lines(real)
        steps = step_bandwidth_table(real, memory)
        if steps:
            lines += ["A whole decoding step against the read bandwidth: the bytes a step reads, its weights and "
                      "the keys and values it attends in the cache (each system's cache: attn's float, which "
                      "bfloat16 attention rounds but does not narrow, llama.cpp's float32, its defaults' float16), "
                      "over its time (medians), as a share of the "
                      "read bandwidth attn's process timed beside each of its repetitions, on as many threads "
                      "(the best of the ways of reading above; attn's share: the median of each repetition's over "
                      "its own, llama.cpp's: over the median of attn's); \"(limits)\": the limits above, for a "
                      "run that did not time it beside its steps (and counted the weights alone):", ""] + steps
        arithmetic = prefill_arithmetic_table(real, kernels)
        if arithmetic:
            lines += [PREFILL_ARITHMETIC_TEXT, ""] + arithmetic
    sight = out / "sight.json"
    if sight.is_file():
        lines += ["## What seeing inside costs at long prompts", "",
                  "SmolLM2-135M F32, `Model::forward` over random tokens (logits at every position), plain, with "
                  "every head's statistics measured in the attention kernel, and with each row's log-sum-exp kept "
                  "(from which any head's rows of exact weights come afterwards); the three in turn within each "
                  "repetition; medians, and the median of each repetition's ratio to the plain pass:", ""]
        lines += sight_table(json.loads(sight.read_text(encoding="utf-8")))
    long_stems = [stem for stem, _ in LONG_RUNS + LONG_8192_RUNS]
    long = harness_entries(out, long_stems)
    if long:
        lines += ["## Long prompts", "",
                  "Each run's own table: " + ", ".join(f"[{s}.md]({s}.md)" for s in long_stems
                                                       if (out / f"{s}.json").is_file()) + ".", ""]
        for entry in long:  # a table each: their lengths differ
            lines += [f"{model_label(entry)}:", ""] + headline_table([entry]) + [""]
        lines += ratios_to_peers(long) + ["Peak resident memory:", ""]
        lines += peak_memory_lines(long)
        arithmetic = prefill_arithmetic_table(long, kernels)
        if arithmetic:
            lines += [PREFILL_ARITHMETIC_TEXT, ""] + arithmetic
    return "\n".join(lines)


def readme_block(out, record):
    """The README's headline: the real-size table and where it came from."""
    info = record["machine"]
    real = harness_entries(out, [stem for stem, _ in REAL_SIZE_RUNS])
    if not real:
        return None
    link = out.relative_to(ROOT).as_posix() if out.is_relative_to(ROOT) else str(out)
    loads = [c["load_before"] for c in record["commands"]] + [c["load_after"] for c in record["commands"]]
    load = f", load {min(loads)}–{max(loads)}" if loads else ""
    rounds = min(e.get("rounds", 1) for e in real)
    lines = [f"One run of `tools/benchmarks/bench_tables.py` (attn at {record.get('commit', 'unknown')}) on a "
             f"{machine_line(info)}, {record['started']} to {record['ended'][-9:]}{load}: random checkpoints in Hugging Face layout and "
             "their GGUF files, every system on the same weights, medians"
             + (f" over {rounds} rounds of every system in turn" if rounds > 1 else "")
             + f" ([{link}/README.md]({link}/README.md) has every table, the machine's limits and the commands).", ""]
    return "\n".join(lines + headline_table(real))


def replace_readme_block(text, block):
    """text with the lines between the markers replaced by block; a ValueError if the markers are missing."""
    begin, end = text.find(README_BEGIN), text.find(README_END)
    if begin < 0 or end < begin:
        raise ValueError(f"README.md: no {README_BEGIN} … {README_END} block")
    return text[:begin + len(README_BEGIN)] + "\n" + block + "\n" + text[end:]


# ---------------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", default="limits,real_size", help="comma-separated: limits, real_size, long, sight")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "attn-peers",
                        help="the harness's cache (tools/benchmarks/peers/llamacpp_setup.py), for sight's checkpoint")
    parser.add_argument("--out", type=Path, default=None,
                        help="default: docs/bench/<UTC date>-<cpu>-<ISA>/tables-<HHMM>[-<--isa>]/")
    parser.add_argument("--isa", default="native", choices=sorted(bench_llamacpp.ATTN_BUILD_OF_ISA),
                        help="the instruction set every system is held to (see above)")
    parser.add_argument("--reps", type=int, default=1, help="the harness's repetitions in a process, real sizes")
    parser.add_argument("--rounds", type=int, default=3,
                        help="the harness's rounds for the real sizes: every system in turn, this many times")
    parser.add_argument("--long-8192", action="store_true",
                        help="long and sight also run SmolLM2-135M at 8,192 positions (~1 h more)")
    parser.add_argument("--no-readme", action="store_true", help="leave README.md as it is")
    parser.add_argument("--no-build", action="store_true", help="use build/bench (or build/bench-avx2) as it is")
    parser.add_argument("--compose-only", action="store_true", help="write the tables from --out's JSON, run nothing")
    parser.add_argument("--resume", action="store_true",
                        help="continue a run into --out that stopped: its record kept, the parts whose JSON is "
                             "there not run again")
    args = parser.parse_args()
    parts = args.parts.split(",")
    unknown = set(parts) - {"limits", "real_size", "long", "sight"}
    if unknown:
        raise SystemExit(f"--parts: unknown {', '.join(sorted(unknown))}")
    held = args.isa != "native"
    name = time.strftime("tables-%H%M", time.gmtime()) + (f"-{args.isa}" if held else "")
    out = (args.out or run_folder(ROOT) / name).resolve()
    out.mkdir(parents=True, exist_ok=True)
    record_path = out / "bench_tables.json"
    record = {"machine": machine(args.isa), "commit": source_commit(), "arguments": sys.argv[1:], "started": now(),
              "commands": []}
    if (args.compose_only or args.resume) and record_path.is_file():
        earlier = json.loads(record_path.read_text(encoding="utf-8"))
        if args.resume:  # this run's arguments and commit beside the earlier ones', its commands after theirs
            earlier["resumed"] = earlier.get("resumed", []) + [{key: record[key] for key in ("arguments", "commit",
                                                                                              "started")}]
        record = earlier
    if not args.compose_only:
        log = record["commands"]

        def save():  # after every command, so that a run that stops keeps what it measured
            record_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")

        def done(*names):  # with --resume, a part whose files are all in --out is not run again
            return args.resume and all((out / name).is_file() for name in names)

        if not args.no_build:
            build(args.isa, log)
        if "limits" in parts and not done("limits_kernels.json"):
            run_limits(out, args.isa, log)
            save()
        if "real_size" in parts:
            for stem, arguments in REAL_SIZE_RUNS:
                if not done(f"{stem}.json"):
                    run_harness(out, stem, arguments, REAL_SIZE_COMMON, args.reps, args.isa, log, args.rounds)
                    save()
        if "long" in parts:
            for stem, arguments in LONG_RUNS + (LONG_8192_RUNS if args.long_8192 else ()):
                if not done(f"{stem}.json"):
                    run_harness(out, stem, arguments, LONG_COMMON, LONG_REPS, args.isa, log)
                    save()
        if "sight" in parts and not (done("sight.json") and
                                     len(json.loads((out / "sight.json").read_text())["runs"]) == 2):
            run_sight(out, args.cache.expanduser().resolve(), args.long_8192, args.isa, log)
        record["ended"] = now()
        save()
    record.setdefault("ended", now())
    (out / "README.md").write_text(folder_readme(out, record) + "\n", encoding="utf-8")
    print(f"wrote {out / 'README.md'}", flush=True)
    block = readme_block(out, record)
    if block and not args.no_readme and not record["machine"].get("held_to"):
        readme = ROOT / "README.md"
        readme.write_text(replace_readme_block(readme.read_text(encoding="utf-8"), block), encoding="utf-8")
        print(f"wrote the table of {readme}", flush=True)


if __name__ == "__main__":
    main()
