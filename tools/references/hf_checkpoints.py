#!/usr/bin/python3
"""Write randomly initialised checkpoints in the exact layout Hugging Face's save_pretrained gives
GPT2LMHeadModel (model_type gpt2), LlamaForCausalLM (llama), Qwen2ForCausalLM (qwen2),
GPTNeoXForCausalLM (gpt_neox), Qwen3ForCausalLM (qwen3), Olmo2ForCausalLM (olmo2),
Phi3ForCausalLM (phi3), Gemma2ForCausalLM (gemma2), Gemma3ForCausalLM (gemma3_text) and
MistralForCausalLM (mistral): config.json, and model.safetensors or model.safetensors.index.json +
model-0000k-of-0000n shards.

Nothing here comes from a trained model: the weights are Gaussian draws, scaled so that attention
is neither uniform nor one-hot, so that a loader and a forward pass can be tested against an
independent reference (tools/references/hf_reference.py) without downloading weights.

    /usr/bin/python3 tools/references/hf_checkpoints.py --shape gpt2-small --dtype F32 --out /tmp/gpt2-small
    /usr/bin/python3 tools/references/hf_checkpoints.py --shape smollm2-135m --dtype BF16 --out /tmp/smollm2

--shape is one of SHAPES: gpt2-small, smollm2-135m, pythia-160m, qwen3-0.6b, gemma3-270m (the published
models' configurations, random weights) and mistral-small (a small Mistral-shaped one with a 1,024 window).

Every tensor is drawn from its own generator, seeded by (seed, tensor name), so a tensor's values
do not depend on the dtype's rounding of other tensors, on the shard count or on the write order.
Tensors are generated and written one at a time, so a 124 M-parameter checkpoint needs memory for
its largest tensor only.

Run with Debian's Python (/usr/bin/python3: python3-torch for bfloat16 rounding, python3-numpy).
"""

import argparse
import json
import math
import sys
import zlib
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages

from common.safetensors_io import header_bytes  # noqa: E402

ARCHITECTURES = {"gpt2": "GPT2LMHeadModel", "llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
                 "gpt_neox": "GPTNeoXForCausalLM", "qwen3": "Qwen3ForCausalLM", "olmo2": "Olmo2ForCausalLM",
                 "phi3": "Phi3ForCausalLM", "gemma2": "Gemma2ForCausalLM", "gemma3_text": "Gemma3ForCausalLM",
                 "mistral": "MistralForCausalLM"}
TORCH_DTYPE_NAMES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
TRANSFORMERS_VERSION = "4.46.3"
# The first transformers release with each newer architecture's configuration as written here
# (Olmo2: 4.47; Phi3's partial_rotary_factor: 4.49; Qwen3: 4.51; Gemma 2: 4.42, as gemma-2-2b's;
# Gemma 3 text: 4.50 with sliding_window_pattern, as gemma-3-1b's, and 4.55 with layer_types, as
# gemma-3-270m's); and the v5 layout, where rope_theta and rope_scaling live in one rope_parameters
# object and torch_dtype is "dtype".
VERSIONS = {"olmo2": "4.47.1", "phi3": "4.49.0", "qwen3": "4.51.3", "gemma2": "4.42.4", "gemma3_text": "4.50.0",
            "gemma3_text_layer_types": "4.55.0"}
TRANSFORMERS_V5 = "5.0.0"

# Bytes per element of every safetensors dtype this tool writes or reads.
ELEMENT_SIZE = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
# The safetensors serializer lays tensors out by dtype (widest kind first), then by name.
_DTYPE_ORDER = ["F64", "I64", "F32", "I32", "BF16", "F16", "I16", "U8", "I8", "BOOL"]

# Scores q·k/√d have a standard deviation of about QK_GAIN² when q and k come from unit-variance
# inputs through weights of standard deviation QK_GAIN/√fan_in: large enough that attention rows
# are far from uniform, small enough that they are not one-hot.
QK_GAIN = 1.4

SHAPES = {
    # GPT-2 small (124 M parameters).
    "gpt2-small": ("gpt2", {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12}),
    # SmolLM2-135M's configuration (Llama, 9 query heads over 3 key/value heads, tied embeddings).
    "smollm2-135m": ("llama", {"vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
                               "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3,
                               "max_position_embeddings": 8192, "rope_theta": 100000.0, "rms_norm_eps": 1e-5,
                               "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2}),
    # Pythia-160M's configuration (GPT-NeoX: parallel residual, rotary on a quarter of each head, untied).
    "pythia-160m": ("gpt_neox", {"vocab_size": 50304, "hidden_size": 768, "intermediate_size": 3072,
                                 "num_hidden_layers": 12, "num_attention_heads": 12, "max_position_embeddings": 2048,
                                 "rotary_pct": 0.25, "rotary_emb_base": 10000, "use_parallel_residual": True,
                                 "hidden_act": "gelu", "layer_norm_eps": 1e-5, "tie_word_embeddings": False,
                                 "attention_bias": True, "bos_token_id": 0, "eos_token_id": 0}),
    # Qwen3-0.6B's configuration (16 query heads of 128 over 8 key/value heads, q/k norms, tied embeddings).
    "qwen3-0.6b": ("qwen3", {"vocab_size": 151936, "hidden_size": 1024, "intermediate_size": 3072,
                             "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
                             "head_dim": 128, "max_position_embeddings": 40960, "max_window_layers": 28,
                             "rope_theta": 1000000, "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
                             "attention_bias": False, "use_sliding_window": False, "sliding_window": None,
                             "bos_token_id": 151643, "eos_token_id": 151645}),
    # gemma-3-270m's configuration (Gemma3ForCausalLM as transformers 4.55 writes it: layer_types 5
    # sliding : 1 full with a window of 512, 4 query heads of 256 over 1 key-value head, the 262,144-token
    # tied embedding, and gemma-3-270m's use_bidirectional_attention false and transformers_version).
    "gemma3-270m": ("gemma3_text", {"vocab_size": 262144, "hidden_size": 640, "intermediate_size": 2048,
                                    "num_hidden_layers": 18, "num_attention_heads": 4, "num_key_value_heads": 1,
                                    "head_dim": 256, "max_position_embeddings": 32768, "query_pre_attn_scalar": 256,
                                    "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
                                    "sliding_window": 512,
                                    "layer_types": ["full_attention" if (layer + 1) % 6 == 0 else "sliding_attention"
                                                    for layer in range(18)],
                                    "use_bidirectional_attention": False, "transformers_version": "4.55.0.dev0"}),
    # A small Mistral-shaped model (MistralForCausalLM, Mistral-7B's keys) whose sliding window of 1,024 is
    # shorter than the benchmarks' 4,096-token prompts: 16 layers, 16 query heads of 64 over 4 key-value
    # heads, MLP 3584, 32,768 tokens, untied.
    "mistral-small": ("mistral", {"vocab_size": 32768, "hidden_size": 1024, "intermediate_size": 3584,
                                  "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 4,
                                  "head_dim": 64, "max_position_embeddings": 8192, "sliding_window": 1024,
                                  "rope_theta": 10000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False}),
}


class ConfigError(ValueError):
    """A configuration this tool cannot write (unknown architecture, dtype or key, bad sizes)."""


# ---------------------------------------------------------------- configuration


def gpt2_config(user, dtype, legacy=False):
    """config.json of a GPT2LMHeadModel, as save_pretrained writes it.

    legacy=True writes what the original GPT-2 checkpoints' config.json holds: no torch_dtype,
    n_inner, scale_attn_weights, scale_attn_by_inverse_layer_idx, reorder_and_upcast_attn or
    tie_word_embeddings (a loader must take the defaults: 4·n_embd, true, false, false, true)."""
    config = {
        "activation_function": "gelu_new",
        "architectures": [ARCHITECTURES["gpt2"]],
        "attn_pdrop": 0.1,
        "bos_token_id": 50256,
        "embd_pdrop": 0.1,
        "eos_token_id": 50256,
        "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2",
        "n_ctx": None,
        "n_embd": 768,
        "n_head": 12,
        "n_inner": None,
        "n_layer": 12,
        "n_positions": 1024,
        "reorder_and_upcast_attn": False,
        "resid_pdrop": 0.1,
        "scale_attn_by_inverse_layer_idx": False,
        "scale_attn_weights": True,
        "summary_activation": None,
        "summary_first_dropout": 0.1,
        "summary_proj_to_labels": True,
        "summary_type": "cls_index",
        "summary_use_proj": True,
        "tie_word_embeddings": True,
        "torch_dtype": TORCH_DTYPE_NAMES[dtype],
        "transformers_version": TRANSFORMERS_VERSION,
        "use_cache": True,
        "vocab_size": 50257,
    }
    _update(config, user)
    if config["n_ctx"] is None:
        config["n_ctx"] = config["n_positions"]
    if legacy:
        defaults = {"n_inner": None, "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
                    "reorder_and_upcast_attn": False, "tie_word_embeddings": True}
        for key, default in defaults.items():
            if config[key] != default:
                raise ConfigError(f"legacy config.json cannot hold {key}={config[key]!r} (its default is {default!r})")
            del config[key]
        del config["torch_dtype"], config["transformers_version"]
    if config["n_embd"] % config["n_head"]:
        raise ConfigError(f"n_embd {config['n_embd']} is not a multiple of n_head {config['n_head']}")
    return config


def llama_config(user, dtype):
    """config.json of a LlamaForCausalLM, as save_pretrained writes it.

    rope_scaling (transformers 4.x): {"rope_type": "llama3" | "linear", "factor": ..., ...}, or the
    older {"type": ...} spelling. A user rope_parameters instead writes transformers v5's layout:
    rope_parameters = {"rope_type", "rope_theta", ...} (no top-level rope_theta or rope_scaling),
    head_dim always present, "dtype" for torch_dtype."""
    if "rope_parameters" in user:
        return _llama_v5_config(user, dtype)
    config = {
        "architectures": [ARCHITECTURES["llama"]],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "initializer_range": 0.02,
        "intermediate_size": 11008,
        "max_position_embeddings": 2048,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": None,
        "pretraining_tp": 1,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": TORCH_DTYPE_NAMES[dtype],
        "transformers_version": TRANSFORMERS_VERSION,
        "use_cache": True,
        "vocab_size": 32000,
    }
    _update(config, user, optional=("head_dim",))
    return _finish_rotary(config)


def qwen2_config(user, dtype):
    """config.json of a Qwen2ForCausalLM, as save_pretrained writes it."""
    config = {
        "architectures": [ARCHITECTURES["qwen2"]],
        "attention_dropout": 0.0,
        "bos_token_id": 151643,
        "eos_token_id": 151643,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "initializer_range": 0.02,
        "intermediate_size": 22016,
        "max_position_embeddings": 32768,
        "max_window_layers": 28,
        "model_type": "qwen2",
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": None,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "sliding_window": 4096,
        "tie_word_embeddings": False,
        "torch_dtype": TORCH_DTYPE_NAMES[dtype],
        "transformers_version": TRANSFORMERS_VERSION,
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 151936,
    }
    _update(config, user, optional=("head_dim",))
    return _finish_rotary(config)


def _llama_v5_config(user, dtype):
    """config.json of a LlamaForCausalLM as transformers v5 writes it."""
    user = dict(user)
    config = llama_config({k: v for k, v in user.items() if k != "rope_parameters"}, dtype)
    rope = dict(user["rope_parameters"])
    rope.setdefault("rope_theta", config.pop("rope_theta"))
    rope.setdefault("rope_type", "default")
    config.pop("rope_theta", None)
    del config["rope_scaling"]
    config["rope_parameters"] = dict(sorted(rope.items()))
    config["dtype"] = config.pop("torch_dtype")
    config["transformers_version"] = TRANSFORMERS_V5
    config["head_dim"] = head_dim_of(config)
    return config


def gpt_neox_config(user, dtype):
    """config.json of a GPTNeoXForCausalLM (Pythia), as transformers 4.46 writes it: rotary_pct and
    rotary_emb_base, and their copies partial_rotary_factor and rope_theta."""
    config = {
        "architectures": [ARCHITECTURES["gpt_neox"]],
        "attention_bias": True,
        "attention_dropout": 0.0,
        "bos_token_id": 0,
        "classifier_dropout": 0.1,
        "eos_token_id": 0,
        "hidden_act": "gelu",
        "hidden_dropout": 0.0,
        "hidden_size": 512,
        "initializer_range": 0.02,
        "intermediate_size": 2048,
        "layer_norm_eps": 1e-05,
        "max_position_embeddings": 2048,
        "model_type": "gpt_neox",
        "num_attention_heads": 8,
        "num_hidden_layers": 6,
        "rope_scaling": None,
        "rotary_emb_base": 10000,
        "rotary_pct": 0.25,
        "tie_word_embeddings": False,
        "torch_dtype": TORCH_DTYPE_NAMES[dtype],
        "transformers_version": TRANSFORMERS_VERSION,
        "use_cache": True,
        "use_parallel_residual": True,
        "vocab_size": 50304,
    }
    _update(config, user)
    config["partial_rotary_factor"] = config["rotary_pct"]
    config["rope_theta"] = config["rotary_emb_base"]
    heads = config["num_attention_heads"]
    if config["hidden_size"] % heads:
        raise ConfigError(f"hidden_size {config['hidden_size']} is not a multiple of num_attention_heads {heads}")
    if rotary_dim_of(config) % 2:
        raise ConfigError(f"rotary dimension {rotary_dim_of(config)} is odd; rotary embeddings rotate pairs")
    return dict(sorted(config.items()))


def qwen3_config(user, dtype):
    """config.json of a Qwen3ForCausalLM, as transformers 4.51 writes it (as Qwen3-0.6B's)."""
    config = {
        "architectures": [ARCHITECTURES["qwen3"]],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 151643,
        "eos_token_id": 151645,
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "initializer_range": 0.02,
        "intermediate_size": 22016,
        "max_position_embeddings": 32768,
        "max_window_layers": 28,
        "model_type": "qwen3",
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 32,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": TORCH_DTYPE_NAMES[dtype],
        "transformers_version": VERSIONS["qwen3"],
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": 151936,
    }
    _update(config, user)
    return _finish_rotary(config)


def olmo2_config(user, dtype):
    """config.json of an Olmo2ForCausalLM, as transformers 4.47 writes it (as OLMo-2-1124-7B's)."""
    config = {
        "architectures": [ARCHITECTURES["olmo2"]],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "eos_token_id": 100257,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "initializer_range": 0.02,
        "intermediate_size": 11008,
        "max_position_embeddings": 4096,
        "model_type": "olmo2",
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": None,
        "pad_token_id": 100277,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 500000,
        "tie_word_embeddings": False,
        "torch_dtype": TORCH_DTYPE_NAMES[dtype],
        "transformers_version": VERSIONS["olmo2"],
        "use_cache": True,
        "vocab_size": 100352,
    }
    _update(config, user)
    return _finish_rotary(config)


def phi3_config(user, dtype):
    """config.json of a Phi3ForCausalLM, as transformers 4.49 writes it (Phi-3-mini's keys and
    partial_rotary_factor, which Phi-4-mini sets to 0.75)."""
    config = {
        "architectures": [ARCHITECTURES["phi3"]],
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "embd_pdrop": 0.0,
        "eos_token_id": 32000,
        "hidden_act": "silu",
        "hidden_size": 3072,
        "initializer_range": 0.02,
        "intermediate_size": 8192,
        "max_position_embeddings": 4096,
        "model_type": "phi3",
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": None,
        "original_max_position_embeddings": 4096,
        "pad_token_id": 32000,
        "partial_rotary_factor": 1.0,
        "resid_pdrop": 0.0,
        "rms_norm_eps": 1e-05,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": TORCH_DTYPE_NAMES[dtype],
        "transformers_version": VERSIONS["phi3"],
        "use_cache": True,
        "vocab_size": 32064,
    }
    _update(config, user)
    config = _finish_rotary(config)
    if rotary_dim_of(config) % 2:
        raise ConfigError(f"rotary dimension {rotary_dim_of(config)} is odd; rotary embeddings rotate pairs")
    return config


def gemma2_config(user, dtype):
    """config.json of a Gemma2ForCausalLM, as transformers 4.42 writes it (gemma-2-2b's keys: both
    hidden_act and hidden_activation, which Gemma2MLP reads; cache_implementation "hybrid")."""
    config = {
        "architectures": [ARCHITECTURES["gemma2"]],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attn_logit_softcapping": 50.0,
        "bos_token_id": 2,
        "cache_implementation": "hybrid",
        "eos_token_id": 1,
        "final_logit_softcapping": 30.0,
        "head_dim": 256,
        "hidden_act": "gelu_pytorch_tanh",
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 2304,
        "initializer_range": 0.02,
        "intermediate_size": 9216,
        "max_position_embeddings": 8192,
        "model_type": "gemma2",
        "num_attention_heads": 8,
        "num_hidden_layers": 26,
        "num_key_value_heads": 4,
        "pad_token_id": 0,
        "query_pre_attn_scalar": 256,
        "rms_norm_eps": 1e-06,
        "rope_theta": 10000.0,
        "sliding_window": 4096,
        "torch_dtype": TORCH_DTYPE_NAMES[dtype],
        "transformers_version": VERSIONS["gemma2"],
        "use_cache": True,
        "vocab_size": 256000,
    }
    _update(config, user)
    return _finish_rotary(config)


def gemma3_text_config(user, dtype):
    """config.json of a Gemma3ForCausalLM (model_type gemma3_text). Without layer_types: as
    transformers 4.50 writes it (gemma-3-1b's keys: sliding_window_pattern, cache_implementation).
    With layer_types: as transformers 4.55 writes it (gemma-3-270m's keys: layer_types and the
    private _sliding_window_pattern instead of sliding_window_pattern, no cache_implementation)."""
    config = {
        "architectures": [ARCHITECTURES["gemma3_text"]],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attn_logit_softcapping": None,
        "bos_token_id": 2,
        "cache_implementation": "hybrid",
        "eos_token_id": 1,
        "final_logit_softcapping": None,
        "head_dim": 256,
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 1152,
        "initializer_range": 0.02,
        "intermediate_size": 6912,
        "max_position_embeddings": 32768,
        "model_type": "gemma3_text",
        "num_attention_heads": 4,
        "num_hidden_layers": 26,
        "num_key_value_heads": 1,
        "pad_token_id": 0,
        "query_pre_attn_scalar": 256,
        "rms_norm_eps": 1e-06,
        "rope_local_base_freq": 10000.0,
        "rope_scaling": None,
        "rope_theta": 1000000.0,
        "sliding_window": 512,
        "sliding_window_pattern": 6,
        "torch_dtype": TORCH_DTYPE_NAMES[dtype],
        "transformers_version": VERSIONS["gemma3_text"],
        "use_cache": True,
        "vocab_size": 262144,
    }
    if "layer_types" in user:
        del config["cache_implementation"], config["sliding_window_pattern"]
        config.update(_sliding_window_pattern=6, layer_types=None,
                      transformers_version=VERSIONS["gemma3_text_layer_types"])
    # use_bidirectional_attention (false) is in gemma-3-270m's config.json, written by a 4.55 pre-release;
    # the tiny test checkpoints leave it out.
    _update(config, user, optional=("use_bidirectional_attention",))
    if "layer_types" in config:
        types = config["layer_types"]
        if not (isinstance(types, list) and len(types) == config["num_hidden_layers"]
                and set(types) <= {"sliding_attention", "full_attention"}):
            raise ConfigError(f"layer_types must list sliding_attention / full_attention per layer, not {types!r}")
    return _finish_rotary(config)


def mistral_config(user, dtype):
    """config.json of a MistralForCausalLM, as transformers 4.46 writes it (Mistral-7B-v0.1's keys,
    and head_dim, which 4.46's MistralConfig always sets)."""
    config = {
        "architectures": [ARCHITECTURES["mistral"]],
        "attention_dropout": 0.0,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "initializer_range": 0.02,
        "intermediate_size": 14336,
        "max_position_embeddings": 32768,
        "model_type": "mistral",
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "sliding_window": 4096,
        "tie_word_embeddings": False,
        "torch_dtype": TORCH_DTYPE_NAMES[dtype],
        "transformers_version": TRANSFORMERS_VERSION,
        "use_cache": True,
        "vocab_size": 32000,
    }
    _update(config, user)
    return _finish_rotary(config)


def _update(config, user, optional=()):
    for key, value in user.items():
        if key not in config and key not in optional:
            raise ConfigError(f"unknown {config['model_type']} config key {key!r}")
        config[key] = value


def _finish_rotary(config):
    if config["num_key_value_heads"] is None:
        config["num_key_value_heads"] = config["num_attention_heads"]
    heads, kv_heads = config["num_attention_heads"], config["num_key_value_heads"]
    if heads % kv_heads:
        raise ConfigError(f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
    if "head_dim" not in config and config["hidden_size"] % heads:
        raise ConfigError(f"hidden_size {config['hidden_size']} is not a multiple of num_attention_heads {heads}")
    if head_dim_of(config) % 2:
        raise ConfigError(f"head dimension {head_dim_of(config)} is odd; rotary embeddings rotate pairs")
    return config


def head_dim_of(config):
    """The per-head width of a rotary model: head_dim when the config gives it, else hidden / heads."""
    if config.get("head_dim") is not None:
        return config["head_dim"]
    return config["hidden_size"] // config["num_attention_heads"]


def rotary_dim_of(config):
    """How many leading dimensions of each head rotate: all of them, or int(d · rotary_pct) for
    GPT-NeoX, int(d · partial_rotary_factor) for Phi-3 (as Hugging Face truncates)."""
    if config["model_type"] == "gpt_neox":
        return int(config["hidden_size"] // config["num_attention_heads"] * config["rotary_pct"])
    return int(head_dim_of(config) * config.get("partial_rotary_factor", 1.0))


CONFIGS = {"llama": llama_config, "qwen2": qwen2_config, "gpt_neox": gpt_neox_config, "qwen3": qwen3_config,
           "olmo2": olmo2_config, "phi3": phi3_config, "gemma2": gemma2_config,
           "gemma3_text": gemma3_text_config, "mistral": mistral_config}


def make_config(architecture, user, dtype, legacy=False):
    if architecture not in ARCHITECTURES:
        raise ConfigError(f"unknown architecture {architecture!r}; expected one of {sorted(ARCHITECTURES)}")
    if dtype not in TORCH_DTYPE_NAMES:
        raise ConfigError(f"unknown dtype {dtype!r}; expected one of {sorted(TORCH_DTYPE_NAMES)}")
    if legacy and architecture != "gpt2":
        raise ConfigError("legacy config.json exists for gpt2 only")
    if architecture == "gpt2":
        return gpt2_config(user, dtype, legacy)
    return CONFIGS[architecture](user, dtype)


# ---------------------------------------------------------------- tensor plan


class Spec:
    """One tensor of the checkpoint: its name, shape, dtype and how to draw it.

    kind: "normal" (std · N), "norm" (1 + 0.1·N, times std when given), "norm_offset" (Gemma's
    norm weights, which multiply by 1 + weight: std · (1 + 0.1·N) - 1, std 1 unless given, so that
    1 + weight is what "norm" draws), "bias" (0.1·N), "tril"
    (a causal-mask buffer, ones on and below the diagonal) or "constant" (a buffer holding value).
    column_std and row_std scale column or row blocks separately: a list of (count, std) in order."""

    def __init__(self, name, shape, dtype, kind, std=None, column_std=None, value=None, row_std=None):
        self.name, self.shape, self.dtype, self.kind = name, tuple(shape), dtype, kind
        self.std, self.column_std, self.value, self.row_std = std, column_std, value, row_std

    @property
    def nbytes(self):
        return math.prod(self.shape) * ELEMENT_SIZE[self.dtype]


def tensor_plan(config, dtype, prefix=None, mask_buffers=False):
    """The checkpoint's tensors in state_dict order (the order save_pretrained shards them in)."""
    if config["model_type"] == "gpt2":
        return _gpt2_plan(config, dtype, "transformer." if prefix is None else prefix, mask_buffers)
    if config["model_type"] == "gpt_neox":
        if prefix not in (None, "gpt_neox."):
            raise ConfigError(f"gpt_neox tensors are always under 'gpt_neox.', not {prefix!r}")
        return _gpt_neox_plan(config, dtype, mask_buffers)
    if mask_buffers:
        raise ConfigError("mask buffers exist in GPT-2 and GPT-NeoX checkpoints only")
    if prefix not in (None, "model."):
        raise ConfigError(f"{config['model_type']} tensors are always under 'model.', not {prefix!r}")
    if config["model_type"] in ("gemma2", "gemma3_text"):
        return _gemma_plan(config, dtype)
    return _rotary_plan(config, dtype)


def _gpt2_plan(config, dtype, prefix, mask_buffers):
    if prefix not in ("", "transformer."):
        raise ConfigError(f"GPT-2 tensor prefix must be '' or 'transformer.', not {prefix!r}")
    width, heads, vocab = config["n_embd"], config["n_head"], config["vocab_size"]
    positions = config["n_positions"]
    inner = config.get("n_inner") or 4 * width
    head_dim = width // heads
    plan = [Spec(prefix + "wte.weight", (vocab, width), dtype, "normal", 0.5),
            Spec(prefix + "wpe.weight", (positions, width), dtype, "normal", 0.5)]
    for layer in range(config["n_layer"]):
        qk_gain = QK_GAIN
        if not config.get("scale_attn_weights", True):
            qk_gain /= head_dim ** 0.25  # the scores skip the 1/√d, so q and k share it
        if config.get("scale_attn_by_inverse_layer_idx", False):
            qk_gain *= math.sqrt(layer + 1)  # the scores are divided by layer + 1
        h = f"{prefix}h.{layer}."
        plan += [Spec(h + "ln_1.weight", (width,), dtype, "norm"), Spec(h + "ln_1.bias", (width,), dtype, "bias")]
        if mask_buffers:
            # Older GPT-2 checkpoints saved the attention's causal mask and masked value as buffers.
            plan += [Spec(h + "attn.bias", (1, 1, positions, positions), dtype, "tril"),
                     Spec(h + "attn.masked_bias", (), dtype, "constant", value=-1e4)]
        qk_std = qk_gain / math.sqrt(width)
        plan += [
            # Conv1D weights are (in, out): columns [q | k | v].
            Spec(h + "attn.c_attn.weight", (width, 3 * width), dtype, "normal",
                 column_std=[(2 * width, qk_std), (width, 1 / math.sqrt(width))]),
            Spec(h + "attn.c_attn.bias", (3 * width,), dtype, "bias"),
            Spec(h + "attn.c_proj.weight", (width, width), dtype, "normal", 1 / math.sqrt(width)),
            Spec(h + "attn.c_proj.bias", (width,), dtype, "bias"),
            Spec(h + "ln_2.weight", (width,), dtype, "norm"),
            Spec(h + "ln_2.bias", (width,), dtype, "bias"),
            Spec(h + "mlp.c_fc.weight", (width, inner), dtype, "normal", 1 / math.sqrt(width)),
            Spec(h + "mlp.c_fc.bias", (inner,), dtype, "bias"),
            Spec(h + "mlp.c_proj.weight", (inner, width), dtype, "normal", 1 / math.sqrt(inner)),
            Spec(h + "mlp.c_proj.bias", (width,), dtype, "bias"),
        ]
    plan += [Spec(prefix + "ln_f.weight", (width,), dtype, "norm"), Spec(prefix + "ln_f.bias", (width,), dtype, "bias")]
    if not config.get("tie_word_embeddings", True):
        plan.append(Spec("lm_head.weight", (vocab, width), dtype, "normal", 0.5))
    return plan


def _gpt_neox_plan(config, dtype, mask_buffers):
    """GPTNeoXForCausalLM's tensors. mask_buffers: also the buffers checkpoints saved by older
    transformers hold per layer: attention.bias (BOOL tril, 1 × 1 × P × P), attention.masked_bias
    (F32 scalar -1e9) and attention.rotary_emb.inv_freq (F32, rotary_dim / 2)."""
    width, vocab, inner = config["hidden_size"], config["vocab_size"], config["intermediate_size"]
    heads, positions = config["num_attention_heads"], config["max_position_embeddings"]
    head_dim, rotary = width // heads, rotary_dim_of(config)
    qk_std, v_std = QK_GAIN / math.sqrt(width), 1 / math.sqrt(width)
    plan = [Spec("gpt_neox.embed_in.weight", (vocab, width), dtype, "normal", 0.5)]
    for layer in range(config["num_hidden_layers"]):
        h = f"gpt_neox.layers.{layer}."
        plan += [Spec(h + "input_layernorm.weight", (width,), dtype, "norm"),
                 Spec(h + "input_layernorm.bias", (width,), dtype, "bias"),
                 Spec(h + "post_attention_layernorm.weight", (width,), dtype, "norm"),
                 Spec(h + "post_attention_layernorm.bias", (width,), dtype, "bias")]
        if mask_buffers:
            inv_freq = 1.0 / config["rotary_emb_base"] ** (np.arange(0, rotary, 2, dtype=np.float64) / rotary)
            plan += [Spec(h + "attention.bias", (1, 1, positions, positions), "BOOL", "tril"),
                     Spec(h + "attention.masked_bias", (), "F32", "constant", value=-1e9),
                     Spec(h + "attention.rotary_emb.inv_freq", (rotary // 2,), "F32", "constant", value=inv_freq)]
        plan += [
            # Linear (out × in), rows interleaved per head: [q_h; k_h; v_h] for h = 0, 1, ...
            Spec(h + "attention.query_key_value.weight", (3 * width, width), dtype, "normal",
                 row_std=[(head_dim, qk_std), (head_dim, qk_std), (head_dim, v_std)] * heads),
            Spec(h + "attention.query_key_value.bias", (3 * width,), dtype, "bias"),
            Spec(h + "attention.dense.weight", (width, width), dtype, "normal", 1 / math.sqrt(width)),
            Spec(h + "attention.dense.bias", (width,), dtype, "bias"),
            Spec(h + "mlp.dense_h_to_4h.weight", (inner, width), dtype, "normal", 1 / math.sqrt(width)),
            Spec(h + "mlp.dense_h_to_4h.bias", (inner,), dtype, "bias"),
            Spec(h + "mlp.dense_4h_to_h.weight", (width, inner), dtype, "normal", 1 / math.sqrt(inner)),
            Spec(h + "mlp.dense_4h_to_h.bias", (width,), dtype, "bias"),
        ]
    plan += [Spec("gpt_neox.final_layer_norm.weight", (width,), dtype, "norm"),
             Spec("gpt_neox.final_layer_norm.bias", (width,), dtype, "bias")]
    if config.get("tie_word_embeddings", False):
        raise ConfigError("GPTNeoXForCausalLM checkpoints are untied (embed_out.weight)")
    plan.append(Spec("embed_out.weight", (vocab, width), dtype, "normal", 0.5))
    return plan


# q and k normalised to unit RMS give scores q·k/√d of standard deviation about the product of
# the norm weights: QK_NORM_GAIN² ≈ QK_GAIN², as the models without q/k norms have.
QK_NORM_GAIN = QK_GAIN


def _rotary_plan(config, dtype):
    width, vocab, inner = config["hidden_size"], config["vocab_size"], config["intermediate_size"]
    heads, kv_heads, head_dim = config["num_attention_heads"], config["num_key_value_heads"], head_dim_of(config)
    kind = config["model_type"]
    qwen2 = kind == "qwen2"
    qkv_bias = qwen2 or (kind == "llama" and config.get("attention_bias", False))
    o_bias = kind == "llama" and config.get("attention_bias", False)
    mlp_bias = kind == "llama" and config.get("mlp_bias", False)
    qk_norm = kind in ("qwen3", "olmo2")
    # With q/k norms the scale of q and k comes from the norm weights, not the projections.
    qk_std = (1 if qk_norm else QK_GAIN) / math.sqrt(width)
    v_std = 1 / math.sqrt(width)
    plan = [Spec("model.embed_tokens.weight", (vocab, width), dtype, "normal", 0.5)]
    for layer in range(config["num_hidden_layers"]):
        a = f"model.layers.{layer}.self_attn."
        m = f"model.layers.{layer}.mlp."
        # PyTorch Linear weights are (out, in).
        if kind == "phi3":
            # One (H·d + 2·Hkv·d) × C projection: q rows, then k rows, then v rows.
            plan.append(Spec(a + "qkv_proj.weight", ((heads + 2 * kv_heads) * head_dim, width), dtype, "normal",
                             row_std=[(heads * head_dim, qk_std), (kv_heads * head_dim, qk_std),
                                      (kv_heads * head_dim, v_std)]))
        else:
            for proj, rows, std in (("q_proj", heads * head_dim, qk_std), ("k_proj", kv_heads * head_dim, qk_std),
                                    ("v_proj", kv_heads * head_dim, v_std)):
                plan.append(Spec(a + proj + ".weight", (rows, width), dtype, "normal", std))
                if qkv_bias:
                    plan.append(Spec(a + proj + ".bias", (rows,), dtype, "bias"))
        plan.append(Spec(a + "o_proj.weight", (width, heads * head_dim), dtype, "normal",
                         1 / math.sqrt(heads * head_dim)))
        if o_bias:
            plan.append(Spec(a + "o_proj.bias", (width,), dtype, "bias"))
        if kind == "qwen3":  # RMSNorm over each head's d values
            plan += [Spec(a + "q_norm.weight", (head_dim,), dtype, "norm", QK_NORM_GAIN),
                     Spec(a + "k_norm.weight", (head_dim,), dtype, "norm", QK_NORM_GAIN)]
        if kind == "olmo2":  # RMSNorm over the whole projection
            plan += [Spec(a + "q_norm.weight", (heads * head_dim,), dtype, "norm", QK_NORM_GAIN),
                     Spec(a + "k_norm.weight", (kv_heads * head_dim,), dtype, "norm", QK_NORM_GAIN)]
        if kind == "phi3":
            # One 2M × C projection: gate rows, then up rows.
            plan.append(Spec(m + "gate_up_proj.weight", (2 * inner, width), dtype, "normal", 1 / math.sqrt(width)))
            plan.append(Spec(m + "down_proj.weight", (width, inner), dtype, "normal", 1 / math.sqrt(inner)))
        else:
            for proj, shape, std in (("gate_proj", (inner, width), 1 / math.sqrt(width)),
                                     ("up_proj", (inner, width), 1 / math.sqrt(width)),
                                     ("down_proj", (width, inner), 1 / math.sqrt(inner))):
                plan.append(Spec(m + proj + ".weight", shape, dtype, "normal", std))
                if mlp_bias:
                    plan.append(Spec(m + proj + ".bias", (shape[0],), dtype, "bias"))
        norms = (["post_attention_layernorm", "post_feedforward_layernorm"] if kind == "olmo2"
                 else ["input_layernorm", "post_attention_layernorm"])
        plan += [Spec(f"model.layers.{layer}.{norm}.weight", (width,), dtype, "norm") for norm in norms]
    plan.append(Spec("model.norm.weight", (width,), dtype, "norm"))
    if not config.get("tie_word_embeddings", False):
        plan.append(Spec("lm_head.weight", (vocab, width), dtype, "normal", 0.5))
    return plan


def _gemma_plan(config, dtype):
    """Gemma2ForCausalLM's and Gemma3ForCausalLM's tensors: no biases, four norms per layer (their
    weights w act as 1 + w), Gemma 3's per-head q_norm / k_norm, tied embeddings (no lm_head).

    Scores are q·k · query_pre_attn_scalar^-1/2, not /√d: the q and k gains are multiplied by
    (query_pre_attn_scalar / d)^(1/4) so that they spread as much as the other models' do."""
    width, vocab, inner = config["hidden_size"], config["vocab_size"], config["intermediate_size"]
    heads, kv_heads, head_dim = config["num_attention_heads"], config["num_key_value_heads"], head_dim_of(config)
    qk_norm = config["model_type"] == "gemma3_text"
    gain = (config["query_pre_attn_scalar"] / head_dim) ** 0.25
    qk_std = (1 if qk_norm else QK_GAIN * gain) / math.sqrt(width)
    if not config.get("tie_word_embeddings", True):
        raise ConfigError("the Gemma checkpoints written here are tied (no lm_head.weight)")
    plan = [Spec("model.embed_tokens.weight", (vocab, width), dtype, "normal", 0.5)]
    for layer in range(config["num_hidden_layers"]):
        a, m, l_ = f"model.layers.{layer}.self_attn.", f"model.layers.{layer}.mlp.", f"model.layers.{layer}."
        plan += [Spec(a + "q_proj.weight", (heads * head_dim, width), dtype, "normal", qk_std),
                 Spec(a + "k_proj.weight", (kv_heads * head_dim, width), dtype, "normal", qk_std),
                 Spec(a + "v_proj.weight", (kv_heads * head_dim, width), dtype, "normal", 1 / math.sqrt(width)),
                 Spec(a + "o_proj.weight", (width, heads * head_dim), dtype, "normal",
                      1 / math.sqrt(heads * head_dim))]
        if qk_norm:
            plan += [Spec(a + "q_norm.weight", (head_dim,), dtype, "norm_offset", QK_NORM_GAIN * gain),
                     Spec(a + "k_norm.weight", (head_dim,), dtype, "norm_offset", QK_NORM_GAIN * gain)]
        plan += [Spec(m + "gate_proj.weight", (inner, width), dtype, "normal", 1 / math.sqrt(width)),
                 Spec(m + "up_proj.weight", (inner, width), dtype, "normal", 1 / math.sqrt(width)),
                 Spec(m + "down_proj.weight", (width, inner), dtype, "normal", 1 / math.sqrt(inner))]
        plan += [Spec(l_ + norm + ".weight", (width,), dtype, "norm_offset")
                 for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                              "post_feedforward_layernorm")]
    plan.append(Spec("model.norm.weight", (width,), dtype, "norm_offset"))
    return plan


# ---------------------------------------------------------------- values


def draw(spec, seed):
    """The tensor's values as a float32 array, before rounding to the checkpoint's dtype."""
    if spec.kind == "tril":
        positions = spec.shape[-1]
        return np.tril(np.ones((positions, positions), dtype=np.float32)).reshape(spec.shape)
    if spec.kind == "constant":
        return np.array(spec.value, dtype=np.float32)
    rng = np.random.default_rng([seed, zlib.crc32(spec.name.encode())])
    values = rng.standard_normal(spec.shape, dtype=np.float32)
    if spec.kind == "norm":
        values = 1 + np.float32(0.1) * values
        if spec.std is not None:
            values *= np.float32(spec.std)
    elif spec.kind == "norm_offset":
        values = np.float32(1 if spec.std is None else spec.std) * (1 + np.float32(0.1) * values) - 1
    elif spec.kind == "bias":
        values *= np.float32(0.1)
    elif spec.column_std is not None:
        start = 0
        for columns, std in spec.column_std:
            values[..., start:start + columns] *= np.float32(std)
            start += columns
    elif spec.row_std is not None:
        start = 0
        for rows, std in spec.row_std:
            values[start:start + rows] *= np.float32(std)
            start += rows
        assert start == spec.shape[0], spec.name
    else:
        values *= np.float32(spec.std)
    return values


def encode(values, dtype):
    """values rounded (to nearest, ties to even) to dtype, as a little-endian array to write.

    F32 input is not copied: a 124 M-parameter checkpoint holds one copy of its largest tensor."""
    if dtype in ("F32", "F64", "F16"):
        return np.ascontiguousarray(values, dtype={"F32": "<f4", "F64": "<f8", "F16": "<f2"}[dtype])
    if dtype == "I64":
        return np.ascontiguousarray(values, dtype="<i8")
    if dtype == "BOOL":
        return np.ascontiguousarray(np.asarray(values) != 0, dtype=np.uint8)
    if dtype == "BF16":
        rounded = torch.from_numpy(np.ascontiguousarray(values, dtype=np.float32)).to(torch.bfloat16)
        return rounded.view(torch.int16).numpy().astype("<i2", copy=False)
    raise ConfigError(f"cannot encode dtype {dtype!r}")


# ---------------------------------------------------------------- files


def safetensors_header(specs, metadata=None):
    """The header bytes (length prefix included) and the specs in data order.

    The JSON is padded with spaces so the data starts 8-byte aligned, as the safetensors
    serializer does."""
    ordered = sorted(specs, key=lambda s: (_DTYPE_ORDER.index(s.dtype), s.name))
    header = {"__metadata__": metadata if metadata is not None else {"format": "pt"}}
    offset = 0
    for spec in ordered:
        header[spec.name] = {"dtype": spec.dtype, "shape": list(spec.shape),
                             "data_offsets": [offset, offset + spec.nbytes]}
        offset += spec.nbytes
    return header_bytes(header), ordered


def write_safetensors(path, specs, values_of):
    """Write specs to path, asking values_of(spec) for each tensor (an encoded array) in data order."""
    header, ordered = safetensors_header(specs)
    with open(path, "wb") as out:
        out.write(header)
        for spec in ordered:
            data = values_of(spec)
            if data.nbytes != spec.nbytes or not data.flags["C_CONTIGUOUS"]:
                raise ConfigError(f"{spec.name}: {data.nbytes} bytes for {spec.nbytes}")
            out.write(memoryview(data).cast("B"))


def shard_plan(plan, shards):
    """Split the plan, in order, into `shards` consecutive non-empty groups of about equal bytes:
    a new shard starts once the bytes so far reach its share (as save_pretrained starts one when
    the next tensor would pass max_shard_size), or when every tensor left must open one."""
    if shards < 1 or shards > len(plan):
        raise ConfigError(f"shards must be between 1 and the tensor count {len(plan)}, not {shards}")
    total = sum(spec.nbytes for spec in plan)
    groups, done = [[]], 0
    for index, spec in enumerate(plan):
        to_open = shards - len(groups)
        if groups[-1] and to_open and (done >= len(groups) * total / shards or to_open >= len(plan) - index):
            groups.append([])
        groups[-1].append(spec)
        done += spec.nbytes
    return groups


def write_checkpoint(directory, architecture, config, dtype="F32", seed=0, shards=1, prefix=None,
                     mask_buffers=False, tied=None, legacy_config=False):
    """Write a Hugging Face checkpoint to directory and return its full config.

    architecture: a key of ARCHITECTURES (gpt2, llama, qwen2, gpt_neox, qwen3, olmo2, phi3). config: Hugging Face config keys overriding the
    architecture's defaults (n_embd, n_head, ... or hidden_size, num_attention_heads, ...).
    dtype: "F32", "F16" or "BF16" (the stored values are rounded to it). shards: 1 writes
    model.safetensors; more write model.safetensors.index.json and model-0000k-of-0000n.safetensors.
    prefix: GPT-2 only, "transformer." (the default, as GPT2LMHeadModel saves) or "" (as the
    original GPT-2 checkpoints, saved from GPT2Model). mask_buffers: GPT-2 and GPT-NeoX only, also write
    each layer's saved buffers: GPT-2's attn.bias (tril ones, 1 × 1 × n_positions × n_positions) and
    attn.masked_bias (-1e4); GPT-NeoX's attention.bias, masked_bias and rotary_emb.inv_freq.
    tied: overrides config's tie_word_embeddings; a tied checkpoint has no lm_head.weight.
    legacy_config: GPT-2 only, omit the keys old config.json files lack (see gpt2_config)."""
    config = dict(config)
    if tied is not None:
        config["tie_word_embeddings"] = bool(tied)
    if legacy_config and config.get("tie_word_embeddings", True) is False:
        raise ConfigError("legacy config.json cannot describe an untied GPT-2")
    full = make_config(architecture, config, dtype, legacy_config)
    plan_config = dict(full)
    plan_config.setdefault("tie_word_embeddings", True)
    if "rope_parameters" in plan_config:
        plan_config["rope_theta"] = plan_config["rope_parameters"]["rope_theta"]
    plan = tensor_plan(plan_config, dtype, prefix, mask_buffers)

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for stale in list(directory.glob("model*.safetensors")) + list(directory.glob("model.safetensors.index.json")):
        stale.unlink()
    with open(directory / "config.json", "w") as out:
        out.write(json.dumps(full, indent=2, sort_keys=True) + "\n")

    def values_of(spec):
        return encode(draw(spec, seed), spec.dtype)

    if shards == 1:
        write_safetensors(directory / "model.safetensors", plan, values_of)
        return full
    weight_map = {}
    groups = shard_plan(plan, shards)
    for index, group in enumerate(groups, start=1):
        name = f"model-{index:05d}-of-{len(groups):05d}.safetensors"
        write_safetensors(directory / name, group, values_of)
        weight_map.update({spec.name: name for spec in group})
    index = {"metadata": {"total_size": sum(spec.nbytes for spec in plan)}, "weight_map": weight_map}
    with open(directory / "model.safetensors.index.json", "w") as out:
        out.write(json.dumps(index, indent=2, sort_keys=True) + "\n")
    return full


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", required=True, choices=sorted(SHAPES))
    parser.add_argument("--dtype", default="F32", choices=sorted(TORCH_DTYPE_NAMES))
    parser.add_argument("--out", required=True, help="directory to write (created; model files replaced)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shards", type=int, default=1)
    args = parser.parse_args(argv)
    architecture, config = SHAPES[args.shape]
    full = write_checkpoint(args.out, architecture, config, args.dtype, args.seed, args.shards)
    size = sum(f.stat().st_size for f in Path(args.out).glob("*.safetensors"))
    print(f"wrote {args.out}: {full['architectures'][0]}, {args.dtype}, {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
