#!/usr/bin/env python3
"""Agreement on quantized GGUF files (issue 32, item 4): for each block format, attn's logits and
llama.cpp's against the exact float64 forward of the weights dequantized from the same file.

  /usr/bin/python3 tools/benchmarks/quantized_agreement.py [--attn PATH] [--larger] [--out FILE.md]

attn: attn_bench_checkpoint (bench/bench_checkpoint.cpp; `cmake --workflow --preset bench` builds it
in build/bench/bench/, or any build of it), run as `attn_bench_checkpoint FILE.gguf logits IDS --weights
W` for W = stored_quantized (the blocks kept, dequantized in registers inside the products) and
converted (every weight dequantized to float at load). llama.cpp: the pinned peer
(tools/benchmarks/peers/llamacpp_setup.py), `llama_peer ... logits --tokens IDS`, float32 KV cache; its
quantized products quantize the activations to 8 bits (Q8_0 / Q8_K) and multiply in integers.
The reference: tools/references/hf_reference.py's float64 forward of the weights gguf-py dequantizes
from the file (tools/references/gguf_models.py's dequantized_checkpoint, Llama only).

Files:
  * the tests' tiny Llamas (tests/data/gguf/models): llama3_rope_scaling at Q8_0 and Q4_0 (width 64),
    llama_kquant at Q4_K_M, Q5_K_M and Q6_K (width 256), the 24-position golden ids;
  * with --larger, random Llamas at real layer sizes, written here (hf_checkpoints.py), converted to F32
    GGUF and quantized by llama_model_quantize to Q8_0, Q4_0, Q4_K_M, Q5_K_M and Q6_K: "gpt2-small-layers"
    (4 layers of GPT-2 small's shape as a Llama: width 768, 12 heads of 64, MLP 3072, 8192 tokens,
    untied) and "smollm2-135m-layers" (4 layers of SmolLM2-135M's: width 576, 9 query / 3 key-value
    heads of 64, MLP 1536, 8192 tokens, tied); 16 seeded tokens. Only 4 layers and 8192 tokens, so that
    the float64 reference fits in memory beside the other engineers' builds.

Metric: max |a − b| / max |b| over the last position's logits, b the float64 reference.
Prints a markdown table (and writes it to --out).
"""
import argparse
import json
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"
sys.path.insert(0, str(TOOLS))  # the role packages
from benchmarks.peers import hf_to_gguf, llamacpp_setup  # noqa: E402
from benchmarks.peers.llamacpp_setup import DEFAULT_CACHE, LLAMA_CPP_COMMIT  # noqa: E402
from common import safetensors_io  # noqa: E402
from references import gguf_models, hf_checkpoints, hf_reference  # noqa: E402

MODELS = ROOT / "tests" / "data" / "gguf" / "models"
TINY = ["llama3_rope_scaling.Q8_0", "llama3_rope_scaling.Q4_0", "llama_kquant.Q4_K_M", "llama_kquant.Q5_K_M",
        "llama_kquant.Q6_K"]
LARGER = {
    "gpt2-small-layers": {"vocab_size": 8192, "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 4,
                          "num_attention_heads": 12, "num_key_value_heads": 12, "max_position_embeddings": 64,
                          "rope_theta": 10000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False},
    "smollm2-135m-layers": {"vocab_size": 8192, "hidden_size": 576, "intermediate_size": 1536,
                            "num_hidden_layers": 4, "num_attention_heads": 9, "num_key_value_heads": 3,
                            "max_position_embeddings": 64, "rope_theta": 100000.0, "rms_norm_eps": 1e-5,
                            "tie_word_embeddings": True},
}
LARGER_TYPES = ["F32", "Q8_0", "Q4_0", "Q4_K_M", "Q5_K_M", "Q6_K"]  # F32: the control


def relative(values, reference):
    return float(np.max(np.abs(np.asarray(values, np.float64) - reference)) / np.max(np.abs(reference)))


def run_json(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return None, (done.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(done.stdout), None


def tensor_types(gguf, path):
    types = sorted({t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors} - {"F32"})
    return types or ["F32"]


def measure(name, path, ids, reference_last, attn, peer, gguf):
    row = {"file": name, "types": "+".join(tensor_types(gguf, path))}
    tokens = ",".join(str(i) for i in ids)
    for weights in ("stored_quantized", "converted"):
        out, error = run_json([str(attn), str(path), "logits", tokens, "--weights", weights])
        row[weights] = relative(out["logits"], reference_last) if out else f"refused: {error}"
    out, error = run_json([str(peer.harness), "--backends", str(peer.backends), "--model", str(path), "--threads",
                           "1", "logits", "--tokens", tokens])
    row["llama.cpp"] = relative(out["logits"], reference_last) if out else f"failed: {error}"
    print(json.dumps(row), flush=True)
    return row


def tiny_rows(attn, peer, gguf):
    # the control: the F32 file the quantized ones were written from, no quantization anywhere
    golden, _ = safetensors_io.read_safetensors(MODELS / f"{TINY[0]}.golden.safetensors")
    ids = [int(i) for i in golden["ids"]]
    f32 = MODELS / "llama3_rope_scaling.F32.gguf"
    with tempfile.TemporaryDirectory() as scratch:
        dequantized = Path(scratch) / "f32"
        gguf_models.dequantized_checkpoint(gguf, f32, ROOT / "tests" / "data" / "hf" / "llama3_rope_scaling",
                                           dequantized)
        logits, _, _ = hf_reference.run(hf_reference.load(dequantized), ids)
    yield measure("llama3_rope_scaling.F32 (control)", f32, ids, np.asarray(logits)[-1], attn, peer, gguf)
    for name in TINY:
        golden, _ = safetensors_io.read_safetensors(MODELS / f"{name}.golden.safetensors")
        ids = [int(i) for i in golden["ids"]]
        yield measure(name, MODELS / f"{name}.gguf", ids, np.asarray(golden["logits"])[-1], attn, peer, gguf)


def larger_rows(attn, peer, gguf, gguf_py):
    for shape, config in LARGER.items():
        with tempfile.TemporaryDirectory() as scratch:
            scratch = Path(scratch)
            hf_dir = scratch / shape
            hf_checkpoints.write_checkpoint(hf_dir, "llama", config, "F32", 7)
            f32 = scratch / f"{shape}.F32.gguf"
            hf_to_gguf.convert(hf_dir, f32, "F32", gguf_py)
            ids = np.random.default_rng([2026, 32]).integers(0, config["vocab_size"], size=16).tolist()
            for type_name in LARGER_TYPES:
                path = scratch / f"{shape}.{type_name}.gguf"
                if type_name == "F32":
                    path = f32
                else:
                    subprocess.run([str(peer.harness), "--backends", str(peer.backends), "--model", str(f32),
                                    "--threads", "2", "quantize", "--out", str(path), "--type", type_name],
                                   check=True, capture_output=True, text=True)
                dequantized = scratch / "dequantized"
                gguf_models.dequantized_checkpoint(gguf, path, hf_dir, dequantized)
                logits, _, _ = hf_reference.run(hf_reference.load(dequantized), ids)
                name = f"{shape}.{type_name}" + (" (control)" if type_name == "F32" else "")
                yield measure(name, path, ids, np.asarray(logits)[-1], attn, peer, gguf)
                if path != f32:
                    path.unlink()


def cpu_line():
    text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Model name")), "?")
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("Flags")), [])
    isa = [f for f in ("avx", "fma", "f16c", "avx2", "avx512f", "avx512bw", "avx512_vnni") if f in flags]
    return f"{model}; {' '.join(isa) or 'no AVX'}; {platform.machine()}"


def cell(value):
    if isinstance(value, float):
        return f"{value:.2e}"
    refused = re.search(r"tensor '([^']+)': ggml type (\w+)", value)  # a type attn does not read
    return f"refused: {refused.group(2)} (`{refused.group(1)}`)" if refused else value


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--attn", type=Path, default=ROOT / "build" / "bench" / "bench" / "attn_bench_checkpoint")
    parser.add_argument("--gguf-py", type=Path, default=DEFAULT_CACHE / f"llama.cpp-{LLAMA_CPP_COMMIT[:12]}" / "gguf-py")
    parser.add_argument("--larger", action="store_true", help="also the random files at real layer sizes")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not args.attn.exists():
        raise SystemExit(f"{args.attn}: build attn_bench_checkpoint first (cmake --workflow --preset bench)")
    gguf = hf_to_gguf.load_gguf(args.gguf_py)
    peer = llamacpp_setup.setup(DEFAULT_CACHE)
    rows = list(tiny_rows(args.attn, peer, gguf))
    if args.larger:
        rows += list(larger_rows(args.attn, peer, gguf, args.gguf_py))
    lines = [f"Machine: {cpu_line()}. llama.cpp {llamacpp_setup.LLAMA_CPP_RELEASE} ({LLAMA_CPP_COMMIT[:12]}), "
             "prebuilt CPU backend, 1 thread, float32 KV cache.", "",
             "max |logits − float64 forward of the file's dequantized weights| / max |reference|, last position:", "",
             "| file | block formats | attn, kept quantized | attn, dequantized at load | llama.cpp |",
             "|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['file']} | {row['types']} | {cell(row['stored_quantized'])} | "
                     f"{cell(row['converted'])} | {cell(row['llama.cpp'])} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
