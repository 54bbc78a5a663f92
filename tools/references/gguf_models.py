#!/usr/bin/python3
"""Write tests/data/gguf/models/: the tiny Hugging Face checkpoints of tests/data/hf converted to GGUF
as the pinned llama.cpp converter lays them out (tools/benchmarks/peers/hf_to_gguf.py), for
tests/test_gguf_model.cpp to load with Model::load and compare with the checkpoints themselves;
and, for the quantized files, the float64 reference forward of their dequantized weights.

    /usr/bin/python3 tools/references/gguf_models.py [--gguf-py DIR]

gguf-py is the pinned llama.cpp peer's (tools/benchmarks/peers/llamacpp_setup.py installs it under
~/.cache/attn-peers/llama.cpp-<commit>/gguf-py). Output is deterministic: the same checkpoints and
gguf-py give the same bytes.

Files, <checkpoint>.<type>.gguf:
  * every checkpoint at F32, but llama_gqa_bf16_shards at BF16 and gpt2_f16 at F16 (their own
    types, so the weights are the checkpoint's bit for bit). gpt2_f16 (erf GELU, scores ÷ (layer + 1))
    and gpt2_unscaled_f32 (scale_attn_weights false) lose what GGUF cannot say: the test compares
    their weights, not their logits.
  * the Gemma checkpoints at F32, converted from the copy llama.cpp's gemma2 / gemma3 graphs compute
    the same function of (validate_llamacpp.gemma_as_llama_cpp_runs: query_pre_attn_scalar and
    transformers' dtype-rounded √C folded into the weights, which GGUF cannot say): the file's
    logits are the checkpoint's, its weights are not.
  * llama3_rope_scaling at Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 (its width 64, MLP 96 and heads 2 × 32
    are whole blocks of 32), with <checkpoint>.<type>.golden.safetensors: `ids` (I64, the whole context, seeded) and
    `logits` (F64, n × V) of hf_reference.py's float64 forward of the weights gguf-py dequantizes
    from the file, the converter's q/k permutation undone here in NumPy.
"""

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

TOOLS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TOOLS))  # tools/: the role packages

from benchmarks.peers import hf_to_gguf  # noqa: E402
from benchmarks.peers.llamacpp_setup import DEFAULT_CACHE, LLAMA_CPP_COMMIT  # noqa: E402
from common import safetensors_io  # noqa: E402
from references import hf_checkpoints, hf_reference, validate_llamacpp  # noqa: E402

ROOT = TOOLS.parent
CHECKPOINTS = ROOT / "tests" / "data" / "hf"
OUT = ROOT / "tests" / "data" / "gguf" / "models"
SEED = 2026

# checkpoint -> the types it is written at
FILES = {
    "gpt2_prefixed_f32": ["F32"],
    "gpt2_f16": ["F16"],
    "gpt2_unscaled_f32": ["F32"],
    "llama_gqa_bf16_shards": ["BF16"],
    "llama_head_dim_untied": ["F32"],
    "qwen2_bias": ["F32"],
    "gpt_neox_parallel": ["F32"],
    "gpt_neox_sequential": ["F32"],
    "llama3_rope_scaling": ["F32", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"],
    "llama_linear_rope_parameters": ["F32"],
    "llama_linear_rope_scaling_type": ["F32"],
    "qwen3_qk_norm": ["F32"],
    "olmo2_post_norm": ["F32"],
    "phi3_fused_partial": ["F32"],
    "gemma2_softcap_window": ["F32"],
    "gemma3_pattern": ["F32"],
    "gemma3_layer_types": ["F32"],
}
GEMMA = ("gemma2_softcap_window", "gemma3_pattern", "gemma3_layer_types")
QUANTIZED = ("Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1")


def inverse_rotary_pairs_permutation(weight, heads):
    """hf_to_gguf.rotary_pairs_permutation undone: ggml's adjacent pairs back to rotate-half rows."""
    rows = weight.shape[0]
    return weight.reshape(heads, rows // heads // 2, 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def dequantized_checkpoint(gguf, gguf_path, hf_dir, out_dir):
    """A checkpoint directory (config.json, model.safetensors in F32) holding the weights gguf-py
    dequantizes from gguf_path, under their Hugging Face names and layout: a Llama's (the converter's
    q/k row permutation undone) or a GPT-2's (its Conv1D weights, which GGUF stores transposed as
    (out × in), transposed back). Tensors the GGUF file does not hold (old GPT-2 files' causal-mask
    buffers) are copied as they are."""
    config = json.loads((hf_dir / "config.json").read_text(encoding="utf-8"))
    kind = config["model_type"]
    if kind not in ("llama", "gpt2"):
        raise ValueError(f"{hf_dir}: only Llama and GPT-2 checkpoints are dequantized back here, not {kind!r}")
    _, originals = hf_to_gguf.read_checkpoint(hf_dir)
    layers = config["n_layer"] if kind == "gpt2" else config["num_hidden_layers"]
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.GPT2 if kind == "gpt2" else gguf.MODEL_ARCH.LLAMA, layers)
    reader = gguf.GGUFReader(str(gguf_path))
    stored = {t.name: t for t in reader.tensors}
    heads = config.get("num_attention_heads", config.get("n_head"))
    kv_heads = config.get("num_key_value_heads", heads)
    tensors = {}
    for name, original in originals.items():
        plain = name.removeprefix("transformer.") if kind == "gpt2" else name
        found = names.get_type_and_name(plain, try_suffixes=(".weight", ".bias"))
        if found is None or found[1] not in stored:
            if kind == "gpt2" and plain.endswith((".attn.bias", ".attn.masked_bias")) and original.ndim != 1:
                tensors[name] = ("F32", original)  # a mask buffer, not a weight
                continue
            raise ValueError(f"{gguf_path}: no tensor for {name!r}")
        t = stored[found[1]]
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        if kind == "gpt2" and plain.endswith(hf_to_gguf.CONV1D_SUFFIXES):
            values = np.ascontiguousarray(values.reshape(original.T.shape).T)  # (out × in) back to (in × out)
        else:
            values = values.reshape(original.shape)
        if name.endswith("q_proj.weight"):
            values = inverse_rotary_pairs_permutation(values, heads)
        elif name.endswith("k_proj.weight"):
            values = inverse_rotary_pairs_permutation(values, kv_heads)
        tensors[name] = ("F32", values)
    out_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy(hf_dir / "config.json", out_dir / "config.json")
    safetensors_io.write_safetensors(out_dir / "model.safetensors", tensors)


def write_golden(gguf, gguf_path, hf_dir, out_path):
    """ids and the float64 reference logits of the file's dequantized weights."""
    config = json.loads((hf_dir / "config.json").read_text(encoding="utf-8"))
    rng = np.random.default_rng([SEED, 24])
    ids = rng.integers(0, config["vocab_size"], size=hf_reference.context_of(config)).tolist()
    with tempfile.TemporaryDirectory() as scratch:
        checkpoint = Path(scratch) / "dequantized"
        dequantized_checkpoint(gguf, gguf_path, hf_dir, checkpoint)
        logits, _, _ = hf_reference.run(hf_reference.load(checkpoint), ids)
    arrays = {"ids": np.asarray(ids, dtype=np.int64), "logits": logits}
    specs = [hf_checkpoints.Spec(name, values.shape, "I64" if values.dtype == np.int64 else "F64", "golden")
             for name, values in arrays.items()]
    hf_checkpoints.write_safetensors(out_path, specs,
                                     lambda spec: hf_checkpoints.encode(arrays[spec.name], spec.dtype))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gguf-py", type=Path, default=DEFAULT_CACHE / f"llama.cpp-{LLAMA_CPP_COMMIT[:12]}" / "gguf-py")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    gguf = hf_to_gguf.load_gguf(args.gguf_py)
    args.out.mkdir(parents=True, exist_ok=True)
    for checkpoint, types in FILES.items():
        for type_name in types:
            path = args.out / f"{checkpoint}.{type_name}.gguf"
            with tempfile.TemporaryDirectory() as scratch:
                source = CHECKPOINTS / checkpoint
                if checkpoint in GEMMA:
                    source, _ = validate_llamacpp.gemma_as_llama_cpp_runs(source, Path(scratch) / checkpoint)
                hf_to_gguf.convert(source, path, type_name, args.gguf_py)
            print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")
            if type_name in QUANTIZED:
                golden = args.out / f"{checkpoint}.{type_name}.golden.safetensors"
                write_golden(gguf, path, CHECKPOINTS / checkpoint, golden)
                print(f"{golden.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
