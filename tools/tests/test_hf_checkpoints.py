"""tools/references/hf_checkpoints.py: Hugging Face's file layout, tensor names and shapes, config keys, shards
and dtype rounding, checked against lists written out here from the Hugging Face modeling files."""

import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from references import hf_checkpoints  # noqa: E402
from references.hf_checkpoints import ConfigError, write_checkpoint  # noqa: E402

TOOLS = Path(__file__).resolve().parents[1]


def header_of(path):
    """(header dict without __metadata__, metadata, data section length, header length)."""
    raw = Path(path).read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    metadata = header.pop("__metadata__")
    return header, metadata, len(raw) - 8 - length, length


def layout(path):
    header, _, _, _ = header_of(path)
    return {name: (entry["dtype"], tuple(entry["shape"])) for name, entry in header.items()}


def raw_values(path, name):
    raw = Path(path).read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    entry = json.loads(raw[8:8 + length])[name]
    start, end = entry["data_offsets"]
    return raw[8 + length + start:8 + length + end], entry


GPT2_KEYS = {"activation_function", "architectures", "attn_pdrop", "bos_token_id", "embd_pdrop", "eos_token_id",
             "initializer_range", "layer_norm_epsilon", "model_type", "n_ctx", "n_embd", "n_head", "n_inner",
             "n_layer", "n_positions", "reorder_and_upcast_attn", "resid_pdrop", "scale_attn_by_inverse_layer_idx",
             "scale_attn_weights", "summary_activation", "summary_first_dropout", "summary_proj_to_labels",
             "summary_type", "summary_use_proj", "tie_word_embeddings", "torch_dtype", "transformers_version",
             "use_cache", "vocab_size"}
LLAMA_KEYS = {"architectures", "attention_bias", "attention_dropout", "bos_token_id", "eos_token_id", "hidden_act",
              "hidden_size", "initializer_range", "intermediate_size", "max_position_embeddings", "mlp_bias",
              "model_type", "num_attention_heads", "num_hidden_layers", "num_key_value_heads", "pretraining_tp",
              "rms_norm_eps", "rope_scaling", "rope_theta", "tie_word_embeddings", "torch_dtype",
              "transformers_version", "use_cache", "vocab_size"}
QWEN2_KEYS = {"architectures", "attention_dropout", "bos_token_id", "eos_token_id", "hidden_act", "hidden_size",
              "initializer_range", "intermediate_size", "max_position_embeddings", "max_window_layers", "model_type",
              "num_attention_heads", "num_hidden_layers", "num_key_value_heads", "rms_norm_eps", "rope_scaling",
              "rope_theta", "sliding_window", "tie_word_embeddings", "torch_dtype", "transformers_version",
              "use_cache", "use_sliding_window", "vocab_size"}

GPT2_SMALL = {"vocab_size": 50, "n_positions": 12, "n_embd": 16, "n_layer": 1, "n_head": 2}


def test_gpt2_prefixed_mask_buffers_tied(tmp_path):
    config = write_checkpoint(tmp_path, "gpt2", GPT2_SMALL, "F32", prefix="transformer.", mask_buffers=True)
    assert set(config) == GPT2_KEYS
    assert config["architectures"] == ["GPT2LMHeadModel"] and config["model_type"] == "gpt2"
    assert config["torch_dtype"] == "float32" and config["n_ctx"] == 12 and config["n_inner"] is None
    assert json.loads((tmp_path / "config.json").read_text()) == config
    t = "transformer."
    assert layout(tmp_path / "model.safetensors") == {
        t + "wte.weight": ("F32", (50, 16)), t + "wpe.weight": ("F32", (12, 16)),
        t + "h.0.ln_1.weight": ("F32", (16,)), t + "h.0.ln_1.bias": ("F32", (16,)),
        t + "h.0.attn.bias": ("F32", (1, 1, 12, 12)), t + "h.0.attn.masked_bias": ("F32", ()),
        t + "h.0.attn.c_attn.weight": ("F32", (16, 48)), t + "h.0.attn.c_attn.bias": ("F32", (48,)),
        t + "h.0.attn.c_proj.weight": ("F32", (16, 16)), t + "h.0.attn.c_proj.bias": ("F32", (16,)),
        t + "h.0.ln_2.weight": ("F32", (16,)), t + "h.0.ln_2.bias": ("F32", (16,)),
        t + "h.0.mlp.c_fc.weight": ("F32", (16, 64)), t + "h.0.mlp.c_fc.bias": ("F32", (64,)),
        t + "h.0.mlp.c_proj.weight": ("F32", (64, 16)), t + "h.0.mlp.c_proj.bias": ("F32", (16,)),
        t + "ln_f.weight": ("F32", (16,)), t + "ln_f.bias": ("F32", (16,)),
    }
    mask, _ = raw_values(tmp_path / "model.safetensors", t + "h.0.attn.bias")
    assert np.array_equal(np.frombuffer(mask, "<f4").reshape(12, 12), np.tril(np.ones((12, 12))))
    masked, _ = raw_values(tmp_path / "model.safetensors", t + "h.0.attn.masked_bias")
    assert np.frombuffer(masked, "<f4").tolist() == [-1e4]


def test_gpt2_unprefixed_untied_inner(tmp_path):
    config = write_checkpoint(tmp_path, "gpt2", {**GPT2_SMALL, "n_inner": 24}, "F16", prefix="", tied=False)
    assert config["tie_word_embeddings"] is False and config["torch_dtype"] == "float16"
    names = layout(tmp_path / "model.safetensors")
    assert names["lm_head.weight"] == ("F16", (50, 16))
    assert names["h.0.mlp.c_fc.weight"] == ("F16", (16, 24)) and names["h.0.mlp.c_proj.weight"] == ("F16", (24, 16))
    assert not any(n.startswith("transformer.") or n.endswith(".attn.bias") for n in names)
    assert len(names) == 17


def test_gpt2_legacy_config_omits_defaulted_keys(tmp_path):
    config = write_checkpoint(tmp_path, "gpt2", GPT2_SMALL, "F32", legacy_config=True)
    assert set(config) == GPT2_KEYS - {"torch_dtype", "n_inner", "scale_attn_weights", "tie_word_embeddings",
                                       "scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn",
                                       "transformers_version"}
    assert "transformer.wte.weight" in layout(tmp_path / "model.safetensors")
    with pytest.raises(ConfigError, match="scale_attn_weights"):
        write_checkpoint(tmp_path, "gpt2", {**GPT2_SMALL, "scale_attn_weights": False}, legacy_config=True)
    with pytest.raises(ConfigError, match="untied"):
        write_checkpoint(tmp_path, "gpt2", GPT2_SMALL, tied=False, legacy_config=True)


LLAMA_SMALL = {"vocab_size": 40, "hidden_size": 16, "intermediate_size": 24, "num_hidden_layers": 1,
               "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 16}


def test_llama_biases_head_dim_untied(tmp_path):
    config = write_checkpoint(tmp_path, "llama", {**LLAMA_SMALL, "head_dim": 6, "attention_bias": True,
                                                  "mlp_bias": True}, "F32")
    assert set(config) == LLAMA_KEYS | {"head_dim"}
    assert config["architectures"] == ["LlamaForCausalLM"] and config["rope_scaling"] is None
    a, m = "model.layers.0.self_attn.", "model.layers.0.mlp."
    assert layout(tmp_path / "model.safetensors") == {
        "model.embed_tokens.weight": ("F32", (40, 16)),
        a + "q_proj.weight": ("F32", (24, 16)), a + "q_proj.bias": ("F32", (24,)),
        a + "k_proj.weight": ("F32", (12, 16)), a + "k_proj.bias": ("F32", (12,)),
        a + "v_proj.weight": ("F32", (12, 16)), a + "v_proj.bias": ("F32", (12,)),
        a + "o_proj.weight": ("F32", (16, 24)), a + "o_proj.bias": ("F32", (16,)),
        m + "gate_proj.weight": ("F32", (24, 16)), m + "gate_proj.bias": ("F32", (24,)),
        m + "up_proj.weight": ("F32", (24, 16)), m + "up_proj.bias": ("F32", (24,)),
        m + "down_proj.weight": ("F32", (16, 24)), m + "down_proj.bias": ("F32", (16,)),
        "model.layers.0.input_layernorm.weight": ("F32", (16,)),
        "model.layers.0.post_attention_layernorm.weight": ("F32", (16,)),
        "model.norm.weight": ("F32", (16,)), "lm_head.weight": ("F32", (40, 16)),
    }


def test_llama_tied_without_biases(tmp_path):
    config = write_checkpoint(tmp_path, "llama", LLAMA_SMALL, "BF16", tied=True)
    assert set(config) == LLAMA_KEYS and config["torch_dtype"] == "bfloat16"
    names = layout(tmp_path / "model.safetensors")
    assert "lm_head.weight" not in names and not any(n.endswith(".bias") for n in names)
    assert len(names) == 1 + 9 + 1 and all(dtype == "BF16" for dtype, _ in names.values())


def test_qwen2_qkv_biases_only(tmp_path):
    config = write_checkpoint(tmp_path, "qwen2", {**LLAMA_SMALL, "tie_word_embeddings": True}, "F32")
    assert set(config) == QWEN2_KEYS and config["use_sliding_window"] is False
    biases = {n for n in layout(tmp_path / "model.safetensors") if n.endswith(".bias")}
    assert biases == {f"model.layers.0.self_attn.{p}_proj.bias" for p in "qkv"}
    assert "lm_head.weight" not in layout(tmp_path / "model.safetensors")


def test_safetensors_framing(tmp_path):
    write_checkpoint(tmp_path, "gpt2", GPT2_SMALL, "F16", mask_buffers=True)
    header, metadata, data_length, header_length = header_of(tmp_path / "model.safetensors")
    assert metadata == {"format": "pt"} and (8 + header_length) % 8 == 0
    spans = sorted(entry["data_offsets"] for entry in header.values())
    assert spans[0][0] == 0 and spans[-1][1] == data_length
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))


def test_shards_and_index(tmp_path):
    write_checkpoint(tmp_path, "llama", {**LLAMA_SMALL, "num_hidden_layers": 3}, "BF16", shards=3)
    assert not (tmp_path / "model.safetensors").exists()
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert set(index) == {"metadata", "weight_map"} and set(index["metadata"]) == {"total_size"}
    files = [f"model-0000{k}-of-00003.safetensors" for k in (1, 2, 3)]
    assert sorted(set(index["weight_map"].values())) == files
    total = 0
    for name in files:
        header, _, data_length, _ = header_of(tmp_path / name)
        assert {n for n, f in index["weight_map"].items() if f == name} == set(header)
        total += data_length
    assert index["metadata"]["total_size"] == total
    single = tmp_path / "single"
    write_checkpoint(single, "llama", {**LLAMA_SMALL, "num_hidden_layers": 3}, "BF16")
    # Sharding moves tensors between files without changing them.
    for name, shard in index["weight_map"].items():
        assert raw_values(tmp_path / shard, name)[0] == raw_values(single / "model.safetensors", name)[0]
    # Rewriting as one file removes the shards and the index.
    write_checkpoint(tmp_path, "llama", LLAMA_SMALL, "BF16")
    assert sorted(p.name for p in tmp_path.glob("model*")) == ["model.safetensors"]


@pytest.mark.parametrize("dtype, torch_dtype", [("F16", torch.float16), ("BF16", torch.bfloat16)])
def test_half_dtypes_store_round_to_nearest_of_the_same_draws(tmp_path, dtype, torch_dtype):
    write_checkpoint(tmp_path / "f32", "llama", LLAMA_SMALL, "F32", seed=5)
    write_checkpoint(tmp_path / "half", "llama", LLAMA_SMALL, dtype, seed=5)
    name = "model.layers.0.self_attn.q_proj.weight"
    exact = np.frombuffer(raw_values(tmp_path / "f32/model.safetensors", name)[0], "<f4")
    stored = np.frombuffer(raw_values(tmp_path / "half/model.safetensors", name)[0], "<i2")
    expected = torch.from_numpy(exact.copy()).to(torch_dtype).view(torch.int16).numpy()
    assert np.array_equal(stored, expected)
    assert not np.array_equal(torch.from_numpy(stored.copy()).view(torch_dtype).float().numpy(), exact)


def test_seed_changes_values_and_is_reproducible(tmp_path):
    for directory, seed in (("a", 1), ("b", 1), ("c", 2)):
        write_checkpoint(tmp_path / directory, "gpt2", GPT2_SMALL, "F32", seed=seed)
    data = {d: (tmp_path / d / "model.safetensors").read_bytes() for d in "abc"}
    assert data["a"] == data["b"] and data["a"] != data["c"]


def test_weight_statistics(tmp_path):
    config = {"vocab_size": 300, "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 1,
              "num_attention_heads": 4, "max_position_embeddings": 16}
    write_checkpoint(tmp_path, "llama", config, "F32")
    path = tmp_path / "model.safetensors"

    def values(name):
        return np.frombuffer(raw_values(path, name)[0], "<f4").astype(np.float64)

    assert values("model.embed_tokens.weight").std() == pytest.approx(0.5, rel=0.02)
    assert values("model.layers.0.self_attn.q_proj.weight").std() == pytest.approx(1.4 / 16, rel=0.02)
    assert values("model.layers.0.mlp.down_proj.weight").std() == pytest.approx(1 / np.sqrt(512), rel=0.02)
    norm = values("model.layers.0.input_layernorm.weight")
    assert norm.mean() == pytest.approx(1, abs=0.03) and norm.std() == pytest.approx(0.1, rel=0.2)


@pytest.mark.parametrize("call, message", [
    (lambda d: write_checkpoint(d, "gpt3", GPT2_SMALL), "unknown architecture 'gpt3'"),
    (lambda d: write_checkpoint(d, "gpt2", GPT2_SMALL, "F8"), "unknown dtype 'F8'"),
    (lambda d: write_checkpoint(d, "gpt2", {**GPT2_SMALL, "hidden_size": 3}), "unknown gpt2 config key 'hidden_size'"),
    (lambda d: write_checkpoint(d, "gpt2", {**GPT2_SMALL, "n_head": 3}), "n_embd 16 is not a multiple of n_head 3"),
    (lambda d: write_checkpoint(d, "gpt2", GPT2_SMALL, prefix="model."), "prefix must be"),
    (lambda d: write_checkpoint(d, "llama", LLAMA_SMALL, mask_buffers=True), "GPT-2 and GPT-NeoX checkpoints only"),
    (lambda d: write_checkpoint(d, "llama", LLAMA_SMALL, prefix="transformer."), "always under 'model.'"),
    (lambda d: write_checkpoint(d, "llama", LLAMA_SMALL, legacy_config=True), "gpt2 only"),
    (lambda d: write_checkpoint(d, "llama", {**LLAMA_SMALL, "num_key_value_heads": 3}), "not a multiple of num_key"),
    (lambda d: write_checkpoint(d, "llama", {**LLAMA_SMALL, "hidden_size": 18}), "hidden_size 18 is not a multiple"),
    (lambda d: write_checkpoint(d, "llama", {**LLAMA_SMALL, "head_dim": 5}), "head dimension 5 is odd"),
    (lambda d: write_checkpoint(d, "qwen2", LLAMA_SMALL, shards=0), "shards must be between 1 and"),
    (lambda d: write_checkpoint(d, "qwen2", LLAMA_SMALL, shards=100), "shards must be between 1 and"),
])
def test_configuration_errors(tmp_path, call, message):
    with pytest.raises(ConfigError, match=message):
        call(tmp_path)


def test_shard_plan_gives_every_shard_a_tensor():
    specs = [hf_checkpoints.Spec(str(i), (size,), "F32", "bias") for i, size in enumerate([1000, 1, 1, 1])]
    groups = hf_checkpoints.shard_plan(specs, 3)
    assert [[s.name for s in g] for g in groups] == [["0"], ["1"], ["2", "3"]]
    assert [[s.name for s in g] for g in hf_checkpoints.shard_plan(specs, 4)] == [["0"], ["1"], ["2"], ["3"]]


# Parameter counts published for the benchmark shapes (Pythia-160M's from the Pythia paper's table;
# Qwen3-0.6B's is its safetensors' count, tied embeddings counted once).
@pytest.mark.parametrize("shape, parameters", [("gpt2-small", 124_439_808), ("smollm2-135m", 134_515_008),
                                               ("pythia-160m", 162_322_944), ("qwen3-0.6b", 596_049_920)])
def test_benchmark_shapes_have_the_published_parameter_counts(shape, parameters):
    architecture, config = hf_checkpoints.SHAPES[shape]
    full = hf_checkpoints.make_config(architecture, config, "F32")
    plan = hf_checkpoints.tensor_plan(full, "F32")
    assert sum(int(np.prod(spec.shape)) for spec in plan) == parameters


def test_cli_writes_a_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setitem(hf_checkpoints.SHAPES, "tiny", ("qwen2", {**LLAMA_SMALL, "tie_word_embeddings": True}))
    hf_checkpoints.main(["--shape", "tiny", "--dtype", "BF16", "--out", str(tmp_path / "tiny"), "--shards", "2"])
    assert json.loads((tmp_path / "tiny/config.json").read_text())["torch_dtype"] == "bfloat16"
    assert (tmp_path / "tiny/model.safetensors.index.json").exists()
    usage = subprocess.run([sys.executable, str(TOOLS / "references" / "hf_checkpoints.py"), "--shape", "gpt9"],
                           capture_output=True, text=True)
    assert usage.returncode == 2 and "invalid choice: 'gpt9'" in usage.stderr


# google/gemma-3-270m's config.json keys (transformers 4.55.0.dev0) and Mistral-7B-v0.1's as transformers 4.46
# writes them (MistralConfig's attributes, with head_dim, and PretrainedConfig's that differ from its defaults).
GEMMA3_270M_KEYS = {"_sliding_window_pattern", "architectures", "attention_bias", "attention_dropout",
                    "attn_logit_softcapping", "bos_token_id", "eos_token_id", "final_logit_softcapping", "head_dim",
                    "hidden_activation", "hidden_size", "initializer_range", "intermediate_size", "layer_types",
                    "max_position_embeddings", "model_type", "num_attention_heads", "num_hidden_layers",
                    "num_key_value_heads", "pad_token_id", "query_pre_attn_scalar", "rms_norm_eps",
                    "rope_local_base_freq", "rope_scaling", "rope_theta", "sliding_window", "torch_dtype",
                    "transformers_version", "use_bidirectional_attention", "use_cache", "vocab_size"}
MISTRAL_KEYS = {"architectures", "attention_dropout", "bos_token_id", "eos_token_id", "head_dim", "hidden_act",
                "hidden_size", "initializer_range", "intermediate_size", "max_position_embeddings", "model_type",
                "num_attention_heads", "num_hidden_layers", "num_key_value_heads", "rms_norm_eps", "rope_theta",
                "sliding_window", "tie_word_embeddings", "torch_dtype", "transformers_version", "use_cache",
                "vocab_size"}


def test_gemma3_270m_shape_has_the_published_config_and_tensors():
    architecture, shape = hf_checkpoints.SHAPES["gemma3-270m"]
    config = hf_checkpoints.make_config(architecture, shape, "F32")
    assert set(config) == GEMMA3_270M_KEYS
    assert config["architectures"] == ["Gemma3ForCausalLM"] and config["model_type"] == "gemma3_text"
    assert config["layer_types"] == (["sliding_attention"] * 5 + ["full_attention"]) * 3
    assert (config["sliding_window"], config["query_pre_attn_scalar"], config["head_dim"]) == (512, 256, 256)
    assert (config["rope_theta"], config["rope_local_base_freq"], config["rms_norm_eps"]) == (1e6, 1e4, 1e-6)
    assert config["use_bidirectional_attention"] is False and config["torch_dtype"] == "float32"
    assert config["attn_logit_softcapping"] is None and config["final_logit_softcapping"] is None
    plan = {spec.name: spec.shape for spec in hf_checkpoints.tensor_plan(config, "F32")}
    assert plan["model.embed_tokens.weight"] == (262144, 640) and "lm_head.weight" not in plan  # tied
    a = "model.layers.17.self_attn."
    assert (plan[a + "q_proj.weight"], plan[a + "k_proj.weight"], plan[a + "o_proj.weight"]) == \
        ((1024, 640), (256, 640), (640, 1024))
    assert plan[a + "q_norm.weight"] == (256,) and plan["model.layers.0.mlp.down_proj.weight"] == (640, 2048)
    assert len(plan) == 1 + 18 * 13 + 1
    assert sum(math.prod(s) for s in plan.values()) == 268_098_176  # gemma-3-270m's parameter count


def test_mistral_small_shape_has_mistral_keys_and_a_window_under_the_long_prompt():
    architecture, shape = hf_checkpoints.SHAPES["mistral-small"]
    config = hf_checkpoints.make_config(architecture, shape, "F32")
    assert set(config) == MISTRAL_KEYS and config["architectures"] == ["MistralForCausalLM"]
    assert config["sliding_window"] == 1024 < 4096 and config["tie_word_embeddings"] is False
    plan = {spec.name: spec.shape for spec in hf_checkpoints.tensor_plan(config, "F32")}
    assert plan["model.layers.15.self_attn.k_proj.weight"] == (256, 1024) and plan["lm_head.weight"] == (32768, 1024)
    assert plan["model.layers.0.mlp.gate_proj.weight"] == (3584, 1024) and len(plan) == 1 + 16 * 9 + 2
