#!/usr/bin/env python3
"""A Hugging Face checkpoint directory -> GGUF, with the gguf writer of llama.cpp's own tree.

  /usr/bin/python3 tools/benchmarks/peers/hf_to_gguf.py HF_DIR OUT.gguf --type F32|F16|BF16 --gguf-py LLAMA_CPP/gguf-py

Follows llama.cpp's convert_hf_to_gguf.py (conversion/{base,gpt2,llama}.py of the pinned tree):
  * GPT2LMHeadModel -> arch "gpt2": Conv1D weights (c_attn, c_proj, c_fc) transposed to (out × in);
    feed_forward_length 4·n_embd; the causal-mask buffers dropped.
  * LlamaForCausalLM -> arch "llama": q_proj rows permuted per query head and k_proj rows per
    key-value head (LlamaModel.permute), because ggml's "normal" rope rotates adjacent pairs
    (x[2i], x[2i+1]) where Hugging Face rotates halves (x[i], x[i + d/2]).
  * tensor types: 1-D tensors, *_norm.weight and the position table stay F32, every other weight
    takes --type (as the converter's MOSTLY_* file types do).
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
TYPES = ("F32", "F16", "BF16")


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
    files = sorted(hf_dir.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"{hf_dir}: no *.safetensors file")
    tensors = {}
    for path in files:
        part, _ = safetensors_io.read_float32(path)
        tensors.update(part)
    return config, tensors


def gpt2_tensors(config, tensors):
    for name, data in tensors.items():
        name = name.removeprefix("transformer.")
        if name.endswith((".attn.bias", ".attn.masked_bias")) and data.ndim > 1:
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


def write_metadata(gguf, writer, config, file_type):
    if config["model_type"] == "gpt2":
        writer.add_block_count(config["n_layer"])
        writer.add_context_length(config.get("n_ctx", config["n_positions"]))
        writer.add_embedding_length(config["n_embd"])
        writer.add_feed_forward_length(4 * config["n_embd"])
        writer.add_head_count(config["n_head"])
        writer.add_layer_norm_eps(config["layer_norm_epsilon"])
    else:
        head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        writer.add_block_count(config["num_hidden_layers"])
        writer.add_context_length(config["max_position_embeddings"])
        writer.add_embedding_length(config["hidden_size"])
        writer.add_feed_forward_length(config["intermediate_size"])
        writer.add_head_count(config["num_attention_heads"])
        writer.add_head_count_kv(config.get("num_key_value_heads", config["num_attention_heads"]))
        writer.add_rope_freq_base(config.get("rope_theta", 10000.0))
        writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
        if "head_dim" in config:
            writer.add_key_length(head_dim)
            writer.add_value_length(head_dim)
        writer.add_rope_dimension_count(head_dim)
    writer.add_vocab_size(config["vocab_size"])
    writer.add_file_type(file_type)
    writer.add_tokenizer_model("none")


def convert(hf_dir, out_path, type_name, gguf_py):
    """Writes out_path; returns {gguf tensor name: (ggml type name, shape rows-first)}."""
    if type_name not in TYPES:
        raise ValueError(f"--type {type_name!r}: expected one of {TYPES}")
    gguf = load_gguf(gguf_py)
    config, tensors = read_checkpoint(hf_dir)
    architecture = (config.get("architectures") or ["<none>"])[0]
    if architecture == "GPT2LMHeadModel":
        arch, renamed = gguf.MODEL_ARCH.GPT2, gpt2_tensors(config, tensors)
        layers = config["n_layer"]
    elif architecture == "LlamaForCausalLM":
        arch, renamed = gguf.MODEL_ARCH.LLAMA, llama_tensors(config, tensors)
        layers = config["num_hidden_layers"]
    else:
        raise ValueError(f"{hf_dir}/config.json: architecture {architecture!r} is neither GPT2LMHeadModel "
                         "nor LlamaForCausalLM")
    qtype = getattr(gguf.GGMLQuantizationType, type_name)
    file_type = {"F32": gguf.LlamaFileType.ALL_F32, "F16": gguf.LlamaFileType.MOSTLY_F16,
                 "BF16": gguf.LlamaFileType.MOSTLY_BF16}[type_name]
    names = gguf.get_tensor_name_map(arch, layers)
    writer = gguf.GGUFWriter(str(out_path), gguf.MODEL_ARCH_NAMES[arch])
    writer.add_name(f"random {config['model_type']} ({Path(hf_dir).name})")
    write_metadata(gguf, writer, config, file_type)
    written = {}
    for name, data in renamed:
        found = names.get_type_and_name(name, try_suffixes=(".weight", ".bias"))
        if found is None:
            raise ValueError(f"{hf_dir}: tensor {name!r} has no llama.cpp name for arch {arch.name}")
        kind, new_name = found
        keep_f32 = data.ndim <= 1 or new_name.endswith("_norm.weight") or kind == gguf.MODEL_TENSOR.POS_EMBD
        tensor_type = gguf.GGMLQuantizationType.F32 if keep_f32 else qtype
        writer.add_tensor(new_name, gguf.quants.quantize(data.astype(np.float32), tensor_type),
                          raw_dtype=tensor_type)
        written[new_name] = (tensor_type.name, tuple(data.shape))
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
    args = parser.parse_args()
    for name, (kind, shape) in convert(args.hf_dir, args.out, args.type, args.gguf_py).items():
        print(f"{name:32s} {kind:5s} {shape}")


if __name__ == "__main__":
    main()
