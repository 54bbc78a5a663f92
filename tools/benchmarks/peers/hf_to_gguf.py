#!/usr/bin/env python3
"""A Hugging Face checkpoint directory -> GGUF, with the gguf writer of llama.cpp's own tree.

  /usr/bin/python3 tools/benchmarks/peers/hf_to_gguf.py HF_DIR OUT.gguf --type F32|F16|BF16|Q8_0|Q4_0|Q4_1|Q5_0|Q5_1 --gguf-py LLAMA_CPP/gguf-py

Follows llama.cpp's convert_hf_to_gguf.py (conversion/{base,gpt2,llama,gptneox,qwen,olmo,phi,gemma}.py of
the pinned tree):
  * GPT2LMHeadModel -> arch "gpt2": Conv1D weights (c_attn, c_proj, c_fc) transposed to (out × in);
    feed_forward_length n_inner or 4·n_embd; the causal-mask buffers dropped.
  * LlamaForCausalLM -> arch "llama": q_proj rows permuted per query head and k_proj rows per
    key-value head (LlamaModel.permute), because ggml's "normal" rope rotates adjacent pairs
    (x[2i], x[2i+1]) where Hugging Face rotates halves (x[i], x[i + d/2]). rope scaling "linear"
    -> rope.scaling.type linear + rope.scaling.factor; "llama3" -> the rope_freqs.weight tensor of
    per-pair divisors (LlamaModel.generate_extra_tensors); read from rope_scaling ("rope_type" or
    "type") or v5's rope_parameters, whose rope_theta is the freq_base.
  * GPTNeoXForCausalLM -> arch "gptneox": query_key_value rows regrouped from per-head
    [q_h; k_h; v_h] to [Q; K; V] (GPTNeoXModel.modify_tensors), rope.dimension_count
    int(rotary_pct · d), use_parallel_residual; the saved attention.bias / masked_bias /
    rotary_emb.inv_freq buffers dropped. Unlike the pinned converter this also writes
    rope.freq_base from rotary_emb_base: the converter omits it, so llama.cpp takes 10000.
  * Qwen2ForCausalLM, Qwen3ForCausalLM, Olmo2ForCausalLM -> "qwen2", "qwen3", "olmo2": names only
    (their llama.cpp graphs rotate halves, "neox" rope); key_length / value_length when head_dim is given.
  * Phi3ForCausalLM -> "phi3": qkv_proj and gate_up_proj stay fused (attn_qkv, ffn_up of 2M
    rows); rope.dimension_count int(partial_rotary_factor · C) / H, rope.scaling.original_context_length,
    sliding_window 0. longrope (rope_scaling non-null) is refused.
  * Gemma2ForCausalLM -> "gemma2", Gemma3ForCausalLM -> "gemma3" (conversion/gemma.py): every
    "*norm.weight" (the four layer norms, model.norm, Gemma 3's q_norm / k_norm) stored with 1 added,
    because llama.cpp multiplies by the stored weight where Hugging Face multiplies by 1 + weight;
    lm_head.weight dropped (tied); key_length / value_length = head_dim; gemma2:
    attn_logit_softcapping, final_logit_softcapping, sliding_window (llama.cpp's period-2 default
    makes the even layers slide, as Hugging Face's); gemma3: rope.freq_base = rope_theta,
    rope.freq_base_swa = rope_local_base_freq (conversion/base.py), final_logit_softcapping when
    set, sliding_window. Not in the pinned converter: gemma2's rope.freq_base (it writes none, so
    llama.cpp takes 10000), and gemma3's attention.sliding_window_pattern, the period P with layer i
    sliding iff i % P < P - 1: sliding_window_pattern, or the period layer_types follows (refused
    when none does); the converter writes none and llama.cpp assumes 6. query_pre_attn_scalar is
    not written: llama.cpp's gemma2 / gemma3 graphs scale q by 1/√head_dim (by
    1/√(hidden_size / heads) for 46- or 62-layer models), whatever query_pre_attn_scalar says.
  * MistralForCausalLM -> "llama", as the pinned converter maps it (conversion/llama.py): sliding_window
    is not written and llama.cpp's llama graph has none, so every layer attends to the whole causal
    prefix. mistral_swa=True (--mistral-swa) writes instead arch "granite_swa", whose graph is
    llama's (the same permuted q / k rows) with a sliding window: sliding_window, a pattern of true
    for every layer, logit_scale 1, and the attention sinks it requires set to -1e30 (exp(-1e30 -
    max) = 0 in ggml's softmax: no sink).
  * tensor types: 1-D tensors, *_norm.weight and the position table stay F32, every other weight
    takes --type (as the converter's MOSTLY_* file types do); with Q8_0, Q4_0, Q4_1, Q5_0 or Q5_1
    (gguf-py's quantizers, as llama-quantize's files of those types) a matrix whose rows are not
    whole blocks of 32 stays F32.
  * tokenizer: the checkpoints are random and have none, so the vocabulary is llama.cpp's
    "none" model with vocab_size dummy tokens (the converter's _set_vocab_none); callers pass
    token ids, never text.
Needs numpy (and PyYAML, which gguf-py imports) only.
"""
import argparse
import importlib
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tools/: the role packages
from common import safetensors_io  # noqa: E402

CONV1D_SUFFIXES = (".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight")
TYPES = ("F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1")


def rotary_pairs_permutation(weight, heads):
    """(heads·d × in) rows of Hugging Face's half-split rotary layout -> ggml's adjacent-pair
    layout: within each head, row r < d/2 goes to 2r and row d/2 + r to 2r + 1."""
    rows = weight.shape[0]
    if rows % (2 * heads):
        raise ValueError(f"rotary permutation: {rows} rows do not split into {heads} heads of even size")
    return (weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def load_gguf(gguf_py):
    """The gguf package from the given gguf-py folder of a llama.cpp tree (not any installed one)."""
    gguf_py = str(Path(gguf_py).resolve())
    if not (Path(gguf_py) / "gguf" / "gguf_writer.py").is_file():
        raise FileNotFoundError(f"--gguf-py {gguf_py}: no gguf/gguf_writer.py inside")
    sys.path.insert(0, gguf_py)
    module = importlib.import_module("gguf")
    if not str(Path(module.__file__).resolve()).startswith(gguf_py):
        raise ImportError(f"gguf imported from {module.__file__}, not from {gguf_py}")
    return module


def read_checkpoint(hf_dir):
    hf_dir = Path(hf_dir)
    config = json.loads((hf_dir / "config.json").read_text(encoding="utf-8"))
    files = sorted(hf_dir.glob("model*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{hf_dir}: no model*.safetensors file")
    tensors = {}
    for path in files:
        try:
            part, _ = safetensors_io.read_float32(path)
        except safetensors_io.SafetensorsError:  # saved BOOL / integer buffers (dropped by name later)
            part = {name: values.astype(np.float32) for name, values in safetensors_io.read_float64(path)[0].items()}
        tensors.update(part)
    return config, tensors


def gpt2_tensors(config, tensors):
    for name, data in tensors.items():
        name = name.removeprefix("transformer.")
        if name.endswith((".attn.bias", ".attn.masked_bias")) and data.ndim != 1:
            continue  # the causal-mask buffers of old GPT-2 files
        if name.endswith(CONV1D_SUFFIXES):
            data = np.ascontiguousarray(data.T)
        yield name, data


def llama_tensors(config, tensors):
    heads, kv_heads = config["num_attention_heads"], config.get("num_key_value_heads", config["num_attention_heads"])
    for name, data in tensors.items():
        if name.endswith(("q_proj.weight", "q_proj.bias")):
            data = rotary_pairs_permutation(data, heads)
        elif name.endswith(("k_proj.weight", "k_proj.bias")):
            data = rotary_pairs_permutation(data, kv_heads)
        yield name, data


def gpt_neox_tensors(config, tensors):
    heads, width = config["num_attention_heads"], config["hidden_size"]
    for name, data in tensors.items():
        if name.endswith((".attention.bias", ".attention.masked_bias", ".attention.rotary_emb.inv_freq")):
            continue  # buffers of checkpoints saved by older transformers
        if name.endswith("attention.query_key_value.weight"):  # per head [q; k; v] -> [Q; K; V]
            data = data.reshape(heads, 3, width // heads, width).swapaxes(0, 1).reshape(3 * width, width)
        elif name.endswith("attention.query_key_value.bias"):
            data = data.reshape(heads, 3, width // heads).swapaxes(0, 1).reshape(3 * width)
        yield name, np.ascontiguousarray(data)


def plain_tensors(config, tensors):
    yield from tensors.items()


def gemma_tensors(config, tensors):
    """Gemma2Model / Gemma3Model.modify_tensors: norm weights + 1, lm_head.weight skipped."""
    for name, data in tensors.items():
        if name == "lm_head.weight":
            continue
        if name.endswith("norm.weight"):
            data = (data.astype(np.float64) + 1).astype(np.float32)
        yield name, data


def swa_period(config):
    """Gemma 3's sliding layers as llama.cpp's period P (layer i slides iff i % P < P - 1)."""
    layers = config["num_hidden_layers"]
    if config.get("layer_types") is None:
        return config.get("sliding_window_pattern", config.get("_sliding_window_pattern", 6))
    sliding = [t == "sliding_attention" for t in config["layer_types"]]
    for period in range(1, layers + 2):
        if sliding == [i % period < period - 1 for i in range(layers)]:
            return period
    raise ValueError(f"layer_types {config['layer_types']!r} follow no period llama.cpp can express")


def rope_settings(config):
    """(rope_theta, rope type, the rope dict) from rope_parameters (v5) or rope_theta + rope_scaling."""
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    theta = rope.get("rope_theta", config.get("rope_theta", config.get("rotary_emb_base", 10000.0)))
    return theta, rope.get("rope_type", rope.get("type", "default")), rope


def llama3_rope_factors(config):
    """The divisor of each rotary pair's frequency under Llama 3.1's scaling: 1 for short
    wavelengths, factor for long ones, 1 / ((1 - s) / factor + s) between (LlamaModel's rope_freqs)."""
    theta, _, rope = rope_settings(config)
    dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    freqs = 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float32) / dim)
    factor, old = rope.get("factor", 8.0), rope.get("original_max_position_embeddings", 8192)
    low, high = rope.get("low_freq_factor", 1.0), rope.get("high_freq_factor", 4.0)
    factors = []
    for freq in freqs:
        wavelength = 2 * np.pi / freq
        if wavelength < old / high:
            factors.append(1.0)
        elif wavelength > old / low:
            factors.append(factor)
        else:
            smooth = (old / wavelength - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.asarray(factors, dtype=np.float32)


# Hugging Face architecture -> (gguf MODEL_ARCH member, the tensor generator)
ARCHITECTURES = {
    "GPT2LMHeadModel": ("GPT2", gpt2_tensors),
    "LlamaForCausalLM": ("LLAMA", llama_tensors),
    "GPTNeoXForCausalLM": ("GPTNEOX", gpt_neox_tensors),
    "Qwen2ForCausalLM": ("QWEN2", plain_tensors),
    "Qwen3ForCausalLM": ("QWEN3", plain_tensors),
    "Olmo2ForCausalLM": ("OLMO2", plain_tensors),
    "Phi3ForCausalLM": ("PHI3", plain_tensors),
    "Gemma2ForCausalLM": ("GEMMA2", gemma_tensors),
    "Gemma3ForCausalLM": ("GEMMA3", gemma_tensors),
    "MistralForCausalLM": ("LLAMA", llama_tensors),
}


def write_metadata(gguf, writer, config, file_type, mistral_swa=False):
    kind = config["model_type"]
    if kind == "gpt2":
        writer.add_block_count(config["n_layer"])
        writer.add_context_length(config.get("n_ctx", config["n_positions"]))
        writer.add_embedding_length(config["n_embd"])
        writer.add_feed_forward_length(config.get("n_inner") or 4 * config["n_embd"])
        writer.add_head_count(config["n_head"])
        writer.add_layer_norm_eps(config["layer_norm_epsilon"])
    elif kind == "gpt_neox":
        head_dim = config["hidden_size"] // config["num_attention_heads"]
        writer.add_context_length(config["max_position_embeddings"])
        writer.add_embedding_length(config["hidden_size"])
        writer.add_block_count(config["num_hidden_layers"])
        writer.add_feed_forward_length(config["intermediate_size"])
        writer.add_rope_dimension_count(int(config["rotary_pct"] * head_dim))
        writer.add_head_count(config["num_attention_heads"])
        writer.add_parallel_residual(config.get("use_parallel_residual", True))
        writer.add_layer_norm_eps(config["layer_norm_eps"])
        writer.add_rope_freq_base(config.get("rotary_emb_base", 10000))
    else:
        theta, rope_type, rope = rope_settings(config)
        heads = config["num_attention_heads"]
        head_dim = config.get("head_dim") or config["hidden_size"] // heads
        writer.add_block_count(config["num_hidden_layers"])
        writer.add_context_length(config["max_position_embeddings"])
        writer.add_embedding_length(config["hidden_size"])
        writer.add_feed_forward_length(config["intermediate_size"])
        writer.add_head_count(heads)
        writer.add_head_count_kv(config.get("num_key_value_heads") or heads)
        writer.add_rope_freq_base(theta)
        writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
        if "head_dim" in config and kind not in ("gemma2", "gemma3_text"):
            writer.add_key_length(head_dim)
            writer.add_value_length(head_dim)
        if kind in ("gemma2", "gemma3_text"):
            if config.get("rope_scaling") is not None:
                raise ValueError(f"Gemma rope_scaling {config['rope_scaling']!r}: only null is converted here")
            writer.add_key_length(head_dim)
            writer.add_value_length(head_dim)
            if config.get("attn_logit_softcapping") is not None:  # gemma3's graph has no attention cap
                if kind != "gemma2":
                    raise ValueError("llama.cpp's gemma3 graph has no attn_logit_softcapping")
                writer.add_attn_logit_softcapping(config["attn_logit_softcapping"])
            if config.get("final_logit_softcapping") is not None:
                writer.add_final_logit_softcapping(config["final_logit_softcapping"])
            writer.add_sliding_window(config["sliding_window"])
            if kind == "gemma3_text":
                writer.add_rope_freq_base_swa(config.get("rope_local_base_freq", 10000.0))
                writer.add_sliding_window_pattern(swa_period(config))
        if kind == "mistral" and mistral_swa:
            writer.add_logit_scale(1.0)
            writer.add_sliding_window(config["sliding_window"])
            writer.add_sliding_window_pattern([True] * config["num_hidden_layers"])
        if kind == "phi3":
            if config.get("rope_scaling") is not None:
                raise ValueError(f"Phi-3 rope_scaling {config['rope_scaling']!r}: only null is converted here")
            partial = config.get("partial_rotary_factor", 1.0)
            writer.add_rope_dimension_count(int(partial * config["hidden_size"]) // heads)
            writer.add_rope_scaling_orig_ctx_len(config["original_max_position_embeddings"])
            writer.add_sliding_window(config.get("sliding_window") or 0)
        else:
            writer.add_rope_dimension_count(head_dim)
        if rope_type == "linear":
            writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
            writer.add_rope_scaling_factor(rope["factor"])
        elif rope_type not in ("default", "llama3"):
            raise ValueError(f"rope type {rope_type!r} is not converted here")
    writer.add_vocab_size(config["vocab_size"])
    writer.add_file_type(file_type)
    writer.add_tokenizer_model("none")


def convert(hf_dir, out_path, type_name, gguf_py, mistral_swa=False):
    """Writes out_path; returns {gguf tensor name: (ggml type name, shape rows-first)}.
    mistral_swa: a MistralForCausalLM as arch granite_swa, which keeps its sliding window."""
    if type_name not in TYPES:
        raise ValueError(f"--type {type_name!r}: expected one of {TYPES}")
    gguf = load_gguf(gguf_py)
    config, tensors = read_checkpoint(hf_dir)
    architecture = (config.get("architectures") or ["<none>"])[0]
    if architecture not in ARCHITECTURES:
        raise ValueError(f"{hf_dir}/config.json: architecture {architecture!r} is neither of "
                         f"{', '.join(ARCHITECTURES)}")
    arch_name, rename = ARCHITECTURES[architecture]
    mistral_swa = mistral_swa and architecture == "MistralForCausalLM" and config.get("sliding_window") is not None
    if mistral_swa:
        arch_name = "GRANITE_SWA"
    arch = getattr(gguf.MODEL_ARCH, arch_name)
    renamed = rename(config, tensors)
    layers = config["n_layer"] if architecture == "GPT2LMHeadModel" else config["num_hidden_layers"]
    if architecture == "LlamaForCausalLM" and rope_settings(config)[1] == "llama3":
        renamed = [*renamed, ("rope_freqs.weight", llama3_rope_factors(config))]
    sinks = {}
    if mistral_swa:  # granite_swa requires per-head attention sinks: -1e30 adds nothing to the softmax
        for layer in range(layers):
            name = gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.ATTN_SINKS].format(bid=layer) + ".weight"
            sinks[name] = np.full(config["num_attention_heads"], -1e30, dtype=np.float32)
    qtype = getattr(gguf.GGMLQuantizationType, type_name)
    file_type = {"F32": gguf.LlamaFileType.ALL_F32, "F16": gguf.LlamaFileType.MOSTLY_F16,
                 "BF16": gguf.LlamaFileType.MOSTLY_BF16, "Q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
                 "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0, "Q4_1": gguf.LlamaFileType.MOSTLY_Q4_1,
                 "Q5_0": gguf.LlamaFileType.MOSTLY_Q5_0, "Q5_1": gguf.LlamaFileType.MOSTLY_Q5_1}[type_name]
    names = gguf.get_tensor_name_map(arch, layers)
    writer = gguf.GGUFWriter(str(out_path), gguf.MODEL_ARCH_NAMES[arch])
    writer.add_name(f"random {config['model_type']} ({Path(hf_dir).name})")
    write_metadata(gguf, writer, config, file_type, mistral_swa)
    written = {}
    for name, data in renamed:
        found = ((gguf.MODEL_TENSOR.ROPE_FREQS, name) if name == "rope_freqs.weight"
                 else names.get_type_and_name(name, try_suffixes=(".weight", ".bias")))
        if found is None:
            raise ValueError(f"{hf_dir}: tensor {name!r} has no llama.cpp name for arch {arch.name}")
        kind, new_name = found
        keep_f32 = data.ndim <= 1 or new_name.endswith("_norm.weight") or kind == gguf.MODEL_TENSOR.POS_EMBD
        block = gguf.GGML_QUANT_SIZES[qtype][0]
        tensor_type = gguf.GGMLQuantizationType.F32 if keep_f32 or data.shape[-1] % block else qtype
        writer.add_tensor(new_name, gguf.quants.quantize(data.astype(np.float32), tensor_type),
                          raw_dtype=tensor_type)
        written[new_name] = (tensor_type.name, tuple(data.shape))
    for new_name, data in sinks.items():
        writer.add_tensor(new_name, data, raw_dtype=gguf.GGMLQuantizationType.F32)
        written[new_name] = ("F32", tuple(data.shape))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return written


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("hf_dir", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--type", default="F32", choices=TYPES)
    parser.add_argument("--gguf-py", required=True, type=Path, help="gguf-py folder of the pinned llama.cpp tree")
    parser.add_argument("--mistral-swa", action="store_true",
                        help="write a MistralForCausalLM as arch granite_swa, keeping its sliding window")
    args = parser.parse_args()
    for name, (kind, shape) in convert(args.hf_dir, args.out, args.type, args.gguf_py, args.mistral_swa).items():
        print(f"{name:32s} {kind:5s} {shape}")


if __name__ == "__main__":
    main()
