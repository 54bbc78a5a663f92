#!/usr/bin/env python3
"""Random checkpoints in Hugging Face's layout (config.json + model.safetensors) for the peers.

  /usr/bin/python3 tools/benchmarks/peers/hf_random.py --shape gpt2-small|smollm2-135m|pythia-160m|qwen3-0.6b
      --dtype F32|BF16 --out DIR [--seed 0]

gpt2-small: GPT2LMHeadModel, 12 layers, 12 heads, width 768, 50257 tokens, 1024 positions,
  tensor names as the published GPT-2 file has them (wte, wpe, h.N.attn.c_attn ... ln_f),
  Conv1D weights stored (in × out).
smollm2-135m: LlamaForCausalLM, 30 layers, 9 query / 3 key-value heads of 64, width 576,
  MLP 1536, 49152 tokens, rope_theta 100000, tied embeddings (model.embed_tokens ... model.norm).
pythia-160m: GPTNeoXForCausalLM, 12 layers, 12 heads, width 768, MLP 3072, 50304 tokens, 2048
  positions, rotary on 16 of each head's 64 values (rotary_pct 0.25, base 10000), parallel residual,
  GELU, untied (gpt_neox.embed_in, gpt_neox.layers.N.attention.query_key_value with rows per head
  [q_h; k_h; v_h] ... gpt_neox.final_layer_norm, embed_out).
qwen3-0.6b: Qwen3ForCausalLM, 28 layers, 16 query / 8 key-value heads of 128, width 1024, MLP 3072,
  151936 tokens, 40960 positions, rope_theta 1000000, q_norm / k_norm over each head, tied embeddings.
Weights are N(0, 0.02) (GPT-2's output projections scaled by 1/sqrt(2·layers) as in its
initialisation, and likewise every output projection), norm gains 1 + N(0, 0.1) and biases
N(0, 0.02), so no layer is the identity. The configs hold the keys transformers writes for these
models (tools/references/hf_checkpoints.py, which the harness prefers, writes them all).
"""
import argparse
import json
import math
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tools/: the role packages
from common import safetensors_io  # noqa: E402

CONFIGS = {
    "gpt2-small": {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
        "n_embd": 768, "n_layer": 12, "n_head": 12, "n_inner": None, "n_positions": 1024, "n_ctx": 1024,
        "vocab_size": 50257, "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True,
        "bos_token_id": 50256, "eos_token_id": 50256,
    },
    "smollm2-135m": {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
        "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
        "num_key_value_heads": 3, "head_dim": 64, "max_position_embeddings": 8192, "vocab_size": 49152,
        "rms_norm_eps": 1e-5, "rope_theta": 100000.0, "rope_scaling": None, "attention_bias": False,
        "mlp_bias": False, "tie_word_embeddings": True, "bos_token_id": 0, "eos_token_id": 0,
    },
    "pythia-160m": {
        "architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_act": "gelu",
        "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
        "max_position_embeddings": 2048, "vocab_size": 50304, "rotary_pct": 0.25, "rotary_emb_base": 10000,
        "partial_rotary_factor": 0.25, "rope_theta": 10000, "rope_scaling": None,
        "use_parallel_residual": True, "layer_norm_eps": 1e-5, "attention_bias": True,
        "tie_word_embeddings": False, "bos_token_id": 0, "eos_token_id": 0,
    },
    "qwen3-0.6b": {
        "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_act": "silu",
        "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16,
        "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960, "max_window_layers": 28,
        "vocab_size": 151936, "rms_norm_eps": 1e-6, "rope_theta": 1000000, "rope_scaling": None,
        "attention_bias": False, "use_sliding_window": False, "sliding_window": None,
        "tie_word_embeddings": True, "bos_token_id": 151643, "eos_token_id": 151645,
    },
}


def gpt2_shapes(c):
    d, shapes = c["n_embd"], OrderedDict()
    shapes["wte.weight"] = (c["vocab_size"], d)
    shapes["wpe.weight"] = (c["n_positions"], d)
    for i in range(c["n_layer"]):
        p = f"h.{i}."
        shapes.update({p + "ln_1.weight": (d,), p + "ln_1.bias": (d,),
                       p + "attn.c_attn.weight": (d, 3 * d), p + "attn.c_attn.bias": (3 * d,),
                       p + "attn.c_proj.weight": (d, d), p + "attn.c_proj.bias": (d,),
                       p + "ln_2.weight": (d,), p + "ln_2.bias": (d,),
                       p + "mlp.c_fc.weight": (d, 4 * d), p + "mlp.c_fc.bias": (4 * d,),
                       p + "mlp.c_proj.weight": (4 * d, d), p + "mlp.c_proj.bias": (d,)})
    shapes["ln_f.weight"], shapes["ln_f.bias"] = (d,), (d,)
    return shapes


def llama_shapes(c):
    d, f, hd = c["hidden_size"], c["intermediate_size"], c["head_dim"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    shapes = OrderedDict([("model.embed_tokens.weight", (c["vocab_size"], d))])
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (d,),
                       p + "self_attn.q_proj.weight": (q, d), p + "self_attn.k_proj.weight": (kv, d),
                       p + "self_attn.v_proj.weight": (kv, d), p + "self_attn.o_proj.weight": (d, q),
                       p + "post_attention_layernorm.weight": (d,),
                       p + "mlp.gate_proj.weight": (f, d), p + "mlp.up_proj.weight": (f, d),
                       p + "mlp.down_proj.weight": (d, f)})
        if c["model_type"] == "qwen3":  # RMSNorm gains over each head of q and of k
            shapes.update({p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,)})
    shapes["model.norm.weight"] = (d,)
    if not c.get("tie_word_embeddings", False):
        shapes["lm_head.weight"] = (c["vocab_size"], d)
    return shapes


def gpt_neox_shapes(c):
    d, f = c["hidden_size"], c["intermediate_size"]
    shapes = OrderedDict([("gpt_neox.embed_in.weight", (c["vocab_size"], d))])
    for i in range(c["num_hidden_layers"]):
        p = f"gpt_neox.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (d,), p + "input_layernorm.bias": (d,),
                       p + "post_attention_layernorm.weight": (d,), p + "post_attention_layernorm.bias": (d,),
                       # (3d × d), rows per head [q_h; k_h; v_h]
                       p + "attention.query_key_value.weight": (3 * d, d),
                       p + "attention.query_key_value.bias": (3 * d,),
                       p + "attention.dense.weight": (d, d), p + "attention.dense.bias": (d,),
                       p + "mlp.dense_h_to_4h.weight": (f, d), p + "mlp.dense_h_to_4h.bias": (f,),
                       p + "mlp.dense_4h_to_h.weight": (d, f), p + "mlp.dense_4h_to_h.bias": (d,)})
    shapes["gpt_neox.final_layer_norm.weight"] = (d,)
    shapes["gpt_neox.final_layer_norm.bias"] = (d,)
    shapes["embed_out.weight"] = (c["vocab_size"], d)
    return shapes


SHAPES_OF = {"gpt2": gpt2_shapes, "llama": llama_shapes, "qwen3": llama_shapes, "gpt_neox": gpt_neox_shapes}


def write_checkpoint(shape, dtype, out, seed=0, overrides=None):
    """Writes out/config.json and out/model.safetensors; returns out as a Path. `overrides`
    replaces config entries (tests shrink the model with it)."""
    if shape not in CONFIGS:
        raise ValueError(f"--shape {shape!r}: expected one of {sorted(CONFIGS)}")
    config = dict(CONFIGS[shape], torch_dtype="bfloat16" if dtype == "BF16" else "float32", **(overrides or {}))
    if config["model_type"] == "gpt_neox":  # transformers keeps the two spellings equal
        config["partial_rotary_factor"], config["rope_theta"] = config["rotary_pct"], config["rotary_emb_base"]
    shapes = SHAPES_OF[config["model_type"]](config)
    layers = config.get("n_layer", config.get("num_hidden_layers"))
    rng = np.random.default_rng(seed)

    def make(name, dims):
        noise = rng.standard_normal(dims, dtype=np.float32)
        if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight", "layernorm.weight", "norm.weight")):
            return 1 + 0.1 * noise
        if name.endswith(("c_proj.weight", "o_proj.weight", "down_proj.weight", "attention.dense.weight",
                          "dense_4h_to_h.weight")):
            return noise * np.float32(0.02 / math.sqrt(2 * layers))
        return 0.02 * noise

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    safetensors_io.write_streamed(out / "model.safetensors", shapes, dtype, make, metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", required=True, choices=sorted(CONFIGS))
    parser.add_argument("--dtype", required=True, choices=["F32", "BF16"])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(write_checkpoint(args.shape, args.dtype, args.out, args.seed))


if __name__ == "__main__":
    main()
