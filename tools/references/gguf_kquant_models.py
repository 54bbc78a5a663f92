#!/usr/bin/python3
"""Write tests/data/gguf/models/llama_kquant.<type>.gguf: a tiny random Llama whose matrices are
whole 256-value K-quant blocks (width 256, MLP 256, 4 heads of 64, 2 key/value heads, untied),
converted to F32 GGUF (tools/benchmarks/peers/hf_to_gguf.py) and quantized by the pinned llama.cpp's
llama_model_quantize (the peer's `quantize` command) to Q4_K_M (Q4_K with Q6_K for attn_v,
ffn_down and output), Q5_K_M (Q5_K with Q6_K) and Q6_K; and llama_kquant_narrow.<type>.gguf, the
same at width 96 (3 heads of 32, 1 key/value head; MLP 256) at Q4_K_M and Q5_K_M, whose rows of 96
values are not whole K blocks: llama.cpp falls back to Q5_0 (for Q4_K), Q5_1 (for Q5_K) and Q8_0 (for
Q6_K) there and keeps K blocks in the down projection (rows of 256), as it does for SmolLM2-135M's
width 576. Each with <file>.golden.safetensors, the float64 forward of the weights gguf-py
dequantizes from each file (gguf_models.write_golden), for tests/test_weights_quantized.cpp. And, for the same tests' other layouts (GPT-2's fused qkv and learned
positions, GPT-NeoX's per-head qkv regrouped, Phi-3's fused [gate; up]), <checkpoint>.Q8_0.gguf of
gpt2_prefixed_f32, gpt_neox_parallel and phi3_fused_partial, quantized from their F32 GGUF files by the
same llama_model_quantize (it keeps F16 or F32 where rows are not whole 32-value blocks): the tests hold
them against the same files loaded dequantized, so they need no golden.

    /usr/bin/python3 tools/references/gguf_kquant_models.py [--gguf-py DIR]

Needs the peer (tools/benchmarks/peers/llamacpp_setup.py). gguf-py cannot quantize K formats, which
is why llama.cpp writes them; it dequantizes them.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TOOLS))  # tools/: the role packages

from benchmarks.peers import hf_to_gguf, llamacpp_setup  # noqa: E402
from benchmarks.peers.llamacpp_setup import DEFAULT_CACHE, LLAMA_CPP_COMMIT  # noqa: E402
from references import gguf_models, hf_checkpoints  # noqa: E402

ROOT = TOOLS.parent
OUT = ROOT / "tests" / "data" / "gguf" / "models"
NAME = "llama_kquant"
TYPES = ("Q4_K_M", "Q5_K_M", "Q6_K")
CONFIG = {"vocab_size": 128, "hidden_size": 256, "intermediate_size": 256, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 24,
          "rope_theta": 10000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
          "bos_token_id": 0, "eos_token_id": 1}
NARROW = "llama_kquant_narrow"
NARROW_TYPES = ("Q4_K_M", "Q5_K_M")
NARROW_CONFIG = {**CONFIG, "hidden_size": 96, "num_attention_heads": 3, "num_key_value_heads": 1}
SEED = 32
LAYOUTS = ("gpt2_prefixed_f32", "gpt_neox_parallel", "phi3_fused_partial")


def quantize(peer, f32_path, out_path, type_name):
    subprocess.run([str(peer.harness), "--backends", str(peer.backends), "--model", str(f32_path), "quantize",
                    "--out", str(out_path), "--type", type_name], check=True, capture_output=True, text=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gguf-py", type=Path, default=DEFAULT_CACHE / f"llama.cpp-{LLAMA_CPP_COMMIT[:12]}" / "gguf-py")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    gguf = hf_to_gguf.load_gguf(args.gguf_py)
    peer = llamacpp_setup.setup(DEFAULT_CACHE)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, config, type_names in ((NAME, CONFIG, TYPES), (NARROW, NARROW_CONFIG, NARROW_TYPES)):
        with tempfile.TemporaryDirectory() as scratch:
            hf_dir = Path(scratch) / name
            hf_checkpoints.write_checkpoint(hf_dir, "llama", config, "F32", SEED)
            f32 = Path(scratch) / f"{name}.F32.gguf"
            hf_to_gguf.convert(hf_dir, f32, "F32", args.gguf_py)
            for type_name in type_names:
                path = args.out / f"{name}.{type_name}.gguf"
                quantize(peer, f32, path, type_name)
                types = sorted({t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors})
                print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes, {json.dumps(types)}")
                golden = args.out / f"{name}.{type_name}.golden.safetensors"
                gguf_models.write_golden(gguf, path, hf_dir, golden)
                print(f"{golden.relative_to(ROOT)}")
    for checkpoint in LAYOUTS:
        path = args.out / f"{checkpoint}.Q8_0.gguf"
        quantize(peer, args.out / f"{checkpoint}.F32.gguf", path, "Q8_0")
        types = sorted({t.tensor_type.name for t in gguf.GGUFReader(str(path)).tensors})
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes, {json.dumps(types)}")


if __name__ == "__main__":
    main()
