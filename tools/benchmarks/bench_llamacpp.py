#!/usr/bin/env python3
"""Real model sizes: llama.cpp and PyTorch eager (and attn, through a hook) in one run.

  /usr/bin/python3 tools/benchmarks/bench_llamacpp.py [--models gpt2-small:F32,smollm2-135m:BF16,pythia-160m:F32,qwen3-0.6b:BF16] [--threads 1,2]
      [--prefill 128,512] [--decode 128,512] [--reps 5] [--steps 32] [--cache ~/.cache/attn-peers]
      [--out docs/bench/<date>-<machine>/real_size.md] [--attn-bench 'CMD ...'] [--attn-logits 'CMD ...']
      [--attn-weights converted,stored_16_bit] [--attn-keep-rows auto|0|1|0,1]
  /usr/bin/python3 tools/benchmarks/bench_llamacpp.py --models gemma3-270m:F32,mistral-small:F32 --threads 1,2
      --prefill 512,4096 --decode 4096 --reps 3 --steps 16 --out docs/bench/2026-12-02-windows/windows.md
  /usr/bin/python3 tools/benchmarks/bench_llamacpp.py --models gpt2-small:Q8_0,smollm2-135m:Q4_K_M --threads 1,2
      --attn-weights stored_quantized,converted --out docs/bench/2026-12-02-quantized-speed/real_size.md

For each model:dtype (F32 or BF16) of the shapes
  gpt2-small    GPT2LMHeadModel: 12 layers, 12 heads, width 768, 50257 tokens, tied (124 M parameters);
  smollm2-135m  LlamaForCausalLM: 30 layers, 9 query / 3 key-value heads of 64, width 576, MLP 1536,
                49152 tokens, tied (135 M);
  pythia-160m   GPTNeoXForCausalLM: 12 layers, 12 heads of 64, width 768, MLP 3072, 50304 tokens, rotary
                on 16 of each head's 64 values, parallel residual, GELU, LayerNorms and attention with
                biases, untied embed_out (162 M);
  qwen3-0.6b    Qwen3ForCausalLM: 28 layers, 16 query / 8 key-value heads of 128 (q is 2048 wide over a
                width of 1024), MLP 3072, 151936 tokens, rope_theta 1e6, q_norm / k_norm, tied (596 M);
  gemma3-270m   Gemma3ForCausalLM: 18 layers, 5 sliding (window 512, θ 1e4) : 1 full (θ 1e6), 4 query / 1
                key-value heads of 256, width 640, GeGLU MLP 2048, 262144 tokens, (1 + w) norms before and
                after each block, q/k norms, embedding × √640, tied (268 M); write it F32 so that √640
                is not rounded;
  mistral-small MistralForCausalLM: 16 layers, every one with a window of 1024, 16 query / 4 key-value
                heads of 64, width 1024, MLP 3584, 32768 tokens, untied (285 M):
  1. a random checkpoint in Hugging Face's layout (tools/references/hf_checkpoints.py where it exists,
     else tools/benchmarks/peers/hf_random.py; both take --shape --dtype --out);
  2. its GGUF in the same dtype, by tools/benchmarks/peers/hf_to_gguf.py with the gguf writer of the
     llama.cpp tree pinned in tools/benchmarks/peers (installed by tools/benchmarks/peers/llamacpp_setup.py into --cache);
  3. the agreement check on a 16-token prompt: each system's last-position logits against a
     float64 forward of the same weights (tools/references/hf_reference.py where it exists, and then the
     PyTorch peer in float64 is checked too; else the PyTorch peer in float64),
     max |a - b| / max |b|; a system over its tolerance stops the run before anything is timed;
  4. timings, 1 and 2 threads, each system in a process of its own: prefill of --prefill tokens
     (one batch; 128 and 512 by default), decode of --steps tokens one at a time after a context of
     --decode positions (128 and 512), medians over --reps; peak RSS. The table has a column per length.
     No timing pays for first-touch page faults: llama.cpp and PyTorch run an untimed pass at the
     longest length first, attn one per length (its Decoder's buffers are sized to the last call).
Quantized files. A dtype of QUANTIZED (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K_M, Q5_K_M, Q6_K) times the
F32 checkpoint's GGUF quantized by the peer's llama_model_quantize (`llama_peer ... quantize --type T`,
cached beside the F32 file): llama.cpp and attn run on that one file (attn with --attn-weights
stored_quantized: the blocks kept, dequantized in registers inside the products; converted: every weight
dequantized to float at load). The agreement check's reference is tools/references/hf_reference.py's
float64 forward of the weights gguf-py dequantizes from the file (gguf_models.dequantized_checkpoint:
GPT-2 and Llama shapes); attn is held to F32's tolerance (float arithmetic on exactly those weights),
llama.cpp to QUANTIZED_LLAMA_TOLERANCE (its quantized products round the activations to 8 bits).
PyTorch is not run on them (it would run the unquantized checkpoint, another model); the table says so.
The table lists the file's tensor types, and each system's instruction set (llama.cpp: the features of
the CPU backend it loaded; attn: the build's, "isa" in its JSON).

llama.cpp runs twice: with a float32 KV cache and flash attention off (float32 end to end,
the other peers' arithmetic) and with its defaults (float16 cache, flash attention auto).
Mistral's GGUF is written as llama.cpp's granite_swa (hf_to_gguf.py --mistral-swa), whose graph is
llama's with the sliding window; as "llama" llama.cpp would attend to the whole prefix. Gemma's
keeps its windows (gemma3: per-layer pattern, freq_base_swa); llama.cpp scales Gemma's scores by
1/√head_dim, the same as query_pre_attn_scalar^-1/2 for these shapes (256 = 256).

The window's saving. For a checkpoint with sliding windows attn also runs on a copy of it with full
attention ("attn, no window": the same weights, linked, under a config.json whose window no prompt
reaches: Mistral's sliding_window null, Gemma's sliding_window = max_position_embeddings, all else
equal), in the same run, and the table "the window's saving" gives the time without the window over
the time with it for every length.

attn's hook. --attn-bench is a command template run once per thread count, per weight storage
of --attn-weights (attn::LoadOptions: converted to float, the checkpoint's 16-bit matrices
kept, the same with activations rounded to bfloat16, or a quantized file's blocks kept) and per keep_rows in (0, 1), with {model} (what attn loads:
the checkpoint directory, or the .gguf file for a quantized dtype) {hf_dir} {gguf} {threads} {prefill}
{decode} {steps} {reps} {keep_rows} {weights} filled in (lists comma-separated); it must print one JSON
object like tools/benchmarks/peers/llama_peer.cpp's
bench: {"prefill": [{"tokens": n, "seconds": [...]}], "decode": [{"context": n, "steps": s,
"seconds": [...]}], "peak_rss_bytes": b} (and may add "isa", "step_weights_bytes" and, per decode
entry, "cache_numbers_per_step" and "cache_bytes_per_step", what a step reads of the cache, and
"read_bytes_per_second": the machine's read bandwidth timed beside each repetition, which the
default template asks for with --read-bandwidth 1). --attn-logits ({model} {hf_dir} {gguf} {tokens} {weights}) prints
{"logits": [vocab floats of the last position]} and joins the agreement check. --attn-keep-rows auto
runs keep_rows 1 only where the kept rows (layers × heads × n × n floats for the longest prefill) take
at most 1 GiB: 4,096 positions of mistral-small would take 16 GiB.

--isa avx2 holds every system to AVX2 and FMA on a CPU that has more (AVX-512), so that the code an
AVX2-only CPU runs is measured beside the native run on the same machine: attn from build/bench-avx2
(`cmake --preset bench-avx2`: -mavx2 -mfma -mf16c), llama.cpp with its prebuilt haswell CPU variant alone
(llamacpp_setup.held_to), PyTorch with ATEN_CPU_CAPABILITY=avx2 and OPENBLAS_CORETYPE=Haswell. The
memory system, caches and clocks stay this CPU's: it is the instruction set measured, not an AVX2 machine.

OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are set on these machines and slow PyTorch; they are
removed from the environment of the benchmarked processes only. Debian's PyTorch runs its
matrix products in OpenBLAS's own threads, which torch.set_num_threads does not limit: the PyTorch
peer starts with OPENBLAS_NUM_THREADS and OMP_NUM_THREADS at its thread count and limits OpenBLAS
again at run time (tools/common/peer_threads.py). Runs before 2026-12-04 did not: their "1 thread"
PyTorch rows ran the products on both cores. Its OpenMP workers spin-wait beside OpenBLAS's threads;
at 2 threads on 2 cores that halves prefill or worse, so the PyTorch peer runs with
OMP_WAIT_POLICY=PASSIVE (--omp-wait-policy ACTIVE measures the default).
"""
import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages
from common.peer_threads import thread_env  # noqa: E402
from common.run_folder import run_folder  # noqa: E402
PEERS = ROOT / "tools" / "benchmarks" / "peers"
sys.path.insert(0, str(ROOT / "tools"))  # the role packages
from benchmarks.peers import llamacpp_setup  # noqa: E402

PROMPT_LENGTH = 16
TOLERANCE = {"F32": 2e-3, "F16": 1e-2, "BF16": 5e-2}  # a wrong layout convention gives O(1)
# the peer's quantize --type names; the F32 GGUF quantized to them by llama_model_quantize
QUANTIZED = ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K_M", "Q5_K_M", "Q6_K")
# llama.cpp's quantized products round the activations to 8 bits: 1.6-4e-2 from the exact forward on 4-layer
# files (docs/bench/2026-12-02-quantized), more with more layers; a wrong layout still gives O(1)
QUANTIZED_LLAMA_TOLERANCE = 0.2
PYTORCH_NOT_QUANTIZED = ("not run: PyTorch eager has no GGUF block formats; on the F32 checkpoint it would run "
                         "the unquantized weights, another model")
NO_WINDOW = ", no window"  # the suffix of attn's row on a checkpoint's unwindowed copy
# --isa: the environment of the PyTorch peer under each instruction set (attn's and llama.cpp's are binaries)
TORCH_ISA_ENV = {"native": {}, "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell"}}
ATTN_BUILD_OF_ISA = {"native": "bench", "avx2": "bench-avx2"}  # build/<folder>: cmake --preset <folder>
LLAMA_VARIANTS = {
    "llama.cpp": ["--kv-type", "f32", "--flash-attn", "off"],
    "llama.cpp defaults": ["--kv-type", "f16", "--flash-attn", "auto"],
}


def bench_env(extra=None):
    env = dict(os.environ)
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(name, None)
    env.update(extra or {})
    return env


def run_json(command, what, extra_env=None):
    done = subprocess.run(command, text=True, capture_output=True, env=bench_env(extra_env))
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed ({done.returncode}): {shlex.join(map(str, command))}\n{done.stderr}")
    return json.loads(done.stdout)


def cpu_description():
    text = subprocess.run(["lscpu"], text=True, capture_output=True).stdout
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    flags = fields.get("Flags", "").split()
    vector = [f for f in flags if f.startswith(("sse", "ssse", "avx", "amx", "fma", "f16c"))]
    return {"model_name": fields.get("Model name", "?").strip(), "vector_extensions": sorted(vector),
            "cores": os.cpu_count(), "kernel": platform.release()}


def prompt_tokens(vocab, length=PROMPT_LENGTH):
    state, tokens = 2024, []
    for _ in range(length):
        state = (state * 1103515245 + 12345) % 2**31
        tokens.append(state % vocab)
    return tokens


def checkpoint_writer():
    shared = ROOT / "tools" / "references" / "hf_checkpoints.py"
    return shared if shared.is_file() else PEERS / "hf_random.py"


def hf_checkpoint(shape, dtype, cache):
    """-> the random checkpoint's directory in cache, written when missing or older than its writer."""
    writer = checkpoint_writer()
    hf_dir = cache / "checkpoints" / f"{shape}-{dtype}-{writer.stem}"
    config = hf_dir / "config.json"
    if not config.is_file() or config.stat().st_mtime < writer.stat().st_mtime:
        subprocess.run([sys.executable, str(writer), "--shape", shape, "--dtype", dtype, "--out", str(hf_dir)],
                       check=True, stdout=subprocess.DEVNULL)
    return hf_dir


def prepare(shape, dtype, cache, llama):
    """-> (hf_dir, gguf path), writing each only when missing or older than what it comes from."""
    hf_dir = hf_checkpoint(shape, dtype, cache)
    config = hf_dir / "config.json"
    gguf = cache / "gguf" / f"{hf_dir.name}-{llama.commit[:12]}.gguf"
    if not gguf.is_file() or gguf.stat().st_mtime < config.stat().st_mtime:
        gguf.parent.mkdir(parents=True, exist_ok=True)
        partial = gguf.with_suffix(".partial")
        # --mistral-swa: a Mistral checkpoint becomes llama.cpp's granite_swa, which keeps its sliding window
        # (as "llama" it would attend to the whole prefix); other architectures are not affected.
        subprocess.run([sys.executable, str(PEERS / "hf_to_gguf.py"), str(hf_dir), str(partial), "--type", dtype,
                        "--gguf-py", str(llama.source / "gguf-py"), "--mistral-swa"],
                       check=True, stdout=subprocess.DEVNULL)
        partial.rename(gguf)
    return hf_dir, gguf


def quantized_file(f32_gguf, type_name, llama):
    """The F32 GGUF quantized to type_name by the peer's llama_model_quantize, written beside it when missing
    or older than it."""
    path = f32_gguf.with_name(f"{f32_gguf.stem}.{type_name}.gguf")
    if not path.is_file() or path.stat().st_mtime < f32_gguf.stat().st_mtime:
        partial = path.with_suffix(".partial")
        subprocess.run([str(llama.harness), "--backends", str(llama.backends), "--model", str(f32_gguf), "--threads",
                        "2", "quantize", "--out", str(partial), "--type", type_name],
                       check=True, capture_output=True, text=True)
        partial.rename(path)
    return path


def tensor_types(gguf_path, llama):
    """{ggml type name: tensor count} of a GGUF file (gguf-py of the pinned tree)."""
    from benchmarks.peers import hf_to_gguf

    gguf = hf_to_gguf.load_gguf(llama.source / "gguf-py")
    counts = {}
    for t in gguf.GGUFReader(str(gguf_path)).tensors:
        counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
    return dict(sorted(counts.items()))


def unwindowed_copy(hf_dir, longest):
    """A copy of a checkpoint with sliding windows whose windows never bite (None when it has none):
    the same safetensors files, linked, and a config.json with Mistral's sliding_window null or Gemma's
    sliding_window raised to max_position_embeddings (its sliding layers keep their θ). longest: the
    longest sequence timed, which the raised window must cover."""
    config = json.loads((hf_dir / "config.json").read_text(encoding="utf-8"))
    kind = config.get("model_type")
    if kind == "mistral" and config.get("sliding_window") is not None:
        config["sliding_window"] = None
    elif kind in ("gemma2", "gemma3_text"):
        if config["max_position_embeddings"] < longest:
            raise ValueError(f"{hf_dir.name}: max_position_embeddings {config['max_position_embeddings']} "
                             f"is below the {longest} positions timed")
        config["sliding_window"] = config["max_position_embeddings"]
    else:
        return None
    copy = hf_dir.with_name(hf_dir.name + "-no-window")
    copy.mkdir(exist_ok=True)
    for stale in copy.iterdir():
        stale.unlink()
    for path in hf_dir.iterdir():
        if path.name != "config.json":
            (copy / path.name).symlink_to(path.resolve())
    (copy / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return copy


def kept_rows_bytes(hf_dir, positions):
    """The attention rows attn keeps for a prefill of `positions`: layers × heads × n × n floats."""
    config = json.loads((hf_dir / "config.json").read_text(encoding="utf-8"))
    layers = config.get("num_hidden_layers", config.get("n_layer"))
    heads = config.get("num_attention_heads", config.get("n_head"))
    return 4 * layers * heads * positions * positions


def relative_difference(values, reference):
    if len(values) != len(reference):
        raise ValueError(f"{len(values)} logits against {len(reference)} of the reference")
    scale = max(abs(r) for r in reference)
    return max(abs(v - r) for v, r in zip(values, reference)) / scale


def agreement(hf_dir, gguf, dtype, llama, attn_logits, attn_weights):
    config = json.loads((hf_dir / "config.json").read_text(encoding="utf-8"))
    tokens = prompt_tokens(config["vocab_size"])
    listed = ",".join(map(str, tokens))
    torch_peer = [sys.executable, str(PEERS / "torch_peer.py"), str(hf_dir), "--threads", "2", "logits",
                  "--tokens", listed]
    reference = run_json(torch_peer + ["--float64"], "PyTorch float64")["logits"]
    systems = {"pytorch-eager float32": run_json(torch_peer, "PyTorch float32")["logits"]}
    systems.update(peer_logits(hf_dir, gguf, hf_dir, listed, llama, attn_logits, attn_weights))
    shared_reference = ROOT / "tools" / "references" / "hf_reference.py"
    if shared_reference.is_file():  # the loader tests' float64 reference, written independently
        sys.path.insert(0, str(shared_reference.parent))
        import hf_reference

        logits = hf_reference.run(hf_reference.load(hf_dir), tokens)[0][-1]
        systems["pytorch-eager float64"] = reference
        reference = [float(v) for v in logits]
    result = {"tokens": tokens, "tolerance": TOLERANCE[dtype],
              "reference": "tools/references/hf_reference.py" if shared_reference.is_file() else "pytorch-eager float64",
              "max_relative_difference": {name: relative_difference(v, reference) for name, v in systems.items()}}
    if any("bfloat16" in name for name in systems):
        result["tolerance"] = {name: agreement_tolerance(name, dtype) for name in systems}
    over = {k: v for k, v in result["max_relative_difference"].items() if v > agreement_tolerance(k, dtype)}
    if over:
        raise RuntimeError(f"{hf_dir.name}: logits disagree with the float64 reference beyond "
                           f"their tolerances ({TOLERANCE[dtype]}; bfloat16 rows {TOLERANCE['BF16']}): {over}")
    return result


def peer_logits(hf_dir, gguf, attn_model, listed, llama, attn_logits, attn_weights, quantized=False):
    """{system: last-position logits} of llama.cpp in both configurations (on gguf) and of attn in each
    weight storage (on attn_model: the checkpoint directory, or the quantized file itself), for the
    comma-separated token ids `listed`."""
    systems = {}
    for name, flags in LLAMA_VARIANTS.items():
        command = [str(llama.harness), "--backends", str(llama.backends), "--model", str(gguf), "--threads", "2",
                   *flags, "logits", "--tokens", listed]
        systems[name] = run_json(command, name)["logits"]
    if attn_logits:
        for weights in attn_weights:
            command = shlex.split(attn_logits.format(model=attn_model, hf_dir=hf_dir, gguf=gguf, tokens=listed,
                                                     weights=weights_argument(weights)))
            systems[attn_name(weights, quantized)] = run_json(command, "attn logits")["logits"]
    return systems


def quantized_tolerance(system):
    """A quantized file's agreement tolerance: attn's products are float on the file's dequantized weights
    (F32's tolerance); llama.cpp's round the activations to 8 bits."""
    return TOLERANCE["F32"] if system.startswith("attn") else QUANTIZED_LLAMA_TOLERANCE


def quantized_agreement(hf_dir, gguf, llama, attn_logits, attn_weights):
    """The 16-token check on a quantized file: llama.cpp's and attn's last logits against the float64
    forward of the weights gguf-py dequantizes from it (no PyTorch: see PYTORCH_NOT_QUANTIZED)."""
    from benchmarks.peers import hf_to_gguf
    from references import gguf_models, hf_reference

    config = json.loads((hf_dir / "config.json").read_text(encoding="utf-8"))
    tokens = prompt_tokens(config["vocab_size"])
    listed = ",".join(map(str, tokens))
    systems = peer_logits(hf_dir, gguf, gguf, listed, llama, attn_logits, attn_weights, quantized=True)
    gguf_module = hf_to_gguf.load_gguf(llama.source / "gguf-py")
    with tempfile.TemporaryDirectory() as scratch:
        dequantized = Path(scratch) / "dequantized"
        gguf_models.dequantized_checkpoint(gguf_module, gguf, hf_dir, dequantized)
        reference = [float(v) for v in hf_reference.run(hf_reference.load(dequantized), tokens)[0][-1]]
    result = {"tokens": tokens, "tolerance": {name: quantized_tolerance(name) for name in systems},
              "reference": "tools/references/hf_reference.py on the file's dequantized weights",
              "max_relative_difference": {name: relative_difference(v, reference) for name, v in systems.items()}}
    over = {k: v for k, v in result["max_relative_difference"].items() if v > quantized_tolerance(k)}
    if over:
        raise RuntimeError(f"{gguf.name}: logits disagree with the float64 forward of its dequantized weights "
                           f"beyond their tolerances: {over}")
    return result


def keep_rows_choices(hf_dir, args):
    """--attn-keep-rows as a list of 0 / 1: auto keeps rows only where they take at most 1 GiB."""
    if args.attn_keep_rows != "auto":
        return [int(k) for k in args.attn_keep_rows.split(",")]
    longest = max(int(n) for n in args.prefill.split(","))
    return [0, 1] if kept_rows_bytes(hf_dir, longest) <= 2**30 else [0]


def tolerance_of(system, dtype):
    """The long check's tolerance: the checkpoint's, or float16's for llama.cpp's float16 key-value cache,
    whose rounding grows with the positions (at 16 positions mistral-small's is already 1.7e-3)."""
    return max(TOLERANCE[dtype], TOLERANCE["F16"]) if system == "llama.cpp defaults" else TOLERANCE[dtype]


def long_agreement(hf_dir, gguf, dtype, llama, attn_logits, attn_weights, no_window, length):
    """The windows at the checkpoint's own size: every system's last logits for a prompt of `length`
    positions (longer than the windows) against the PyTorch peer in float32 (which the 16-token check
    and tools/tests compare with the float64 reference), and attn's on the unwindowed copy, which must
    be far off: a system that ignored its windows would be too. Raises when a windowed system is over
    its tolerance (tolerance_of) or the unwindowed copy within 10 times the checkpoint's tolerance."""
    config = json.loads((hf_dir / "config.json").read_text(encoding="utf-8"))
    listed = ",".join(map(str, prompt_tokens(config["vocab_size"], length)))
    reference = run_json([sys.executable, str(PEERS / "torch_peer.py"), str(hf_dir), "--threads", "2", "logits",
                          "--tokens", listed], "PyTorch float32")["logits"]
    systems = {}
    for name, flags in LLAMA_VARIANTS.items():
        systems[name] = run_json([str(llama.harness), "--backends", str(llama.backends), "--model", str(gguf),
                                  "--threads", "2", *flags, "logits", "--tokens", listed], name)["logits"]
    weights = attn_weights[0]
    if attn_logits:
        for directory, name in ((hf_dir, attn_name(weights)), (no_window, attn_name(weights) + NO_WINDOW)):
            if directory is not None:
                command = shlex.split(attn_logits.format(model=directory, hf_dir=directory, gguf=gguf, tokens=listed,
                                                         weights=weights_argument(weights)))
                systems[name] = run_json(command, "attn logits")["logits"]
    result = {"tokens": length, "reference": "pytorch-eager float32",
              "tolerance": {name: tolerance_of(name, dtype) for name in systems},
              "max_relative_difference": {name: relative_difference(v, reference) for name, v in systems.items()}}
    windowed = {k: v for k, v in result["max_relative_difference"].items() if not k.endswith(NO_WINDOW)}
    over = {k: v for k, v in windowed.items() if v > tolerance_of(k, dtype)}
    unwindowed = {k: v for k, v in result["max_relative_difference"].items() if k.endswith(NO_WINDOW)}
    if over or any(v < 10 * TOLERANCE[dtype] for v in unwindowed.values()):
        raise RuntimeError(f"{hf_dir.name}, {length} positions: over their tolerances: {over}; without the "
                           f"windows (must be over {10 * TOLERANCE[dtype]}): {unwindowed}")
    return result


def bench_commands(hf_dir, gguf, threads, args, llama, no_window=None, quantized=False):
    """(row name, command) of every system timed; no_window: the checkpoint's unwindowed copy, for attn;
    quantized: gguf is a quantized file, which attn loads and PyTorch does not run (PYTORCH_NOT_QUANTIZED)."""
    lists = {"prefill": args.prefill, "decode": args.decode}
    timing = ["--steps", str(args.steps), "--reps", str(args.reps)]
    common = ["--prefill", lists["prefill"], "--decode", lists["decode"], *timing]
    for name, flags in LLAMA_VARIANTS.items():
        yield name, [str(llama.harness), "--backends", str(llama.backends), "--model", str(gguf), "--threads",
                     str(threads), *flags, "bench", *common]
    torch_lists = {k: ",".join(n for n in v.split(",") if not args.pytorch_up_to or int(n) <= args.pytorch_up_to)
                   for k, v in lists.items()}
    if not quantized and (torch_lists["prefill"] or torch_lists["decode"]):  # an empty list: none of that kind
        yield "pytorch-eager", [sys.executable, str(PEERS / "torch_peer.py"), str(hf_dir), "--threads", str(threads),
                                "bench", "--prefill", torch_lists["prefill"], "--decode", torch_lists["decode"],
                                *timing]
    if args.attn_bench:
        def attn_command(directory, keep_rows, weights):
            return shlex.split(args.attn_bench.format(
                model=gguf if quantized else directory, hf_dir=directory, gguf=gguf, threads=threads,
                prefill=lists["prefill"], decode=lists["decode"], steps=args.steps, reps=args.reps,
                keep_rows=keep_rows, weights=weights_argument(weights)))

        for weights in args.attn_weights.split(","):
            for keep_rows in keep_rows_choices(hf_dir, args):
                name = attn_name(weights, quantized) + (", keeping attention rows" if keep_rows else "")
                yield name, attn_command(hf_dir, keep_rows, weights)
        if no_window is not None:
            weights = args.attn_weights.split(",")[0]
            yield attn_name(weights) + NO_WINDOW, attn_command(no_window, 0, weights)



def weights_argument(weights):
    """What {weights} becomes in attn's command templates: the storage, or for bfloat16_activations (a BF16
    checkpoint's matrices kept in 16 bits, each product's activations rounded to bfloat16 as llama.cpp
    rounds them) and bfloat16_attention (float weights, the attention alone on bfloat16 numbers, as
    llama.cpp's default 16-bit cache does) the storage and attn_bench_checkpoint's flag for the rounding."""
    if weights == "bfloat16_activations":
        return "stored_16_bit --bfloat16-activations"
    if weights == "bfloat16_attention":
        return "converted --bfloat16-attention"
    return weights


def attn_name(weights, quantized=False):
    """attn's row name for a weight storage: "attn" for float weights; on a quantized file "attn, kept
    quantized" (stored_quantized) or "attn, dequantized at load" (converted)."""
    if quantized:
        return "attn, kept quantized" if weights == "stored_quantized" else "attn, dequantized at load"
    if weights == "bfloat16_activations":
        return "attn, 16-bit weights, bfloat16 activations"
    if weights == "bfloat16_attention":
        return "attn, bfloat16 attention"
    return "attn" if weights == "converted" else "attn, 16-bit weights"


def agreement_tolerance(system, dtype):
    """A system's agreement tolerance: the checkpoint's; BF16's where attn rounds to bfloat16 (its
    activations or its attention: the arithmetic of a BF16 checkpoint, 8 bits); F16's for llama.cpp's
    defaults, as in the long check (their float16 key-value cache: SmolLM2-135M F32 with the AVX2 variant
    2.07e-3 at 16 positions, over F32's 2e-3)."""
    if "bfloat16" in system:
        return max(TOLERANCE[dtype], TOLERANCE["BF16"])
    return tolerance_of(system, dtype)


def summarize(raw):
    """Medians, and the best repetition (the least disturbed by other work on the machine)."""
    row = {"peak_rss_mib": raw["peak_rss_bytes"] / 2**20}
    for p in raw["prefill"]:
        row[f"prefill_{p['tokens']}_tokens_per_second"] = p["tokens"] / statistics.median(p["seconds"])
        row[f"prefill_{p['tokens']}_tokens_per_second_best"] = p["tokens"] / min(p["seconds"])
    for d in raw["decode"]:
        row[f"decode_{d['context']}_ms_per_token"] = 1e3 * statistics.median(d["seconds"]) / d["steps"]
        row[f"decode_{d['context']}_ms_per_token_best"] = 1e3 * min(d["seconds"]) / d["steps"]
        # attn_bench_checkpoint --read-bandwidth 1: the read bandwidth timed beside each repetition, and
        # each repetition's bytes per second (the weights and the cache a step reads) over its own (the
        # VM's bandwidth moves by a third in minutes)
        reads, weights = d.get("read_bytes_per_second"), raw.get("step_weights_bytes")
        if reads and len(reads) == len(d["seconds"]):
            row[f"decode_{d['context']}_read_gb_per_second"] = statistics.median(reads) / 1e9
            if weights:
                step_bytes = weights + d.get("cache_bytes_per_step", 0)
                shares = [step_bytes * d["steps"] / seconds / read for seconds, read in zip(d["seconds"], reads)]
                row[f"decode_{d['context']}_read_share"] = statistics.median(shares)
    return row


def merge_raw(runs):
    """One system's JSON from several processes (the rounds of --rounds) as one: every repetition's
    seconds of each length together, the highest peak RSS, the rest from the first."""
    merged = json.loads(json.dumps(runs[0]))
    for run in runs[1:]:
        for kind, key in (("prefill", "tokens"), ("decode", "context")):
            by_length = {e[key]: e for e in merged.get(kind, [])}
            for e in run.get(kind, []):
                by_length[e[key]]["seconds"] += e["seconds"]
                if "read_bytes_per_second" in by_length[e[key]]:
                    by_length[e[key]]["read_bytes_per_second"] += e.get("read_bytes_per_second", [])
        merged["peak_rss_bytes"] = max(merged["peak_rss_bytes"], run["peak_rss_bytes"])
    return merged


def lengths(entry):
    """(prefill lengths, decode contexts) of a result entry: those it was run with (128, 512 before they
    were options)."""
    return entry.get("prefill", [128, 512]), entry.get("decode", [128, 512])


def window_saving(entry):
    """Markdown lines: per thread count and length, attn's time without the window over its time with it
    (medians; > 1: the window saves time), where the entry has an "attn, no window" row."""
    rows = {(row["system"], row["threads"]): row["summary"] for row in entry["rows"]}
    pairs = [(threads, rows[(system, threads)], rows[(system + NO_WINDOW, threads)])
             for system, threads in rows if (system + NO_WINDOW, threads) in rows]
    if not pairs:
        return []
    prefill, decode = lengths(entry)
    lines = ["The window's saving: attn's time with full attention over its time with the windows "
             "(the same weights; medians; 1.00 = no saving).", "",
             "| threads | " + " | ".join([f"prefill {n}" for n in prefill] + [f"decode @{n}" for n in decode]) + " |",
             "| ---: |" + " ---: |" * (len(prefill) + len(decode))]
    for threads, windowed, full in pairs:
        cells = [f"{windowed[f'prefill_{n}_tokens_per_second'] / full[f'prefill_{n}_tokens_per_second']:.2f}×"
                 for n in prefill]
        cells += [f"{full[f'decode_{n}_ms_per_token'] / windowed[f'decode_{n}_ms_per_token']:.2f}×" for n in decode]
        lines.append(f"| {threads} | " + " | ".join(cells) + " |")
    return lines + [""]


def markdown(results, cpu, llama, args):
    lines = ["# Real model sizes: attn, llama.cpp and PyTorch eager", "",
             "Written by `tools/benchmarks/bench_llamacpp.py`; "
             f"CPU: {cpu['model_name']}, {cpu['cores']} cores; vector extensions: "
             f"{' '.join(cpu['vector_extensions'])}.",
             f"llama.cpp {llama.release} (commit {llama.commit[:12]}), prebuilt CPU libraries of "
             "@node-llama-cpp/linux-x64@3.21.1; PyTorch eager float32 under inference_mode.",
             "Random weights in Hugging Face layout; prefill = one batch, last position's logits; decode = "
             "single-token steps after the context, logits each step; medians of the repetitions (their count "
             "under each model), the best in brackets; peak RSS of the system's process (PyTorch: after loading); "
             "load: the machine's 1-minute load average before the row ran (2 cores, shared).",
             "\"llama.cpp\": float32 KV cache, flash attention off; \"llama.cpp defaults\": float16 cache, "
             f"flash attention auto. PyTorch with OMP_WAIT_POLICY={args.omp_wait_policy} and OpenBLAS on the "
             "row's thread count.",
             "Sliding windows are kept by every system (Mistral's GGUF as llama.cpp's granite_swa); \"attn, no "
             "window\": attn on the same weights with full attention (a config.json whose window no prompt "
             "reaches).", ""]
    if args.isa != "native":
        lines[-1:-1] = [f"Every system held to {args.isa.upper()} on this CPU (--isa {args.isa}): attn's build/"
                        f"{ATTN_BUILD_OF_ISA[args.isa]}, llama.cpp's {llamacpp_setup.VARIANT_OF_ISA[args.isa]} "
                        "alone, PyTorch with " + " ".join(f"{k}={v}" for k, v in TORCH_ISA_ENV[args.isa].items())
                        + "; the memory system and clocks are this CPU's."]
    for entry in results:
        prefill, decode = lengths(entry)
        agree = entry["agreement"]["max_relative_difference"]
        lines += [f"## {entry['model']} {entry['dtype']}", "",
                  f"Run {entry.get('date', '?')}; repetitions: {entry.get('reps', args.reps)}"
                  + (f" in each of {entry['rounds']} rounds (every system in turn)"
                     if entry.get("rounds", 1) > 1 else "")
                  + "; decode of "
                  f"{entry.get('steps', args.steps)} steps. "
                  f"Logits against {entry['agreement'].get('reference', 'float64')} "
                  "(float64; 16-token prompt; max |a − b| / max |b|): "
                  + ", ".join(f"{k} {v:.1e}" for k, v in agree.items()) + ".", ""]
        if "tensor_types" in entry:  # a quantized file
            lines += [f"File: {entry['file']}, quantized from the F32 GGUF by llama_model_quantize; tensors: "
                      + ", ".join(f"{n} {t}" for t, n in entry["tensor_types"].items()) + ".", ""]
        for system, reason in entry.get("skipped", {}).items():
            lines += [f"{system}: {reason}.", ""]
        if "long_agreement" in entry:
            long = entry["long_agreement"]
            lines += [f"At {long['tokens']} positions (past the windows), against {long['reference']}: "
                      + ", ".join(f"{k} {v:.1e}" for k, v in long["max_relative_difference"].items()) + ".", ""]
        lines += ["| system | threads | "
                  + " | ".join([f"prefill {n} tok/s" for n in prefill] + [f"decode @{n} ms/tok" for n in decode])
                  + " | peak RSS MiB | load |",
                  "| --- | ---: |" + " ---: |" * (len(prefill) + len(decode) + 2)]
        for row in entry["rows"]:
            s = row["summary"]
            cells = [f"{s[f'prefill_{n}_tokens_per_second']:.0f} ({s[f'prefill_{n}_tokens_per_second_best']:.0f})"
                     if f"prefill_{n}_tokens_per_second" in s else "not run" for n in prefill]
            cells += [f"{s[f'decode_{n}_ms_per_token']:.2f} ({s[f'decode_{n}_ms_per_token_best']:.2f})"
                      if f"decode_{n}_ms_per_token" in s else "not run" for n in decode]
            lines.append(f"| {row['system']} | {row['threads']} | {' | '.join(cells)} | {s['peak_rss_mib']:.0f} "
                         f"| {row['load_average']:.1f} |")
        lines.append("")
        isa = {}  # the instruction set each system's figures came from, as its process reported it
        for row in entry["rows"]:
            found = row.get("raw", {}).get("isa") or row.get("raw", {}).get("cpu_backend")
            if found:
                isa.setdefault(found, []).append(row["system"])
        if isa:
            lines += ["Instruction sets: " + "; ".join(
                f"{', '.join(dict.fromkeys(systems))}: {found}" for found, systems in isa.items()) + ".", ""]
        lines += window_saving(entry)
    return "\n".join(lines)


def parse_model(spec):
    """--models' shape:dtype -> (shape, dtype); dtype one of TOLERANCE's (the checkpoint's own) or QUANTIZED's
    (its F32 GGUF quantized by llama.cpp)."""
    shape, _, dtype = spec.partition(":")
    if not shape or (dtype not in TOLERANCE and dtype not in QUANTIZED):
        raise SystemExit(f"--models {spec!r}: expected shape:dtype, the dtype one of "
                         f"{', '.join(sorted(TOLERANCE))} or, quantized by llama.cpp, {', '.join(QUANTIZED)}")
    return shape, dtype


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="gpt2-small:F32",
                        help="comma-separated shape:dtype; shapes gpt2-small, smollm2-135m, pythia-160m, qwen3-0.6b, "
                             "gemma3-270m, mistral-small; dtypes F32, F16, BF16, or a quantized type (QUANTIZED: "
                             "gpt2-small and smollm2-135m)")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--prefill", default="128,512", help="comma-separated prompt lengths timed as one batch")
    parser.add_argument("--decode", default="128,512",
                        help="comma-separated contexts after which --steps single-token steps are timed")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=1,
                        help="run every system this many times in turn, each time --reps repetitions, and merge them")
    parser.add_argument("--cache", type=Path, default=llamacpp_setup.DEFAULT_CACHE)
    parser.add_argument("--out", type=Path, default=run_folder(ROOT) / "real_size.md")
    parser.add_argument("--isa", default="native", choices=sorted(TORCH_ISA_ENV),
                        help="the instruction set every system is held to (see above)")
    parser.add_argument("--attn-bench", default=None,
                        help="command template for attn's timings (see above; default: the attn_bench_checkpoint "
                             "of build/bench, or build/bench-avx2 with --isa avx2, if it is built)")
    parser.add_argument("--attn-logits", default=None,
                        help="command template for attn's logits (default: attn_bench_checkpoint's)")
    parser.add_argument("--attn-keep-rows", default="auto",
                        help="keep_rows values attn runs with: 0, 1, 0,1 or auto (see above)")
    parser.add_argument("--attn-weights", default="converted",
                        help="comma-separated weight storages attn runs with: converted (float), stored_16_bit "
                             "(a 16-bit checkpoint's matrices kept in 16 bits), bfloat16_activations (a BF16 "
                             "checkpoint's kept in 16 bits, each product's activations rounded to bfloat16, as "
                             "llama.cpp does), bfloat16_attention (float weights, the attention on bfloat16 "
                             "numbers, as llama.cpp's default 16-bit cache), stored_quantized (a quantized file's "
                             "blocks kept)")
    parser.add_argument("--pytorch-up-to", type=int, default=0, metavar="N",
                        help="time the PyTorch peer only at prefill lengths and decode contexts up to N (0: all); "
                             "for a run short of time, its longest lengths being the slowest")
    parser.add_argument("--omp-wait-policy", default="PASSIVE", choices=["PASSIVE", "ACTIVE"],
                        help="OMP_WAIT_POLICY of the PyTorch peer (see above)")
    parser.add_argument("--merge", action="store_true",
                        help="keep the other models' results already in --out's JSON (same machine, another run)")
    parser.add_argument("--agreement-only", action="store_true", help="check the logits, time nothing, write nothing")
    parser.add_argument("--long-agreement", type=int, default=0, metavar="N",
                        help="also compare the systems' logits for an N-position prompt, longer than the windows, "
                             "and attn's without the windows (see long_agreement)")
    args = parser.parse_args()
    attn_bench = ROOT / "build" / ATTN_BUILD_OF_ISA[args.isa] / "bench" / "attn_bench_checkpoint"
    if args.attn_bench is None and attn_bench.exists():
        args.attn_bench = (f"{attn_bench} {{model}} peer --threads {{threads}} --prefill {{prefill}} "
                           "--decode {decode} --steps {steps} --reps {reps} --keep-rows {keep_rows} --weights {weights} "
                           "--read-bandwidth 1")
    if args.attn_logits is None and attn_bench.exists():
        args.attn_logits = f"{attn_bench} {{model}} logits {{tokens}} --weights {{weights}}"
    cache = args.cache.expanduser().resolve()
    llama = llamacpp_setup.held_to(llamacpp_setup.setup(cache), args.isa, cache)
    cpu = cpu_description()
    json_path = args.out.with_suffix(".json")
    earlier = []
    if args.merge and json_path.is_file():
        earlier = json.loads(json_path.read_text(encoding="utf-8"))["results"]
    results = []

    def write():
        """Written after every row, so a long run that is stopped keeps what it measured."""
        ran = {(e["model"], e["dtype"]) for e in results}
        kept = [e for e in earlier if (e["model"], e["dtype"]) not in ran] + results
        record = {"cpu": cpu, "llama_cpp": {"release": llama.release, "commit": llama.commit},
                  "reps": args.reps, "rounds": args.rounds, "steps": args.steps,
                  "omp_wait_policy": args.omp_wait_policy, "isa": args.isa, "results": kept}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        args.out.write_text(markdown(kept, cpu, llama, args), encoding="utf-8")

    for spec in args.models.split(","):
        shape, dtype = parse_model(spec)
        quantized = dtype in QUANTIZED
        if quantized and args.long_agreement:
            raise SystemExit(f"--models {spec!r}: --long-agreement is for the F32/BF16 checkpoints' windows")
        hf_dir, gguf = prepare(shape, "F32" if quantized else dtype, cache, llama)
        if quantized:
            gguf = quantized_file(gguf, dtype, llama)
        longest = max(int(n) for n in args.prefill.split(",") + [str(int(c) + args.steps)
                                                                 for c in args.decode.split(",")])
        no_window = unwindowed_copy(hf_dir, longest) if args.attn_bench and not quantized else None
        entry = {"model": shape, "dtype": dtype, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                 "reps": args.reps, "rounds": args.rounds, "steps": args.steps,
                 "prefill": [int(n) for n in args.prefill.split(",")],
                 "decode": [int(n) for n in args.decode.split(",")]}
        if quantized:
            entry.update({"file": gguf.name, "tensor_types": tensor_types(gguf, llama),
                          "skipped": {"PyTorch eager": PYTORCH_NOT_QUANTIZED},
                          "agreement": quantized_agreement(hf_dir, gguf, llama, args.attn_logits,
                                                           args.attn_weights.split(","))})
        else:
            entry["agreement"] = agreement(hf_dir, gguf, dtype, llama, args.attn_logits, args.attn_weights.split(","))
        entry["rows"] = []
        print(f"{shape} {dtype}: agreement {entry['agreement']['max_relative_difference']}", flush=True)
        if args.long_agreement:
            entry["long_agreement"] = long_agreement(hf_dir, gguf, dtype, llama, args.attn_logits,
                                                     args.attn_weights.split(","), no_window, args.long_agreement)
            print(f"{shape} {dtype}: at {args.long_agreement} positions against PyTorch float32 "
                  f"{entry['long_agreement']['max_relative_difference']}", flush=True)
        if args.agreement_only:
            continue
        results.append(entry)
        for threads in [int(t) for t in args.threads.split(",")]:
            commands = list(bench_commands(hf_dir, gguf, threads, args, llama, no_window, quantized))
            runs = {system: [] for system, _ in commands}
            rows = {}
            # --rounds: every system in turn, again and again, so that a slow minute of the machine (its
            # read bandwidth moves 10-20 % from minute to minute on these VMs) falls on each of them
            for round_index in range(args.rounds):
                for system, command in commands:
                    load_average, started = os.getloadavg()[0], time.strftime("%H:%M:%S UTC", time.gmtime())
                    extra_env = None
                    if system == "pytorch-eager":  # OpenBLAS's threads limited too (tools/common/peer_threads.py)
                        extra_env = {**thread_env(threads, {}), "OMP_WAIT_POLICY": args.omp_wait_policy,
                                     **TORCH_ISA_ENV[args.isa]}
                    runs[system].append(run_json(command, system, extra_env))
                    raw = merge_raw(runs[system])
                    if system not in rows:
                        rows[system] = {"system": system, "threads": threads, "load_average": load_average,
                                        "started": started}
                        entry["rows"].append(rows[system])
                    rows[system].update({"summary": summarize(raw), "raw": raw, "rounds": round_index + 1})
                    write()
                    print(f"  {system:32s} threads {threads} round {round_index + 1}: {rows[system]['summary']}",
                          flush=True)
        print(f"wrote {args.out} and {json_path}", flush=True)

if __name__ == "__main__":
    main()
