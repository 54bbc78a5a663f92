#!/usr/bin/python3
"""The forward pass of Hugging Face GPT2LMHeadModel, LlamaForCausalLM (rope_scaling linear or llama3,
in transformers 4.x's or v5's spelling), Qwen2ForCausalLM, GPTNeoXForCausalLM, Qwen3ForCausalLM,
Olmo2ForCausalLM, Phi3ForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM (text) and MistralForCausalLM
checkpoints in float64 PyTorch, written from the published
formulas (transformers' modeling_*.py and modeling_rope_utils.py), with TransformerLens-named
activations: the reference attn's Hugging Face loader is tested against.

    /usr/bin/python3 tools/references/hf_reference.py --regenerate        # tests/data/hf/*: checkpoints + goldens
    /usr/bin/python3 tools/references/hf_reference.py DIR --ids 3,1,4     # goldens for a checkpoint directory

A checkpoint is read through a strict safetensors reader of its own (F16 and BF16 upcast exactly),
either model.safetensors or model.safetensors.index.json and its shards. Configuration this file
does not implement (other rope types, Qwen's use_sliding_window, Phi-3's window, Gemma's rope
scaling, other activations) is refused, not ignored.

Goldens: <dir>/golden.safetensors holds, for prompt k, `p{k}.ids` (I64, n), `p{k}.logits`
(F64, n × vocab), `p{k}.attention` (F64, layers × heads × n × n) and `p{k}.<hook>` (F64) for
every hook of golden.json's "hooks", shaped n × width (per-head hooks flattened [pos, head·d]).

Run with Debian's Python (/usr/bin/python3: python3-torch, python3-numpy).
"""

import argparse
import json
import shlex
import math
import struct
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages
from common import safetensors_io  # noqa: E402
from references import hf_checkpoints  # noqa: E402  (writes the test checkpoints and golden.safetensors)

ROOT = Path(__file__).resolve().parents[2]
TEST_DATA = ROOT / "tests" / "data" / "hf"
REGENERATE = "/usr/bin/python3 tools/references/hf_reference.py --regenerate"


class CheckpointError(ValueError):
    """A checkpoint directory, file or configuration the reference refuses, with what and where."""


# ---------------------------------------------------------------- safetensors reading


def read_safetensors(path):
    """Every tensor of a safetensors file as a NumPy array: floats as float64 (exact), integers as
    int64. Returns (tensors, metadata). Refuses anything but one well-formed file whose tensors
    tile its data section exactly: no gaps, overlaps, trailing bytes or unknown dtypes."""
    try:
        return safetensors_io.read_float64(path)
    except safetensors_io.SafetensorsError as error:
        raise CheckpointError(str(error)) from None


def read_config(directory):
    path = Path(directory) / "config.json"
    try:
        config = json.loads(path.read_text())
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read ({error.strerror})") from None
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{path}: not JSON ({error})") from None
    if not isinstance(config, dict):
        raise CheckpointError(f"{path}: not a JSON object")
    return config


def read_weights(directory):
    """All tensors of a checkpoint directory (single file or index + shards) as float64 arrays."""
    directory = Path(directory)
    single, index_path = directory / "model.safetensors", directory / "model.safetensors.index.json"
    if single.exists():
        return read_safetensors(single)[0]
    if not index_path.exists():
        raise CheckpointError(f"{directory}: neither model.safetensors nor model.safetensors.index.json")
    try:
        index = json.loads(index_path.read_text())
        weight_map, total_size = index["weight_map"], index["metadata"]["total_size"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise CheckpointError(f"{index_path}: not an index with metadata.total_size and weight_map ({error})") from None
    tensors = {}
    stored_bytes = 0
    for shard in sorted(set(weight_map.values())):
        if Path(shard).name != shard:
            raise CheckpointError(f"{index_path}: shard {shard!r} is not a file name in the directory")
        shard_tensors, _ = read_safetensors(directory / shard)
        for name, values in shard_tensors.items():
            if weight_map.get(name) != shard:
                raise CheckpointError(f"{directory / shard}: tensor {name!r} is mapped to {weight_map.get(name)!r}")
            tensors[name] = values
        header_length = struct.unpack("<Q", (directory / shard).read_bytes()[:8])[0]
        stored_bytes += (directory / shard).stat().st_size - 8 - header_length
    missing = sorted(set(weight_map) - set(tensors))
    if missing:
        raise CheckpointError(f"{index_path}: tensors {missing[:3]} not in their shards")
    if stored_bytes != total_size:
        raise CheckpointError(f"{index_path}: total_size {total_size} but the shards hold {stored_bytes} bytes")
    return tensors


# ---------------------------------------------------------------- models


class Weights:
    """Tensors by name; each is taken once, and the names left over are an error."""

    def __init__(self, tensors, where):
        self.tensors, self.where, self.taken = tensors, where, set()

    def take(self, name, shape):
        if name not in self.tensors:
            raise CheckpointError(f"{self.where}: missing tensor {name!r}")
        values = self.tensors[name]
        if tuple(values.shape) != tuple(shape):
            raise CheckpointError(f"{self.where}: tensor {name!r} has shape {list(values.shape)}, "
                                  f"expected {list(shape)}")
        self.taken.add(name)
        return torch.from_numpy(np.ascontiguousarray(values, dtype=np.float64))

    def finish(self):
        unexpected = sorted(set(self.tensors) - self.taken)
        if unexpected:
            raise CheckpointError(f"{self.where}: unexpected tensors {unexpected[:3]}")


def _integer(config, key, where, default=None, minimum=1):
    value = config.get(key, default)
    if value is None or isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise CheckpointError(f"{where}: config {key} must be an integer ≥ {minimum}, not {value!r}")
    return value


def _number(config, key, where, default):
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise CheckpointError(f"{where}: config {key} must be a positive number, not {value!r}")
    return float(value)


def _flag(config, key, where, default):
    value = config.get(key, default)
    if not isinstance(value, bool):
        raise CheckpointError(f"{where}: config {key} must be true or false, not {value!r}")
    return value


def gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


GPT2_ACTIVATIONS = {"gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh, "gelu": gelu_erf}


def visible(n, window=None):
    """n × n: True where query p sees key j: j ≤ p, and with a sliding window w also j > p - w (the
    w keys p - w + 1 .. p, the query's own included), as transformers' sliding_window_overlay
    (masking_utils.py: kv_idx > q_idx - sliding_window) and Gemma 2's tril(..., diagonal=-w) mask."""
    query, key = torch.arange(n)[:, None], torch.arange(n)[None, :]
    seen = key <= query
    return seen if window is None else seen & (key > query - window)


def causal_softmax(scores, window=None):
    """Row-wise softmax of heads × n × n scores over the keys each query sees (visible)."""
    hidden = ~visible(scores.shape[-1], window)
    return torch.softmax(scores.masked_fill(hidden, -math.inf), dim=-1)


class GPT2:
    """GPT2LMHeadModel: learned positions, pre-LayerNorm blocks, Conv1D (in × out) weights."""

    def __init__(self, config, tensors, where="checkpoint"):
        self.where = where
        c = config
        self.width = _integer(c, "n_embd", where)
        self.heads = _integer(c, "n_head", where)
        self.layers = _integer(c, "n_layer", where)
        self.positions = _integer(c, "n_positions", where)
        self.vocab = _integer(c, "vocab_size", where)
        if self.width % self.heads:
            raise CheckpointError(f"{where}: n_embd {self.width} is not a multiple of n_head {self.heads}")
        self.head_dim = self.width // self.heads
        self.inner = 4 * self.width if c.get("n_inner") is None else _integer(c, "n_inner", where)
        self.eps = _number(c, "layer_norm_epsilon", where, 1e-5)
        activation = c.get("activation_function", "gelu_new")
        if activation not in GPT2_ACTIVATIONS:
            raise CheckpointError(f"{where}: activation_function {activation!r} is not one of "
                                  f"{sorted(GPT2_ACTIVATIONS)}")
        self.activation = GPT2_ACTIVATIONS[activation]
        self.scale_by_head_dim = _flag(c, "scale_attn_weights", where, True)
        self.scale_by_layer = _flag(c, "scale_attn_by_inverse_layer_idx", where, False)
        _flag(c, "reorder_and_upcast_attn", where, False)  # the same formula, computed in float32 by HF
        tied = _flag(c, "tie_word_embeddings", where, True)

        names = list(tensors)
        prefixed = [n.startswith("transformer.") for n in names if n != "lm_head.weight"]
        if any(prefixed) and not all(prefixed):
            raise CheckpointError(f"{where}: some tensors have the 'transformer.' prefix and some do not")
        p = "transformer." if prefixed and prefixed[0] else ""
        w = Weights(tensors, where)
        C, M, P = self.width, self.inner, self.positions
        self.wte = w.take(p + "wte.weight", (self.vocab, C))
        self.wpe = w.take(p + "wpe.weight", (P, C))
        self.blocks = []
        for layer in range(self.layers):
            h = f"{p}h.{layer}."
            self._check_mask_buffers(w, h)
            self.blocks.append({
                "ln_1": (w.take(h + "ln_1.weight", (C,)), w.take(h + "ln_1.bias", (C,))),
                "c_attn": (w.take(h + "attn.c_attn.weight", (C, 3 * C)), w.take(h + "attn.c_attn.bias", (3 * C,))),
                "c_proj": (w.take(h + "attn.c_proj.weight", (C, C)), w.take(h + "attn.c_proj.bias", (C,))),
                "ln_2": (w.take(h + "ln_2.weight", (C,)), w.take(h + "ln_2.bias", (C,))),
                "c_fc": (w.take(h + "mlp.c_fc.weight", (C, M)), w.take(h + "mlp.c_fc.bias", (M,))),
                "mlp_proj": (w.take(h + "mlp.c_proj.weight", (M, C)), w.take(h + "mlp.c_proj.bias", (C,))),
            })
        self.ln_f = (w.take(p + "ln_f.weight", (C,)), w.take(p + "ln_f.bias", (C,)))
        self.unembed = self.wte if tied else w.take("lm_head.weight", (self.vocab, C))
        w.finish()

    def _check_mask_buffers(self, w, h):
        """Old checkpoints saved the causal mask (tril ones) and the masked value (-1e4); HF ignores
        them on load, and so does the forward here, once they are what they claim to be."""
        P = self.positions
        if h + "attn.bias" in w.tensors:
            mask = w.take(h + "attn.bias", (1, 1, P, P))
            if not torch.equal(mask[0, 0] != 0, torch.tril(torch.ones(P, P, dtype=torch.bool))):
                raise CheckpointError(f"{self.where}: tensor {h + 'attn.bias'!r} is not a causal mask")
        if h + "attn.masked_bias" in w.tensors:
            w.take(h + "attn.masked_bias", ())

    def layer_norm(self, x, weight_bias):
        mean = x.mean(-1, keepdim=True)
        scale = torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + self.eps)
        return (x - mean) / scale * weight_bias[0] + weight_bias[1], scale

    def forward(self, ids):
        n = len(ids)
        if n > self.positions:
            raise CheckpointError(f"{self.where}: {n} tokens exceed n_positions {self.positions}")
        H, d, C = self.heads, self.head_dim, self.width
        hooks = {}
        tokens = torch.as_tensor(ids, dtype=torch.long)
        hooks["hook_embed"] = self.wte[tokens]
        hooks["hook_pos_embed"] = self.wpe[:n]
        x = hooks["hook_embed"] + hooks["hook_pos_embed"]
        attention = []
        for layer, block in enumerate(self.blocks):
            b = f"blocks.{layer}."
            hooks[b + "hook_resid_pre"] = x
            a, hooks[b + "ln1.hook_scale"] = self.layer_norm(x, block["ln_1"])
            qkv = a @ block["c_attn"][0] + block["c_attn"][1]
            q, k, v = qkv[:, :C], qkv[:, C:2 * C], qkv[:, 2 * C:]
            hooks[b + "attn.hook_q"], hooks[b + "attn.hook_k"], hooks[b + "attn.hook_v"] = q, k, v
            qh, kh, vh = (t.reshape(n, H, d).transpose(0, 1) for t in (q, k, v))
            scores = qh @ kh.transpose(1, 2)
            if self.scale_by_head_dim:
                scores = scores / math.sqrt(d)
            if self.scale_by_layer:
                scores = scores / (layer + 1)
            pattern = causal_softmax(scores)
            attention.append(pattern)
            z = pattern @ vh  # H × n × d
            hooks[b + "attn.hook_z"] = z.transpose(0, 1).reshape(n, H * d)
            w_out, b_out = block["c_proj"]
            result = torch.einsum("hnd,hdc->nhc", z, w_out.reshape(H, d, C))
            hooks[b + "attn.hook_result"] = result.reshape(n, H * C)
            hooks[b + "hook_attn_out"] = result.sum(1) + b_out
            x = x + hooks[b + "hook_attn_out"]
            hooks[b + "hook_resid_mid"] = x
            a, hooks[b + "ln2.hook_scale"] = self.layer_norm(x, block["ln_2"])
            hooks[b + "mlp.hook_pre"] = a @ block["c_fc"][0] + block["c_fc"][1]
            hooks[b + "mlp.hook_post"] = self.activation(hooks[b + "mlp.hook_pre"])
            hooks[b + "hook_mlp_out"] = hooks[b + "mlp.hook_post"] @ block["mlp_proj"][0] + block["mlp_proj"][1]
            x = x + hooks[b + "hook_mlp_out"]
            hooks[b + "hook_resid_post"] = x
        final, hooks["ln_final.hook_scale"] = self.layer_norm(x, self.ln_f)
        return final @ self.unembed.T, torch.stack(attention), hooks


# ---------------------------------------------------------------- rotary position embeddings

# Deliberately wrong readings of the formulas, for showing that a comparison can tell them from the
# right one (tools/references/validate_llamacpp.py). The goldens never use them.
READINGS = {
    "adjacent_pairs": "rotary pairs (x[2i], x[2i+1]) instead of Hugging Face's halves (x[i], x[i + r/2])",
    "full_rotary": "every dimension of a head rotates (rotary_pct / partial_rotary_factor ignored)",
    "no_scale": "attention scores not divided by √d",
    "no_rope_scaling": "rope_scaling / rope_parameters' llama3 or linear scaling ignored",
    "no_qk_norm": "the q and k norms skipped",
    "swap_residual": "GPT-NeoX: parallel residual read as sequential, or sequential as parallel",
    "qkv_blocked": "GPT-NeoX: the fused query_key_value rows read as [Q; K; V] blocks, not per head",
    "norm_before": "OLMo-2: the post-attention / post-feedforward norms applied to the sublayer inputs",
    "gate_up_swapped": "Phi-3: gate_up_proj's first half read as up, the second as gate",
    "gelu_tanh": "GPT-NeoX: the tanh approximation of GELU instead of erf (llama.cpp's GELU)",
    "window_wider": "sliding window one wider: query p sees keys p - w .. p (w + 1 of them)",
    "no_window": "the sliding window ignored: every layer fully causal",
    "no_attn_softcap": "Gemma 2: attn_logit_softcapping ignored (no cap · tanh(score / cap))",
    "no_final_softcap": "Gemma 2: final_logit_softcapping ignored",
    "norm_no_offset": "Gemma: RMSNorm weights used as they are, not as 1 + weight",
    "embed_unscaled": "Gemma: the embedding not multiplied by √hidden_size",
    "head_dim_scale": "Gemma: scores × 1/√head_dim instead of query_pre_attn_scalar^-1/2",
    "global_theta": "Gemma 3: rope_theta on the sliding layers too (rope_local_base_freq ignored)",
}


def rope_frequencies(config, rotary_dim, where, readings=()):
    """Inverse frequencies (rotary_dim / 2, float64) of Hugging Face's rope: θ^(-2i/r) for pair i,
    then scaled as rope_type says. Reads transformers 4.x's rope_theta + rope_scaling ({"rope_type"}
    or the older {"type"}) and v5's rope_parameters ({"rope_type", "rope_theta", ...}). Implements
    "default", "linear" (every frequency / factor) and "llama3" (Llama 3.1's wavelength bands);
    refuses every other type."""
    if config.get("rope_parameters") is not None:
        if config.get("rope_scaling") is not None:
            raise CheckpointError(f"{where}: config has both rope_parameters and rope_scaling")
        rope = config["rope_parameters"]
        if not isinstance(rope, dict):
            raise CheckpointError(f"{where}: rope_parameters {rope!r} is not an object")
        if "full_attention" in rope or "sliding_attention" in rope:
            raise CheckpointError(f"{where}: per-layer-type rope_parameters are not implemented")
        theta = _number(rope, "rope_theta", where, None)
        rope_type = rope.get("rope_type", "default")
    else:
        theta = _number(config, "rope_theta", where, 10000.0)
        rope = config.get("rope_scaling")
        if rope is None:
            rope, rope_type = {}, "default"
        elif not isinstance(rope, dict):
            raise CheckpointError(f"{where}: rope_scaling {rope!r} is not an object")
        else:
            rope_type = rope.get("rope_type", rope.get("type"))
            if "type" in rope and "rope_type" in rope and rope["type"] != rope["rope_type"]:
                raise CheckpointError(f"{where}: rope_scaling type {rope['type']!r} and rope_type "
                                      f"{rope['rope_type']!r} differ")
    inv_freq = 1.0 / theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim)
    if rope_type == "default":
        return inv_freq
    if rope_type not in ("linear", "llama3"):
        raise CheckpointError(f"{where}: rope type {rope_type!r} is not implemented (only default, linear, llama3)")
    factor = _number(rope, "factor", where, None)
    if "no_rope_scaling" in readings:
        return inv_freq
    if rope_type == "linear":
        return inv_freq / factor
    return llama3_frequencies(inv_freq, factor, _number(rope, "low_freq_factor", where, None),
                              _number(rope, "high_freq_factor", where, None),
                              _number(rope, "original_max_position_embeddings", where, None))


def llama3_frequencies(inv_freq, factor, low_freq_factor, high_freq_factor, original_context):
    """Llama 3.1's rope scaling: wavelengths 2π/f shorter than original_context / high_freq_factor
    are kept, longer than original_context / low_freq_factor divided by factor, and those between
    interpolated: f · ((1 - s) / factor + s), s = (original_context / wavelength - low) / (high - low)."""
    wavelength = 2 * math.pi / inv_freq
    smooth = (original_context / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = inv_freq * ((1 - smooth) / factor + smooth)
    scaled = torch.where(wavelength > original_context / low_freq_factor, inv_freq / factor, inv_freq)
    between = (wavelength >= original_context / high_freq_factor) & (wavelength <= original_context / low_freq_factor)
    return torch.where(between, smoothed, scaled)


def rotate(x, inv_freq, adjacent=False):
    """Rotary embedding of n × heads × d at positions 0..n-1: the first r = 2·len(inv_freq) dimensions
    of each head rotate, pair i = (x[i], x[i + r/2]) by angle position · inv_freq[i] (x·cos +
    rotate_half(x)·sin); the other d - r pass through. adjacent: the wrong pairing (x[2i], x[2i+1])."""
    n, r = x.shape[0], 2 * len(inv_freq)
    angles = torch.arange(n, dtype=torch.float64)[:, None] * inv_freq[None, :]
    part, rest = x[..., :r], x[..., r:]
    if adjacent:
        cos, sin = angles.cos()[:, None, :], angles.sin()[:, None, :]
        a, b = part[..., 0::2], part[..., 1::2]
        rotated = torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).reshape(part.shape)
    else:
        cos = torch.cat([angles.cos(), angles.cos()], dim=-1)[:, None, :]
        sin = torch.cat([angles.sin(), angles.sin()], dim=-1)[:, None, :]
        rotated_half = torch.cat([-part[..., r // 2:], part[..., :r // 2]], dim=-1)
        rotated = part * cos + rotated_half * sin
    return torch.cat([rotated, rest], dim=-1) if rest.shape[-1] else rotated


def attend(q, k, v, scale, window=None, softcap=None):
    """Causal attention of q (n × H × d) over k, v (n × Hkv × d), query head h reading key/value
    head h // (H / Hkv); scores q·k · scale, then (Gemma 2's attn_logit_softcapping) cap ·
    tanh(score / cap), then the mask (causal, and the sliding window when given). Returns the
    pattern (H × n × n) and z (n × H × d)."""
    heads, kv_heads = q.shape[1], k.shape[1]
    kv_of_head = torch.arange(heads) // (heads // kv_heads)
    kh = k.transpose(0, 1)[kv_of_head]  # H × n × d
    vh = v.transpose(0, 1)[kv_of_head]
    scores = q.transpose(0, 1) @ kh.transpose(1, 2)
    scores = scores * scale if scale != 1 else scores
    if softcap is not None:
        scores = softcap * torch.tanh(scores / softcap)
    pattern = causal_softmax(scores, window)
    return pattern, (pattern @ vh).transpose(0, 1)


def head_results(z, w_out):
    """z (n × H × d) through a Linear output weight (C × H·d), per head: n × H × C."""
    n, heads, d = z.shape
    return torch.einsum("nhd,chd->nhc", z, w_out.reshape(w_out.shape[0], heads, d))


def rms_norm(x, weight, eps):
    """RMSNorm over the last axis: x / √(mean(x²) + eps) · weight, and the scale (… × 1)."""
    scale = torch.sqrt((x ** 2).mean(-1, keepdim=True) + eps)
    return x / scale * weight, scale


def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    scale = torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + eps)
    return (x - mean) / scale * weight + bias, scale


class GPTNeoX:
    """GPTNeoXForCausalLM (Pythia): LayerNorms with biases, one fused query_key_value projection
    whose rows are interleaved per head ([q_h; k_h; v_h] for each head h), rotary embeddings on the
    first int(d · rotary_pct) dimensions of each head (rotate-half pairing inside them), a GELU MLP,
    and either the parallel residual x + attn(ln1(x)) + mlp(ln2(x)) (use_parallel_residual, the
    default) or the sequential one; untied embed_out."""

    def __init__(self, config, tensors, where="checkpoint", readings=()):
        self.where, self.readings = where, frozenset(readings)
        c = config
        self.width = _integer(c, "hidden_size", where)
        self.heads = _integer(c, "num_attention_heads", where)
        self.layers = _integer(c, "num_hidden_layers", where)
        self.inner = _integer(c, "intermediate_size", where)
        self.vocab = _integer(c, "vocab_size", where)
        self.positions = _integer(c, "max_position_embeddings", where)
        if self.width % self.heads:
            raise CheckpointError(f"{where}: hidden_size {self.width} is not a multiple of "
                                  f"num_attention_heads {self.heads}")
        self.head_dim = self.width // self.heads
        self.eps = _number(c, "layer_norm_eps", where, 1e-5)
        pct = _number(c, "rotary_pct", where, 0.25)
        if c.get("partial_rotary_factor", pct) != pct:
            raise CheckpointError(f"{where}: partial_rotary_factor {c['partial_rotary_factor']!r} differs from "
                                  f"rotary_pct {pct!r}")
        base = _number(c, "rotary_emb_base", where, 10000)
        if c.get("rope_theta", base) != base:
            raise CheckpointError(f"{where}: rope_theta {c['rope_theta']!r} differs from rotary_emb_base {base!r}")
        if pct > 1:
            raise CheckpointError(f"{where}: rotary_pct {pct!r} exceeds 1")
        self.stored_rotary_dim = int(self.head_dim * pct)
        self.rotary_dim = self.head_dim if "full_rotary" in self.readings else self.stored_rotary_dim
        if self.rotary_dim % 2:
            raise CheckpointError(f"{where}: rotary dimension {self.rotary_dim} is odd; rotary embeddings rotate pairs")
        if c.get("rope_scaling") is not None:
            raise CheckpointError(f"{where}: rope_scaling {c['rope_scaling']!r} is not implemented (only null)")
        self.inv_freq = rope_frequencies({"rope_theta": base}, self.rotary_dim, where)
        activation = c.get("hidden_act", "gelu")
        if activation not in GPT2_ACTIVATIONS:
            raise CheckpointError(f"{where}: hidden_act {activation!r} is not one of {sorted(GPT2_ACTIVATIONS)}")
        self.activation = gelu_tanh if "gelu_tanh" in self.readings else GPT2_ACTIVATIONS[activation]
        self.parallel = _flag(c, "use_parallel_residual", where, True) != ("swap_residual" in self.readings)
        bias = _flag(c, "attention_bias", where, True)
        tied = _flag(c, "tie_word_embeddings", where, False)

        w = Weights(tensors, where)
        C, M, H, d = self.width, self.inner, self.heads, self.head_dim

        def linear(name, rows, columns, has_bias=True):
            return (w.take(name + ".weight", (rows, columns)), w.take(name + ".bias", (rows,)) if has_bias else None)

        def norm(name):
            return w.take(name + ".weight", (C,)), w.take(name + ".bias", (C,))

        self.embed = w.take("gpt_neox.embed_in.weight", (self.vocab, C))
        self.blocks = []
        for layer in range(self.layers):
            h = f"gpt_neox.layers.{layer}."
            self._skip_buffers(w, h + "attention.")
            self.blocks.append({
                "ln1": norm(h + "input_layernorm"),
                "qkv": linear(h + "attention.query_key_value", 3 * C, C, bias),  # 3C × C, per head [q; k; v]
                "dense": linear(h + "attention.dense", C, C, bias),
                "ln2": norm(h + "post_attention_layernorm"),
                "h_to_4h": linear(h + "mlp.dense_h_to_4h", M, C),
                "4h_to_h": linear(h + "mlp.dense_4h_to_h", C, M),
            })
        self.final_norm = norm("gpt_neox.final_layer_norm")
        self.unembed = self.embed if tied else w.take("embed_out.weight", (self.vocab, C))
        w.finish()

    def _skip_buffers(self, w, a):
        """Checkpoints saved by older transformers hold the attention's causal mask (BOOL tril),
        its masked value and the rotary inverse frequencies; Hugging Face ignores them on load, and
        so does the forward here, once they are what they claim to be."""
        P = self.positions
        if a + "bias" in w.tensors:
            mask = w.take(a + "bias", (1, 1, P, P))
            if not torch.equal(mask[0, 0] != 0, torch.tril(torch.ones(P, P, dtype=torch.bool))):
                raise CheckpointError(f"{self.where}: tensor {a + 'bias'!r} is not a causal mask")
        if a + "masked_bias" in w.tensors:
            w.take(a + "masked_bias", ())
        if a + "rotary_emb.inv_freq" in w.tensors:
            w.take(a + "rotary_emb.inv_freq", (self.stored_rotary_dim // 2,))

    def forward(self, ids):
        n = len(ids)
        H, d, C = self.heads, self.head_dim, self.width
        hooks = {}
        x = self.embed[torch.as_tensor(ids, dtype=torch.long)]
        hooks["hook_embed"] = x
        attention = []
        adjacent = "adjacent_pairs" in self.readings
        scale = 1 if "no_scale" in self.readings else 1 / math.sqrt(d)
        for layer, block in enumerate(self.blocks):
            b = f"blocks.{layer}."
            hooks[b + "hook_resid_pre"] = x
            a, hooks[b + "ln1.hook_scale"] = layer_norm(x, *block["ln1"], self.eps)
            qkv = Rotary.apply(block["qkv"], a)  # n × 3C
            if "qkv_blocked" in self.readings:
                q, k, v = (t.reshape(n, H, d) for t in qkv.split(C, dim=-1))
            else:
                q, k, v = qkv.reshape(n, H, 3 * d).split(d, dim=-1)  # each n × H × d
            hooks[b + "attn.hook_q"], hooks[b + "attn.hook_k"], hooks[b + "attn.hook_v"] = (
                t.reshape(n, H * d) for t in (q, k, v))
            q, k = rotate(q, self.inv_freq, adjacent), rotate(k, self.inv_freq, adjacent)
            hooks[b + "attn.hook_rot_q"], hooks[b + "attn.hook_rot_k"] = q.reshape(n, H * d), k.reshape(n, H * d)
            pattern, z = attend(q, k, v, scale)
            attention.append(pattern)
            hooks[b + "attn.hook_z"] = z.reshape(n, H * d)
            w_out, b_out = block["dense"]
            result = head_results(z, w_out)
            hooks[b + "attn.hook_result"] = result.reshape(n, H * C)
            hooks[b + "hook_attn_out"] = result.sum(1) if b_out is None else result.sum(1) + b_out
            if self.parallel:
                mlp_in = x  # ln2 reads resid_pre; there is no resid_mid
            else:
                x = x + hooks[b + "hook_attn_out"]
                hooks[b + "hook_resid_mid"] = mlp_in = x
            a, hooks[b + "ln2.hook_scale"] = layer_norm(mlp_in, *block["ln2"], self.eps)
            hooks[b + "mlp.hook_pre"] = Rotary.apply(block["h_to_4h"], a)
            hooks[b + "mlp.hook_post"] = self.activation(hooks[b + "mlp.hook_pre"])
            hooks[b + "hook_mlp_out"] = Rotary.apply(block["4h_to_h"], hooks[b + "mlp.hook_post"])
            if self.parallel:
                x = x + hooks[b + "hook_attn_out"] + hooks[b + "hook_mlp_out"]
            else:
                x = x + hooks[b + "hook_mlp_out"]
            hooks[b + "hook_resid_post"] = x
        final, hooks["ln_final.hook_scale"] = layer_norm(x, *self.final_norm, self.eps)
        return final @ self.unembed.T, torch.stack(attention), hooks


class Rotary:
    """LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Olmo2ForCausalLM and Phi3ForCausalLM:
    RMSNorm, rotate-half RoPE, grouped-query attention, gated SiLU MLP. Their differences:

    - llama: optional q/k/v/o biases (attention_bias) and MLP biases (mlp_bias); rope_scaling
      "linear" or "llama3" (4.x spelling, "rope_type" or "type") or v5's rope_parameters.
    - qwen2: q/k/v biases (never o or MLP biases).
    - qwen3: q_norm, k_norm: RMSNorm (weight d) over each head of q and k after the projection,
      before rotation; head_dim given; attention_bias (q/k/v/o) usually false.
    - olmo2: no input norm; q_norm (H·d) and k_norm (Hkv·d): RMSNorm over the whole projection
      before rotation; post_attention_layernorm on the attention output and
      post_feedforward_layernorm on the MLP output before each is added to the residual.
    - phi3: fused qkv_proj ((H·d + 2·Hkv·d) × C: q rows, k rows, v rows) and gate_up_proj
      (2M × C: gate rows, then up rows); partial_rotary_factor; no biases.
    - mistral: Llama without biases, and sliding_window (when not null) on every layer: query p
      sees keys p - w < j ≤ p (modeling_mistral.py picks create_sliding_window_causal_mask,
      masking_utils.py's sliding_window_overlay: kv_idx > q_idx - sliding_window)."""

    def __init__(self, config, tensors, where="checkpoint", readings=()):
        self.where, self.readings = where, frozenset(readings)
        c = config
        self.kind = kind = c.get("model_type")
        self.width = _integer(c, "hidden_size", where)
        self.inner = _integer(c, "intermediate_size", where)
        self.layers = _integer(c, "num_hidden_layers", where)
        self.heads = _integer(c, "num_attention_heads", where)
        self.kv_heads = _integer(c, "num_key_value_heads", where, default=self.heads)
        self.vocab = _integer(c, "vocab_size", where)
        self.positions = _integer(c, "max_position_embeddings", where)
        if self.heads % self.kv_heads:
            raise CheckpointError(f"{where}: num_attention_heads {self.heads} is not a multiple of "
                                  f"num_key_value_heads {self.kv_heads}")
        if c.get("head_dim") is not None:
            self.head_dim = _integer(c, "head_dim", where)
        elif self.width % self.heads:
            raise CheckpointError(f"{where}: hidden_size {self.width} is not a multiple of "
                                  f"num_attention_heads {self.heads}")
        else:
            self.head_dim = self.width // self.heads
        if self.head_dim % 2:
            raise CheckpointError(f"{where}: head dimension {self.head_dim} is odd; rotary embeddings rotate pairs")
        self.eps = _number(c, "rms_norm_eps", where, 1e-6)
        partial = 1.0
        if kind == "phi3":
            rope = c.get("rope_parameters") or {}
            partial = _number(rope if "partial_rotary_factor" in rope else c, "partial_rotary_factor", where, 1.0)
            if partial > 1:
                raise CheckpointError(f"{where}: partial_rotary_factor {partial!r} exceeds 1")
            if c.get("rope_scaling") is not None or rope.get("rope_type", "default") != "default":
                raise CheckpointError(f"{where}: Phi-3 rope scaling {c.get('rope_scaling') or rope!r} is not "
                                      "implemented (only null)")
            window = c.get("sliding_window")
            if window is not None and window < self.positions:
                raise CheckpointError(f"{where}: sliding_window {window!r} below max_position_embeddings "
                                      "is not implemented")
        elif kind != "llama" and (c.get("rope_scaling") is not None or c.get("rope_parameters") is not None):
            raise CheckpointError(f"{where}: rope_scaling {c.get('rope_scaling')!r} is not implemented (only null)")
        self.rotary_dim = self.head_dim if "full_rotary" in self.readings else int(self.head_dim * partial)
        if self.rotary_dim % 2:
            raise CheckpointError(f"{where}: rotary dimension {self.rotary_dim} is odd; rotary embeddings rotate pairs")
        self.inv_freq = rope_frequencies(c, self.rotary_dim, where, self.readings)
        if c.get("hidden_act", "silu") != "silu":
            raise CheckpointError(f"{where}: hidden_act {c['hidden_act']!r} is not implemented (only 'silu')")
        if kind in ("qwen2", "qwen3") and _flag(c, "use_sliding_window", where, False):
            raise CheckpointError(f"{where}: use_sliding_window true is not implemented")
        self.window = None
        if kind == "mistral" and c.get("sliding_window") is not None:  # every layer
            self.window = window_of(c, where, self.readings)
        if kind == "qwen2":
            qkv_bias, o_bias, mlp_bias = True, False, False
        elif kind == "phi3":
            qkv_bias = o_bias = mlp_bias = False
        else:
            qkv_bias = o_bias = _flag(c, "attention_bias", where, False)
            mlp_bias = _flag(c, "mlp_bias", where, False) if kind == "llama" else False
        tied = _flag(c, "tie_word_embeddings", where, False)

        w = Weights(tensors, where)
        C, M, H, Hkv, d = self.width, self.inner, self.heads, self.kv_heads, self.head_dim

        def linear(name, rows, columns, bias):
            return (w.take(name + ".weight", (rows, columns)), w.take(name + ".bias", (rows,)) if bias else None)

        self.embed = w.take("model.embed_tokens.weight", (self.vocab, C))
        self.blocks = []
        for layer in range(self.layers):
            a, m, l_ = f"model.layers.{layer}.self_attn.", f"model.layers.{layer}.mlp.", f"model.layers.{layer}."
            block = {}
            if kind == "phi3":
                weight = w.take(a + "qkv_proj.weight", ((H + 2 * Hkv) * d, C))
                q_w, k_w, v_w = weight.split([H * d, Hkv * d, Hkv * d])
                block.update(q=(q_w, None), k=(k_w, None), v=(v_w, None))
                gate_up = w.take(m + "gate_up_proj.weight", (2 * M, C))
                gate_w, up_w = gate_up.split(M)
                if "gate_up_swapped" in self.readings:
                    gate_w, up_w = up_w, gate_w
                block.update(gate=(gate_w, None), up=(up_w, None))
            else:
                block.update(q=linear(a + "q_proj", H * d, C, qkv_bias), k=linear(a + "k_proj", Hkv * d, C, qkv_bias),
                             v=linear(a + "v_proj", Hkv * d, C, qkv_bias),
                             gate=linear(m + "gate_proj", M, C, mlp_bias), up=linear(m + "up_proj", M, C, mlp_bias))
            block["o"] = linear(a + "o_proj", C, H * d, o_bias)
            block["down"] = linear(m + "down_proj", C, M, mlp_bias)
            if kind == "qwen3":
                block["q_norm"], block["k_norm"] = w.take(a + "q_norm.weight", (d,)), w.take(a + "k_norm.weight", (d,))
            if kind == "olmo2":
                block["q_norm"] = w.take(a + "q_norm.weight", (H * d,))
                block["k_norm"] = w.take(a + "k_norm.weight", (Hkv * d,))
                block["attn_post_norm"] = w.take(l_ + "post_attention_layernorm.weight", (C,))
                block["mlp_post_norm"] = w.take(l_ + "post_feedforward_layernorm.weight", (C,))
            else:
                block["input_norm"] = w.take(l_ + "input_layernorm.weight", (C,))
                block["post_norm"] = w.take(l_ + "post_attention_layernorm.weight", (C,))
            self.blocks.append(block)
        self.norm = w.take("model.norm.weight", (C,))
        self.unembed = self.embed if tied else w.take("lm_head.weight", (self.vocab, C))
        w.finish()

    def rms_norm(self, x, weight):
        return rms_norm(x, weight, self.eps)

    @staticmethod
    def apply(linear, x):
        weight, bias = linear
        return x @ weight.T if bias is None else x @ weight.T + bias

    def attention(self, block, a, hooks, b):
        """The attention sublayer on normalised input a (n × C): output n × C and pattern."""
        n, H, Hkv, d, C = a.shape[0], self.heads, self.kv_heads, self.head_dim, self.width
        q, k, v = (self.apply(block[p], a) for p in "qkv")
        hooks[b + "attn.hook_q"], hooks[b + "attn.hook_k"], hooks[b + "attn.hook_v"] = q, k, v
        use_qk_norm = "q_norm" in block and "no_qk_norm" not in self.readings
        if use_qk_norm and self.kind == "olmo2":  # over the whole projection: scale n × 1
            q, hooks[b + "attn.q_norm.hook_scale"] = self.rms_norm(q, block["q_norm"])
            k, hooks[b + "attn.k_norm.hook_scale"] = self.rms_norm(k, block["k_norm"])
        q, k, v = q.reshape(n, H, d), k.reshape(n, Hkv, d), v.reshape(n, Hkv, d)
        if use_qk_norm and self.kind == "qwen3":  # over each head: scale n × heads
            q, q_scale = self.rms_norm(q, block["q_norm"])
            k, k_scale = self.rms_norm(k, block["k_norm"])
            hooks[b + "attn.q_norm.hook_scale"] = q_scale.reshape(n, H)
            hooks[b + "attn.k_norm.hook_scale"] = k_scale.reshape(n, Hkv)
        adjacent = "adjacent_pairs" in self.readings
        q, k = rotate(q, self.inv_freq, adjacent), rotate(k, self.inv_freq, adjacent)
        hooks[b + "attn.hook_rot_q"] = q.reshape(n, H * d)
        hooks[b + "attn.hook_rot_k"] = k.reshape(n, Hkv * d)
        pattern, z = attend(q, k, v, 1 if "no_scale" in self.readings else 1 / math.sqrt(d), self.window)
        hooks[b + "attn.hook_z"] = z.reshape(n, H * d)
        w_out, b_out = block["o"]
        result = head_results(z, w_out)
        hooks[b + "attn.hook_result"] = result.reshape(n, H * C)
        return (result.sum(1) if b_out is None else result.sum(1) + b_out), pattern

    def mlp(self, block, a, hooks, b):
        hooks[b + "mlp.hook_pre"] = self.apply(block["gate"], a)
        hooks[b + "mlp.hook_pre_linear"] = self.apply(block["up"], a)
        gate, up = hooks[b + "mlp.hook_pre"], hooks[b + "mlp.hook_pre_linear"]
        hooks[b + "mlp.hook_post"] = torch.nn.functional.silu(gate) * up
        return self.apply(block["down"], hooks[b + "mlp.hook_post"])

    def forward(self, ids):
        n = len(ids)
        hooks = {}
        x = self.embed[torch.as_tensor(ids, dtype=torch.long)]
        hooks["hook_embed"] = x
        attention = []
        for layer, block in enumerate(self.blocks):
            b = f"blocks.{layer}."
            hooks[b + "hook_resid_pre"] = x
            if self.kind == "olmo2":
                x = self.olmo2_block(block, x, hooks, b, attention)
            else:
                a, hooks[b + "ln1.hook_scale"] = self.rms_norm(x, block["input_norm"])
                hooks[b + "hook_attn_out"], pattern = self.attention(block, a, hooks, b)
                attention.append(pattern)
                x = x + hooks[b + "hook_attn_out"]
                hooks[b + "hook_resid_mid"] = x
                a, hooks[b + "ln2.hook_scale"] = self.rms_norm(x, block["post_norm"])
                hooks[b + "hook_mlp_out"] = self.mlp(block, a, hooks, b)
                x = x + hooks[b + "hook_mlp_out"]
            hooks[b + "hook_resid_post"] = x
        final, hooks["ln_final.hook_scale"] = self.rms_norm(x, self.norm)
        return final @ self.unembed.T, torch.stack(attention), hooks

    def olmo2_block(self, block, x, hooks, b, attention):
        """x + norm(attn(x)), then + norm(mlp(·)), named as TransformerLens names OLMo-2: hook_attn_out
        and hook_mlp_out are the sublayer outputs before their norm; ln1 is post_attention_layernorm
        and ln2 post_feedforward_layernorm."""
        if "norm_before" in self.readings:  # the wrong, pre-norm reading
            a, hooks[b + "ln1.hook_scale"] = self.rms_norm(x, block["attn_post_norm"])
            hooks[b + "hook_attn_out"], pattern = self.attention(block, a, hooks, b)
            x = x + hooks[b + "hook_attn_out"]
            hooks[b + "hook_resid_mid"] = x
            a, hooks[b + "ln2.hook_scale"] = self.rms_norm(x, block["mlp_post_norm"])
            hooks[b + "hook_mlp_out"] = self.mlp(block, a, hooks, b)
            attention.append(pattern)
            return x + hooks[b + "hook_mlp_out"]
        hooks[b + "hook_attn_out"], pattern = self.attention(block, x, hooks, b)
        attention.append(pattern)
        normed, hooks[b + "ln1.hook_scale"] = self.rms_norm(hooks[b + "hook_attn_out"], block["attn_post_norm"])
        x = x + normed
        hooks[b + "hook_resid_mid"] = x
        hooks[b + "hook_mlp_out"] = self.mlp(block, x, hooks, b)
        normed, hooks[b + "ln2.hook_scale"] = self.rms_norm(hooks[b + "hook_mlp_out"], block["mlp_post_norm"])
        return x + normed


def window_of(config, where, readings=()):
    """The sliding window of a config (sliding_window, an integer ≥ 1) as the readings take it."""
    window = _integer(config, "sliding_window", where)
    if "no_window" in readings:
        return None
    return window + 1 if "window_wider" in readings else window


TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class Gemma:
    """Gemma2ForCausalLM (model_type gemma2) and Gemma3ForCausalLM (gemma3_text), from
    modeling_gemma2.py / modeling_gemma3.py:

    - the embedding times normalizer = √hidden_size rounded to the model's dtype
      (torch.tensor(hidden_size**0.5, dtype=hidden_states.dtype); Gemma 3's embed_scale buffer
      .to(weight.dtype)): the config's torch_dtype (dtype in v5), float32 when absent;
    - RMSNorm x / √(mean(x²) + eps) · (1 + weight) (Gemma2RMSNorm / Gemma3RMSNorm: float32 in
      transformers, float64 here): input_layernorm before attention, post_attention_layernorm on its
      output before the residual add, pre_feedforward_layernorm before the MLP,
      post_feedforward_layernorm on its output before the residual add, model.norm at the end;
    - GeGLU MLP: down(gelu_tanh(gate(x)) · up(x)) (hidden_activation "gelu_pytorch_tanh");
    - scores q·k · query_pre_attn_scalar^-1/2, then (Gemma 2) attn_logit_softcapping: cap ·
      tanh(score / cap), then the causal mask, and on sliding layers the window p - w < j ≤ p;
    - Gemma 2: layer L slides when L is even (Gemma2DecoderLayer: is_sliding = not bool(layer_idx %
      2); layer_types when the config has it); final_logit_softcapping: cap · tanh(logit / cap).
    - Gemma 3: q_norm / k_norm (RMSNorm, 1 + weight, over each head's d values) after the
      projection, before rotation; layer L slides when layer_types[L] == "sliding_attention", or
      without layer_types when (L + 1) % sliding_window_pattern != 0 (is_sliding =
      bool((layer_idx + 1) % config.sliding_window_pattern)); sliding layers rotate with
      rope_local_base_freq, the others with rope_theta; no soft caps unless the config sets them.
    - no biases (attention_bias true is refused), tied embeddings unless tie_word_embeddings is false."""

    def __init__(self, config, tensors, where="checkpoint", readings=()):
        self.where, self.readings = where, frozenset(readings)
        c = config
        self.kind = kind = c.get("model_type")
        gemma3 = kind == "gemma3_text"
        self.width = _integer(c, "hidden_size", where)
        self.inner = _integer(c, "intermediate_size", where)
        self.layers = _integer(c, "num_hidden_layers", where)
        self.heads = _integer(c, "num_attention_heads", where)
        self.kv_heads = _integer(c, "num_key_value_heads", where, default=self.heads)
        self.vocab = _integer(c, "vocab_size", where)
        self.positions = _integer(c, "max_position_embeddings", where)
        self.head_dim = _integer(c, "head_dim", where, default=256)
        if self.heads % self.kv_heads:
            raise CheckpointError(f"{where}: num_attention_heads {self.heads} is not a multiple of "
                                  f"num_key_value_heads {self.kv_heads}")
        if self.head_dim % 2:
            raise CheckpointError(f"{where}: head dimension {self.head_dim} is odd; rotary embeddings rotate pairs")
        self.eps = _number(c, "rms_norm_eps", where, 1e-6)
        activation = c.get("hidden_activation", "gelu_pytorch_tanh")
        if activation != "gelu_pytorch_tanh":
            raise CheckpointError(f"{where}: hidden_activation {activation!r} is not implemented "
                                  "(only 'gelu_pytorch_tanh')")
        if _flag(c, "attention_bias", where, False):
            raise CheckpointError(f"{where}: attention_bias true is not implemented")
        if c.get("rope_scaling") is not None or c.get("rope_parameters") is not None:
            raise CheckpointError(f"{where}: rope_scaling {c.get('rope_scaling') or c.get('rope_parameters')!r} "
                                  "is not implemented (only null)")
        scalar = _number(c, "query_pre_attn_scalar", where, 256)
        self.scale = 1 / math.sqrt(self.head_dim if "head_dim_scale" in self.readings else scalar)
        default_caps = (None, None) if gemma3 else (50.0, 30.0)
        self.attn_softcap = self._cap(c, "attn_logit_softcapping", default_caps[0], "no_attn_softcap")
        self.final_softcap = self._cap(c, "final_logit_softcapping", default_caps[1], "no_final_softcap")
        self.window = window_of(c, where, self.readings)
        self.sliding = self._sliding_layers(c, where)
        theta = _number(c, "rope_theta", where, 1000000.0 if gemma3 else 10000.0)
        local = _number(c, "rope_local_base_freq", where, 10000.0) if gemma3 else theta
        if "global_theta" in self.readings:
            local = theta
        self.inv_freq = rope_frequencies({"rope_theta": theta}, self.head_dim, where)
        self.local_inv_freq = rope_frequencies({"rope_theta": local}, self.head_dim, where)
        dtype_name = c.get("torch_dtype", c.get("dtype")) or "float32"
        if dtype_name not in TORCH_DTYPES:
            raise CheckpointError(f"{where}: torch_dtype {dtype_name!r} is not one of {sorted(TORCH_DTYPES)}")
        # transformers: torch.tensor(hidden_size**0.5, dtype=hidden_states.dtype)
        self.normalizer = float(torch.tensor(self.width ** 0.5, dtype=TORCH_DTYPES[dtype_name]))
        tied = _flag(c, "tie_word_embeddings", where, True)

        w = Weights(tensors, where)
        C, M, H, Hkv, d = self.width, self.inner, self.heads, self.kv_heads, self.head_dim
        self.embed = w.take("model.embed_tokens.weight", (self.vocab, C))
        self.blocks = []
        for layer in range(self.layers):
            a, m, l_ = f"model.layers.{layer}.self_attn.", f"model.layers.{layer}.mlp.", f"model.layers.{layer}."
            block = {"q": w.take(a + "q_proj.weight", (H * d, C)), "k": w.take(a + "k_proj.weight", (Hkv * d, C)),
                     "v": w.take(a + "v_proj.weight", (Hkv * d, C)), "o": w.take(a + "o_proj.weight", (C, H * d)),
                     "gate": w.take(m + "gate_proj.weight", (M, C)), "up": w.take(m + "up_proj.weight", (M, C)),
                     "down": w.take(m + "down_proj.weight", (C, M))}
            for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                         "post_feedforward_layernorm"):
                block[norm] = w.take(l_ + norm + ".weight", (C,))
            if gemma3:
                block["q_norm"], block["k_norm"] = w.take(a + "q_norm.weight", (d,)), w.take(a + "k_norm.weight", (d,))
            self.blocks.append(block)
        self.norm = w.take("model.norm.weight", (C,))
        self.unembed = self.embed if tied else w.take("lm_head.weight", (self.vocab, C))
        w.finish()

    def _cap(self, config, key, default, reading):
        cap = config.get(key, default)
        if cap is not None:
            cap = _number(config, key, self.where, default)
        return None if reading in self.readings else cap

    def _sliding_layers(self, c, where):
        """Which layers use the sliding window (a list of booleans)."""
        types = c.get("layer_types")
        if types is not None:
            if not (isinstance(types, list) and len(types) == self.layers
                    and set(types) <= {"sliding_attention", "full_attention"}):
                raise CheckpointError(f"{where}: layer_types must give sliding_attention or full_attention for "
                                      f"each of the {self.layers} layers, not {types!r}")
            return [t == "sliding_attention" for t in types]
        if self.kind == "gemma2":
            return [layer % 2 == 0 for layer in range(self.layers)]
        key = "sliding_window_pattern" if "sliding_window_pattern" in c else "_sliding_window_pattern"
        pattern = _integer(c, key, where, default=6)
        return [(layer + 1) % pattern != 0 for layer in range(self.layers)]

    def rms_norm(self, x, weight):
        """Gemma's RMSNorm: x / √(mean(x²) + eps) · (1 + weight)."""
        return rms_norm(x, weight if "norm_no_offset" in self.readings else 1 + weight, self.eps)

    def forward(self, ids):
        n = len(ids)
        H, Hkv, d, C = self.heads, self.kv_heads, self.head_dim, self.width
        hooks = {}
        x = self.embed[torch.as_tensor(ids, dtype=torch.long)]
        if "embed_unscaled" not in self.readings:
            x = x * self.normalizer
        hooks["hook_embed"] = x  # TransformerLens folds √C into W_E: hook_embed is after the scaling
        attention = []
        adjacent = "adjacent_pairs" in self.readings
        for layer, block in enumerate(self.blocks):
            b = f"blocks.{layer}."
            hooks[b + "hook_resid_pre"] = x
            a, hooks[b + "ln1.hook_scale"] = self.rms_norm(x, block["input_layernorm"])
            q, k, v = a @ block["q"].T, a @ block["k"].T, a @ block["v"].T
            hooks[b + "attn.hook_q"], hooks[b + "attn.hook_k"], hooks[b + "attn.hook_v"] = q, k, v
            q, k, v = q.reshape(n, H, d), k.reshape(n, Hkv, d), v.reshape(n, Hkv, d)
            if "q_norm" in block and "no_qk_norm" not in self.readings:  # over each head: scale n × heads
                q, q_scale = self.rms_norm(q, block["q_norm"])
                k, k_scale = self.rms_norm(k, block["k_norm"])
                hooks[b + "attn.q_norm.hook_scale"] = q_scale.reshape(n, H)
                hooks[b + "attn.k_norm.hook_scale"] = k_scale.reshape(n, Hkv)
            sliding = self.sliding[layer]
            inv_freq = self.local_inv_freq if sliding else self.inv_freq
            q, k = rotate(q, inv_freq, adjacent), rotate(k, inv_freq, adjacent)
            hooks[b + "attn.hook_rot_q"], hooks[b + "attn.hook_rot_k"] = q.reshape(n, H * d), k.reshape(n, Hkv * d)
            pattern, z = attend(q, k, v, self.scale, self.window if sliding else None, self.attn_softcap)
            attention.append(pattern)
            hooks[b + "attn.hook_z"] = z.reshape(n, H * d)
            result = head_results(z, block["o"])
            hooks[b + "attn.hook_result"] = result.reshape(n, H * C)
            out, hooks[b + "ln1_post.hook_scale"] = self.rms_norm(result.sum(1), block["post_attention_layernorm"])
            hooks[b + "hook_attn_out"] = out
            x = x + out
            hooks[b + "hook_resid_mid"] = x
            a, hooks[b + "ln2.hook_scale"] = self.rms_norm(x, block["pre_feedforward_layernorm"])
            hooks[b + "mlp.hook_pre"] = a @ block["gate"].T
            hooks[b + "mlp.hook_pre_linear"] = a @ block["up"].T
            hooks[b + "mlp.hook_post"] = gelu_tanh(hooks[b + "mlp.hook_pre"]) * hooks[b + "mlp.hook_pre_linear"]
            out, hooks[b + "ln2_post.hook_scale"] = self.rms_norm(hooks[b + "mlp.hook_post"] @ block["down"].T,
                                                                  block["post_feedforward_layernorm"])
            hooks[b + "hook_mlp_out"] = out
            x = x + out
            hooks[b + "hook_resid_post"] = x
        final, hooks["ln_final.hook_scale"] = self.rms_norm(x, self.norm)
        logits = final @ self.unembed.T
        if self.final_softcap is not None:
            logits = self.final_softcap * torch.tanh(logits / self.final_softcap)
        return logits, torch.stack(attention), hooks


MODELS = {"gpt2": ("GPT2LMHeadModel", GPT2), "llama": ("LlamaForCausalLM", Rotary),
          "qwen2": ("Qwen2ForCausalLM", Rotary), "gpt_neox": ("GPTNeoXForCausalLM", GPTNeoX),
          "qwen3": ("Qwen3ForCausalLM", Rotary), "olmo2": ("Olmo2ForCausalLM", Rotary),
          "phi3": ("Phi3ForCausalLM", Rotary), "gemma2": ("Gemma2ForCausalLM", Gemma),
          "gemma3_text": ("Gemma3ForCausalLM", Gemma), "mistral": ("MistralForCausalLM", Rotary)}


def load(directory, readings=()):
    """The model of a checkpoint directory (GPT2, GPTNeoX, Rotary or Gemma), its config checked against its
    tensors. readings: names from READINGS, deliberately wrong variants (never for goldens)."""
    directory = Path(directory)
    config = read_config(directory)
    kind = config.get("model_type")
    where = str(directory)
    if kind not in MODELS:
        raise CheckpointError(f"{where}: model_type {kind!r} is not one of {sorted(MODELS)}")
    architectures = config.get("architectures", [MODELS[kind][0]])
    if architectures != [MODELS[kind][0]]:
        raise CheckpointError(f"{where}: architectures {architectures!r} for model_type {kind!r} "
                              f"(expected [{MODELS[kind][0]!r}])")
    unknown = sorted(set(readings) - set(READINGS))
    if unknown:
        raise ValueError(f"unknown readings {unknown}")
    model_class = MODELS[kind][1]
    if model_class is GPT2:
        if readings:
            raise ValueError("GPT-2 has no readings")
        return GPT2(config, read_weights(directory), where)
    return model_class(config, read_weights(directory), where, readings)


def run(model, ids):
    """(logits n × vocab, attention layers × heads × n × n, hooks {name: n × width}) in float64."""
    if len(ids) == 0:
        raise CheckpointError(f"{model.where}: no tokens")
    bad = [i for i in ids if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < model.vocab]
    if bad:
        raise CheckpointError(f"{model.where}: token ids {bad[:3]} outside [0, {model.vocab})")
    with torch.inference_mode():
        logits, attention, hooks = model.forward([int(i) for i in ids])
    return logits.numpy(), attention.numpy(), {name: value.numpy() for name, value in hooks.items()}


def write_goldens(directory, prompts, comment=None, out=None, regenerate=REGENERATE):
    """golden.safetensors and golden.json in `out` (default: the checkpoint directory) for a list of id lists;
    golden.json says `regenerate` is the command that writes them again."""
    directory = Path(directory)
    out = Path(out) if out else directory
    out.mkdir(parents=True, exist_ok=True)
    model = load(directory)
    specs, arrays, entries, hook_names = [], {}, [], None
    for k, ids in enumerate(prompts):
        logits, attention, hooks = run(model, ids)
        hook_names = list(hooks)
        key = f"p{k}"
        entries.append({"key": key, "ids": [int(i) for i in ids]})
        arrays[f"{key}.ids"] = np.asarray(ids, dtype=np.int64)
        arrays[f"{key}.logits"] = logits
        arrays[f"{key}.attention"] = attention
        for name, value in hooks.items():
            arrays[f"{key}.{name}"] = value
    for name, values in arrays.items():
        specs.append(hf_checkpoints.Spec(name, values.shape, "I64" if values.dtype == np.int64 else "F64", "golden"))
    hf_checkpoints.write_safetensors(out / "golden.safetensors", specs,
                                     lambda spec: hf_checkpoints.encode(arrays[spec.name], spec.dtype))
    description = {
        "about": comment or "float64 reference forward of this checkpoint (tools/references/hf_reference.py)",
        "regenerate": regenerate,
        "architecture": MODELS[read_config(directory)["model_type"]][0],
        "prompts": entries,
        "hooks": hook_names,
    }
    with open(out / "golden.json", "w") as file:
        file.write(json.dumps(description, indent=1) + "\n")


# ---------------------------------------------------------------- the committed test checkpoints

# name: (architecture, config, dtype, write_checkpoint options, seed)
TEST_CHECKPOINTS = {
    "gpt2_prefixed_f32": ("gpt2", {"vocab_size": 96, "n_positions": 32, "n_embd": 32, "n_layer": 2, "n_head": 4,
                                   "activation_function": "gelu_new"},
                          "F32", {"prefix": "transformer.", "mask_buffers": True, "legacy_config": True}, 11),
    "gpt2_f16": ("gpt2", {"vocab_size": 80, "n_positions": 24, "n_embd": 32, "n_layer": 3, "n_head": 4,
                          "n_inner": 96, "activation_function": "gelu", "scale_attn_by_inverse_layer_idx": True},
                 "F16", {"prefix": ""}, 12),
    "gpt2_unscaled_f32": ("gpt2", {"vocab_size": 64, "n_positions": 24, "n_embd": 32, "n_layer": 2, "n_head": 2,
                                   "activation_function": "gelu_pytorch_tanh", "scale_attn_weights": False},
                          "F32", {"prefix": "transformer."}, 13),
    "llama_gqa_bf16_shards": ("llama", {"vocab_size": 128, "hidden_size": 64, "intermediate_size": 96,
                                        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                                        "max_position_embeddings": 24, "rope_theta": 10000.0, "rms_norm_eps": 1e-5,
                                        "tie_word_embeddings": True},
                              "BF16", {"shards": 2}, 14),
    "llama_head_dim_untied": ("llama", {"vocab_size": 72, "hidden_size": 32, "intermediate_size": 80,
                                        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 1,
                                        "head_dim": 12, "max_position_embeddings": 24, "rope_theta": 10000.0,
                                        "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "attention_bias": True,
                                        "mlp_bias": True},
                              "F32", {}, 15),
    "qwen2_bias": ("qwen2", {"vocab_size": 100, "hidden_size": 48, "intermediate_size": 112, "num_hidden_layers": 2,
                             "num_attention_heads": 6, "num_key_value_heads": 2, "max_position_embeddings": 24,
                             "rope_theta": 1000000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
                             "use_sliding_window": False, "sliding_window": 32, "max_window_layers": 2},
                   "F32", {}, 16),
    "gpt_neox_parallel": ("gpt_neox", {"vocab_size": 96, "hidden_size": 48, "intermediate_size": 128,
                                       "num_hidden_layers": 2, "num_attention_heads": 3,
                                       "max_position_embeddings": 24, "rotary_pct": 0.25, "rotary_emb_base": 10000,
                                       "use_parallel_residual": True, "layer_norm_eps": 1e-5},
                          "F32", {"mask_buffers": True}, 17),
    "gpt_neox_sequential": ("gpt_neox", {"vocab_size": 80, "hidden_size": 32, "intermediate_size": 96,
                                         "num_hidden_layers": 2, "num_attention_heads": 2,
                                         "max_position_embeddings": 24, "rotary_pct": 0.5, "rotary_emb_base": 1000,
                                         "use_parallel_residual": False, "layer_norm_eps": 1e-6},
                            "F32", {}, 18),
    # Llama 3.2's rope_scaling with original_max_position_embeddings 256 for head size 32 and θ 5e5:
    # wavelengths 2π·θ^(2i/32) of pairs 0-2 are below 256 / 4 (kept), of 3-4 between 64 and 256
    # (interpolated), of 5-15 above 256 (divided by 32).
    "llama3_rope_scaling": ("llama", {"vocab_size": 96, "hidden_size": 64, "intermediate_size": 96,
                                      "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
                                      "max_position_embeddings": 24, "rope_theta": 500000.0, "rms_norm_eps": 1e-5,
                                      "tie_word_embeddings": True, "bos_token_id": 0, "eos_token_id": 1,
                                      "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0,
                                                       "low_freq_factor": 1.0,
                                                       "original_max_position_embeddings": 256,
                                                       "rope_type": "llama3"}},
                            "F32", {}, 19),
    "llama_linear_rope_parameters": ("llama", {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
                                               "num_hidden_layers": 2, "num_attention_heads": 4,
                                               "num_key_value_heads": 2, "max_position_embeddings": 24,
                                               "rms_norm_eps": 1e-6, "tie_word_embeddings": False,
                                               "rope_parameters": {"factor": 4.0, "rope_theta": 10000.0,
                                                                   "rope_type": "linear"}},
                                     "F32", {}, 20),
    "llama_linear_rope_scaling_type": ("llama", {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64,
                                                 "num_hidden_layers": 2, "num_attention_heads": 4,
                                                 "num_key_value_heads": 4, "max_position_embeddings": 24,
                                                 "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
                                                 "rope_scaling": {"factor": 2.0, "type": "linear"}},
                                       "F32", {}, 21),
    "qwen3_qk_norm": ("qwen3", {"vocab_size": 96, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                                "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
                                "max_position_embeddings": 24, "max_window_layers": 2, "rope_theta": 1000000.0,
                                "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "use_sliding_window": False},
                      "F32", {}, 22),
    "olmo2_post_norm": ("olmo2", {"vocab_size": 80, "hidden_size": 32, "intermediate_size": 80, "num_hidden_layers": 2,
                                  "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 24,
                                  "rope_theta": 500000, "rms_norm_eps": 1e-6, "tie_word_embeddings": False},
                        "F32", {}, 23),
    "phi3_fused_partial": ("phi3", {"vocab_size": 72, "hidden_size": 48, "intermediate_size": 64,
                                    "num_hidden_layers": 2, "num_attention_heads": 3, "num_key_value_heads": 1,
                                    "max_position_embeddings": 24, "original_max_position_embeddings": 24,
                                    "partial_rotary_factor": 0.5, "rope_theta": 10000.0, "rms_norm_eps": 1e-5,
                                    "tie_word_embeddings": False},
                           "F32", {}, 24),
    # Gemma 2 with its caps scaled to this model's scores and logits (real: 50 and 30), a window of 4
    # in 24 positions on layer 0 (layer 1 is global), query_pre_attn_scalar 64 ≠ head_dim 16.
    "gemma2_softcap_window": ("gemma2", {"vocab_size": 96, "hidden_size": 32, "intermediate_size": 64,
                                        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
                                        "head_dim": 16, "max_position_embeddings": 24, "query_pre_attn_scalar": 64,
                                        "attn_logit_softcapping": 2.5, "final_logit_softcapping": 8.0,
                                        "sliding_window": 4, "rope_theta": 10000.0, "rms_norm_eps": 1e-6},
                              "F32", {}, 25),
    # Gemma 3 as transformers 4.50 writes it: sliding_window_pattern 3 over 3 layers (0, 1 slide; 2 is
    # global); multi-query; rope_local_base_freq 1e4 on the sliding layers, rope_theta 1e6 on the global.
    "gemma3_pattern": ("gemma3_text", {"vocab_size": 80, "hidden_size": 32, "intermediate_size": 64,
                                       "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 1,
                                       "head_dim": 16, "max_position_embeddings": 24, "query_pre_attn_scalar": 64,
                                       "sliding_window": 7, "sliding_window_pattern": 3, "rope_theta": 1000000.0,
                                       "rope_local_base_freq": 10000.0, "rms_norm_eps": 1e-6},
                       "F32", {}, 26),
    # Gemma 3 as transformers 4.55 writes it: layer_types (0 and 2 slide, 1 is global, which no
    # sliding_window_pattern of 3 layers gives; the _sliding_window_pattern 6 written beside it must be
    # ignored); BF16, so √40 is rounded to 6.3125 as transformers rounds the normalizer; local θ 1000.
    "gemma3_layer_types": ("gemma3_text", {"vocab_size": 72, "hidden_size": 40, "intermediate_size": 96,
                                           "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
                                           "head_dim": 12, "max_position_embeddings": 24, "query_pre_attn_scalar": 48,
                                           "sliding_window": 5,
                                           "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
                                           "rope_theta": 1000000.0, "rope_local_base_freq": 1000.0,
                                           "rms_norm_eps": 1e-6},
                           "BF16", {}, 27),
    "mistral_window": ("mistral", {"vocab_size": 80, "hidden_size": 32, "intermediate_size": 80, "num_hidden_layers": 2,
                                   "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
                                   "max_position_embeddings": 24, "sliding_window": 5, "rope_theta": 10000.0,
                                   "rms_norm_eps": 1e-5, "tie_word_embeddings": False},
                       "F32", {}, 28),
}


def context_of(config):
    return config["n_positions"] if config["model_type"] == "gpt2" else config["max_position_embeddings"]


def test_prompts(config, seed):
    """Prompts of 1 token, 9 tokens and the whole context, drawn over the vocabulary."""
    rng = np.random.default_rng([seed, 2026])
    return [rng.integers(0, config["vocab_size"], size=n).tolist() for n in (1, 9, context_of(config))]


def llama3_bands(config):
    """How many rotary pairs Llama 3.1's scaling keeps, interpolates and divides by factor."""
    rope = config["rope_scaling"]
    d = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    wavelength = 2 * math.pi * config["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    old = rope["original_max_position_embeddings"]
    kept = int((wavelength < old / rope["high_freq_factor"]).sum())
    scaled = int((wavelength > old / rope["low_freq_factor"]).sum())
    return kept, d // 2 - kept - scaled, scaled


def regenerate(out=TEST_DATA, names=None):
    """Write the test checkpoints and their goldens under out/<name>/."""
    for name, (architecture, config, dtype, options, seed) in TEST_CHECKPOINTS.items():
        if names and name not in names:
            continue
        directory = Path(out) / name
        full = hf_checkpoints.write_checkpoint(directory, architecture, config, dtype, seed, **options)
        if (full.get("rope_scaling") or {}).get("rope_type") == "llama3" and 0 in llama3_bands(full):
            raise CheckpointError(f"{name}: llama3 scaling must keep, interpolate and scale some frequencies, "
                                  f"not {llama3_bands(full)}")
        write_goldens(directory, test_prompts(full, seed),
                      f"float64 reference forward of the test checkpoint {name} (tools/references/hf_reference.py)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", nargs="?", help="checkpoint directory to write goldens for")
    parser.add_argument("--ids", action="append", help="comma-separated token ids of one prompt (repeatable)")
    parser.add_argument("--regenerate", action="store_true", help=f"rewrite {TEST_DATA.relative_to(ROOT)}/*")
    parser.add_argument("--out", default=None,
                        help=f"where to write (default: the checkpoint directory; with --regenerate, "
                             f"{TEST_DATA.relative_to(ROOT)})")
    parser.add_argument("--comment", default=None, help="what golden.json's 'about' says")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.regenerate:
        regenerate(args.out or TEST_DATA)
        return
    if not args.directory or not args.ids:
        parser.error("give a checkpoint directory and --ids, or --regenerate")
    try:
        prompts = [[int(i) for i in ids.split(",")] for ids in args.ids]
    except ValueError:
        parser.error(f"--ids must be comma-separated integers: {args.ids}")
    try:
        command = shlex.join(["/usr/bin/python3", "tools/references/hf_reference.py"] + (argv if argv is not None else sys.argv[1:]))
        write_goldens(args.directory, prompts, args.comment, args.out, command if args.out else REGENERATE)
    except CheckpointError as error:
        sys.exit(f"error: {error}")


if __name__ == "__main__":
    main()
