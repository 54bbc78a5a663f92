"""tools/references/hf_reference.py: the float64 reference forward of Hugging Face checkpoints against a second,
naive formulation written here (per position, per head loops in NumPy, its own file reading), the
committed goldens under tests/data/hf, and the reference's refusals of what it does not implement."""

import json
import math
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from references import hf_checkpoints  # noqa: E402
from references import hf_reference  # noqa: E402
from references.hf_reference import CheckpointError, read_safetensors  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests/data/hf"
NAMES = ["gpt2_prefixed_f32", "gpt2_f16", "gpt2_unscaled_f32", "llama_gqa_bf16_shards", "llama_head_dim_untied",
         "qwen2_bias", "gpt_neox_parallel", "gpt_neox_sequential", "llama3_rope_scaling", "llama_linear_rope_parameters",
         "llama_linear_rope_scaling_type", "qwen3_qk_norm", "olmo2_post_norm", "phi3_fused_partial",
         "gemma2_softcap_window", "gemma3_pattern", "gemma3_layer_types", "mistral_window"]


# ---------------------------------------------------------------- the naive formulation


def naive_tensors(directory):
    """Every model*.safetensors tensor of a directory as float64, read without hf_reference."""
    tensors = {}
    for path in sorted(Path(directory).glob("model*.safetensors")):
        raw = path.read_bytes()
        length = int.from_bytes(raw[:8], "little")
        header = json.loads(raw[8:8 + length])
        header.pop("__metadata__", None)
        for name, entry in header.items():
            start, end = entry["data_offsets"]
            chunk = bytearray(raw[8 + length + start:8 + length + end])
            if entry["dtype"] == "BF16":
                values = torch.frombuffer(chunk, dtype=torch.bfloat16).double().numpy()
            else:
                values = np.frombuffer(bytes(chunk), {"F32": "<f4", "F16": "<f2", "BOOL": "u1"}[entry["dtype"]])
                values = values.astype(np.float64)
            tensors[name] = values.reshape(entry["shape"])
    return tensors


def naive_softmax(scores):
    top = max(scores)
    weights = [math.exp(s - top) for s in scores]
    total = math.fsum(weights)
    return [w / total for w in weights]


def naive_attention(q, k, v, heads, kv_heads, head_dim, scale, window=None, softcap=None):
    """Per query position t and head: softmax over keys first..t (first = 0, or t - window + 1 with a
    window) of (q·k)·scale (through cap·tanh(·/cap) with a soft cap), then the weighted values."""
    n = q.shape[0]
    d = head_dim
    pattern = np.zeros((heads, n, n))
    z = np.zeros((n, heads * d))
    for h in range(heads):
        g = h // (heads // kv_heads)
        for t in range(n):
            first = 0 if window is None else max(0, t - window + 1)
            query = q[t, h * d:(h + 1) * d]
            scores = [float(np.dot(query, k[j, g * d:(g + 1) * d])) * scale for j in range(first, t + 1)]
            if softcap is not None:
                scores = [softcap * math.tanh(s / softcap) for s in scores]
            weights = naive_softmax(scores)
            pattern[h, t, first:t + 1] = weights
            for j, w in zip(range(first, t + 1), weights):
                z[t, h * d:(h + 1) * d] += w * v[j, g * d:(g + 1) * d]
    return pattern, z


def naive_layer_norm(row, weight, bias, eps):
    mean = math.fsum(row) / len(row)
    variance = math.fsum((x - mean) ** 2 for x in row) / len(row)
    scale = math.sqrt(variance + eps)
    return (row - mean) / scale * weight + bias, scale


def naive_rms_norm(row, weight, eps):
    scale = math.sqrt(math.fsum(x * x for x in row) / len(row) + eps)
    return row / scale * weight, scale


def naive_gpt2(config, w, ids):
    p = "transformer." if "transformer.wte.weight" in w else ""
    C, H, eps = config["n_embd"], config["n_head"], config["layer_norm_epsilon"]
    d = C // H
    activation = {
        "gelu": np.vectorize(lambda x: 0.5 * x * (1 + math.erf(x / math.sqrt(2)))),
        "gelu_new": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
        "gelu_pytorch_tanh": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
    }[config["activation_function"]]
    n = len(ids)
    hooks = {"hook_embed": np.stack([w[p + "wte.weight"][i] for i in ids]),
             "hook_pos_embed": np.stack([w[p + "wpe.weight"][t] for t in range(n)])}
    x = hooks["hook_embed"] + hooks["hook_pos_embed"]
    patterns = []
    for layer in range(config["n_layer"]):
        h = f"{p}h.{layer}."
        b = f"blocks.{layer}."
        hooks[b + "hook_resid_pre"] = x.copy()
        normed = [naive_layer_norm(x[t], w[h + "ln_1.weight"], w[h + "ln_1.bias"], eps) for t in range(n)]
        hooks[b + "ln1.hook_scale"] = np.array([[s] for _, s in normed])
        qkv = np.stack([a @ w[h + "attn.c_attn.weight"] + w[h + "attn.c_attn.bias"] for a, _ in normed])
        q, k, v = qkv[:, :C], qkv[:, C:2 * C], qkv[:, 2 * C:]
        scale = 1.0
        if config.get("scale_attn_weights", True):
            scale /= math.sqrt(d)
        if config.get("scale_attn_by_inverse_layer_idx", False):
            scale /= layer + 1
        pattern, z = naive_attention(q, k, v, H, H, d, scale)
        patterns.append(pattern)
        w_out = w[h + "attn.c_proj.weight"]
        result = np.zeros((n, H * C))
        for t in range(n):
            for head in range(H):
                result[t, head * C:(head + 1) * C] = z[t, head * d:(head + 1) * d] @ w_out[head * d:(head + 1) * d]
        attn_out = result.reshape(n, H, C).sum(axis=1) + w[h + "attn.c_proj.bias"]
        hooks.update({b + "attn.hook_q": q, b + "attn.hook_k": k, b + "attn.hook_v": v, b + "attn.hook_z": z,
                      b + "attn.hook_result": result, b + "hook_attn_out": attn_out})
        x = x + attn_out
        hooks[b + "hook_resid_mid"] = x.copy()
        normed = [naive_layer_norm(x[t], w[h + "ln_2.weight"], w[h + "ln_2.bias"], eps) for t in range(n)]
        hooks[b + "ln2.hook_scale"] = np.array([[s] for _, s in normed])
        pre = np.stack([a @ w[h + "mlp.c_fc.weight"] + w[h + "mlp.c_fc.bias"] for a, _ in normed])
        post = activation(pre)
        out = post @ w[h + "mlp.c_proj.weight"] + w[h + "mlp.c_proj.bias"]
        hooks.update({b + "mlp.hook_pre": pre, b + "mlp.hook_post": post, b + "hook_mlp_out": out})
        x = x + out
        hooks[b + "hook_resid_post"] = x.copy()
    normed = [naive_layer_norm(x[t], w[p + "ln_f.weight"], w[p + "ln_f.bias"], eps) for t in range(n)]
    hooks["ln_final.hook_scale"] = np.array([[s] for _, s in normed])
    unembed = w["lm_head.weight"] if "lm_head.weight" in w else w[p + "wte.weight"]
    logits = np.stack([a @ unembed.T for a, _ in normed])
    return logits, np.stack(patterns), hooks


def naive_rotate(x, heads, d, frequencies):
    """Rotary embedding as a rotation of each pair (i, i + r/2), r = 2·len(frequencies), of each
    head by position · frequencies[i]; dimensions r..d-1 unchanged."""
    out = x.copy()
    half = len(frequencies)
    for t in range(x.shape[0]):
        for h in range(heads):
            for i, frequency in enumerate(frequencies):
                angle = t * frequency
                a, b = x[t, h * d + i], x[t, h * d + i + half]
                out[t, h * d + i] = a * math.cos(angle) - b * math.sin(angle)
                out[t, h * d + i + half] = b * math.cos(angle) + a * math.sin(angle)
    return out


def naive_frequencies(config, rotary_dim):
    """θ^(-2i/r) per pair, scaled by the config's rope type (written from Hugging Face's
    _compute_linear_scaling_rope_parameters and _compute_llama3_parameters)."""
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    theta = rope.get("rope_theta", config.get("rope_theta", config.get("rotary_emb_base", 10000.0)))
    kind = rope.get("rope_type", rope.get("type", "default"))
    frequencies = []
    for i in range(rotary_dim // 2):
        f = theta ** (-2 * i / rotary_dim)
        if kind == "linear":
            f /= rope["factor"]
        elif kind == "llama3":
            wavelength = 2 * math.pi / f
            old = rope["original_max_position_embeddings"]
            low, high = rope["low_freq_factor"], rope["high_freq_factor"]
            if wavelength > old / low:
                f /= rope["factor"]
            elif wavelength >= old / high:
                s = (old / wavelength - low) / (high - low)
                f = (1 - s) * f / rope["factor"] + s * f
        frequencies.append(f)
    return frequencies


def naive_gelu(x):
    return np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))(x)


def naive_gpt_neox(config, w, ids):
    C, H, eps = config["hidden_size"], config["num_attention_heads"], config["layer_norm_eps"]
    d = C // H
    frequencies = naive_frequencies(config, int(d * config["rotary_pct"]))
    n = len(ids)
    x = np.stack([w["gpt_neox.embed_in.weight"][i] for i in ids])
    hooks = {"hook_embed": x.copy()}
    patterns = []
    for layer in range(config["num_hidden_layers"]):
        p, b = f"gpt_neox.layers.{layer}.", f"blocks.{layer}."
        hooks[b + "hook_resid_pre"] = x.copy()
        normed = [naive_layer_norm(x[t], w[p + "input_layernorm.weight"], w[p + "input_layernorm.bias"], eps)
                  for t in range(n)]
        hooks[b + "ln1.hook_scale"] = np.array([[s] for _, s in normed])
        qkv = np.stack([w[p + "attention.query_key_value.weight"] @ a + w[p + "attention.query_key_value.bias"]
                        for a, _ in normed])
        q, k, v = np.zeros((n, C)), np.zeros((n, C)), np.zeros((n, C))
        for h in range(H):  # rows of head h: q, then k, then v
            q[:, h * d:(h + 1) * d] = qkv[:, 3 * h * d:(3 * h + 1) * d]
            k[:, h * d:(h + 1) * d] = qkv[:, (3 * h + 1) * d:(3 * h + 2) * d]
            v[:, h * d:(h + 1) * d] = qkv[:, (3 * h + 2) * d:(3 * h + 3) * d]
        rot_q, rot_k = naive_rotate(q, H, d, frequencies), naive_rotate(k, H, d, frequencies)
        pattern, z = naive_attention(rot_q, rot_k, v, H, H, d, 1 / math.sqrt(d))
        patterns.append(pattern)
        w_out = w[p + "attention.dense.weight"]
        result = np.zeros((n, H * C))
        for t in range(n):
            for head in range(H):
                result[t, head * C:(head + 1) * C] = w_out[:, head * d:(head + 1) * d] @ z[t, head * d:(head + 1) * d]
        attn_out = result.reshape(n, H, C).sum(axis=1) + w[p + "attention.dense.bias"]
        hooks.update({b + "attn.hook_q": q, b + "attn.hook_k": k, b + "attn.hook_v": v, b + "attn.hook_rot_q": rot_q,
                      b + "attn.hook_rot_k": rot_k, b + "attn.hook_z": z, b + "attn.hook_result": result,
                      b + "hook_attn_out": attn_out})
        if config["use_parallel_residual"]:
            mlp_in = x
        else:
            mlp_in = x = x + attn_out
            hooks[b + "hook_resid_mid"] = x.copy()
        normed = [naive_layer_norm(mlp_in[t], w[p + "post_attention_layernorm.weight"],
                                   w[p + "post_attention_layernorm.bias"], eps) for t in range(n)]
        hooks[b + "ln2.hook_scale"] = np.array([[s] for _, s in normed])
        pre = np.stack([w[p + "mlp.dense_h_to_4h.weight"] @ a + w[p + "mlp.dense_h_to_4h.bias"] for a, _ in normed])
        post = naive_gelu(pre)
        out = post @ w[p + "mlp.dense_4h_to_h.weight"].T + w[p + "mlp.dense_4h_to_h.bias"]
        hooks.update({b + "mlp.hook_pre": pre, b + "mlp.hook_post": post, b + "hook_mlp_out": out})
        x = x + attn_out + out if config["use_parallel_residual"] else x + out
        hooks[b + "hook_resid_post"] = x.copy()
    normed = [naive_layer_norm(x[t], w["gpt_neox.final_layer_norm.weight"], w["gpt_neox.final_layer_norm.bias"], eps)
              for t in range(n)]
    hooks["ln_final.hook_scale"] = np.array([[s] for _, s in normed])
    return np.stack([w["embed_out.weight"] @ a for a, _ in normed]), np.stack(patterns), hooks


def naive_rotary(config, w, ids):
    C, H, eps = config["hidden_size"], config["num_attention_heads"], config["rms_norm_eps"]
    Hkv = config["num_key_value_heads"]
    d = config.get("head_dim") or C // H
    kind = config["model_type"]
    qkv_bias = kind == "qwen2" or config.get("attention_bias", False)
    o_bias = kind != "qwen2" and config.get("attention_bias", False)
    mlp_bias = config.get("mlp_bias", False)
    frequencies = naive_frequencies(config, int(d * config.get("partial_rotary_factor", 1.0)))
    if kind == "phi3":  # split the fused projections into the names the rest reads
        for layer in range(config["num_hidden_layers"]):
            a_, m_ = f"model.layers.{layer}.self_attn.", f"model.layers.{layer}.mlp."
            qkv, gate_up = w[a_ + "qkv_proj.weight"], w[m_ + "gate_up_proj.weight"]
            w[a_ + "q_proj.weight"], w[a_ + "k_proj.weight"] = qkv[:H * d], qkv[H * d:(H + Hkv) * d]
            w[a_ + "v_proj.weight"] = qkv[(H + Hkv) * d:]
            M = config["intermediate_size"]
            w[m_ + "gate_proj.weight"], w[m_ + "up_proj.weight"] = gate_up[:M], gate_up[M:]

    def linear(name, x, bias):
        return x @ w[name + ".weight"].T + (w[name + ".bias"] if bias else 0)

    def rows_rms_norm(x, weight):
        normed = [naive_rms_norm(row, weight, eps) for row in x]
        return np.stack([row for row, _ in normed]), np.array([s for _, s in normed])

    n = len(ids)
    x = np.stack([w["model.embed_tokens.weight"][i] for i in ids])
    hooks = {"hook_embed": x.copy()}
    patterns = []
    for layer in range(config["num_hidden_layers"]):
        a_, m_, b = f"model.layers.{layer}.self_attn.", f"model.layers.{layer}.mlp.", f"blocks.{layer}."
        hooks[b + "hook_resid_pre"] = x.copy()
        if kind == "olmo2":
            a = x
        else:
            normed = [naive_rms_norm(x[t], w[f"model.layers.{layer}.input_layernorm.weight"], eps) for t in range(n)]
            hooks[b + "ln1.hook_scale"] = np.array([[s] for _, s in normed])
            a = np.stack([row for row, _ in normed])
        q, k, v = (linear(a_ + f"{p}_proj", a, qkv_bias) for p in "qkv")
        hooks.update({b + "attn.hook_q": q, b + "attn.hook_k": k})
        normed_q, normed_k = q.copy(), k.copy()
        if kind == "olmo2":  # one norm over each position's whole projection
            normed_q, q_scale = rows_rms_norm(q, w[a_ + "q_norm.weight"])
            normed_k, k_scale = rows_rms_norm(k, w[a_ + "k_norm.weight"])
            hooks[b + "attn.q_norm.hook_scale"], hooks[b + "attn.k_norm.hook_scale"] = q_scale[:, None], k_scale[:, None]
        if kind == "qwen3":  # one norm per position and head
            q_scale, k_scale = np.zeros((n, H)), np.zeros((n, Hkv))
            for h in range(H):
                normed_q[:, h * d:(h + 1) * d], q_scale[:, h] = rows_rms_norm(q[:, h * d:(h + 1) * d], w[a_ + "q_norm.weight"])
            for h in range(Hkv):
                normed_k[:, h * d:(h + 1) * d], k_scale[:, h] = rows_rms_norm(k[:, h * d:(h + 1) * d], w[a_ + "k_norm.weight"])
            hooks[b + "attn.q_norm.hook_scale"], hooks[b + "attn.k_norm.hook_scale"] = q_scale, k_scale
        rot_q, rot_k = naive_rotate(normed_q, H, d, frequencies), naive_rotate(normed_k, Hkv, d, frequencies)
        window = config.get("sliding_window") if kind == "mistral" else None
        pattern, z = naive_attention(rot_q, rot_k, v, H, Hkv, d, 1 / math.sqrt(d), window)
        patterns.append(pattern)
        w_out = w[a_ + "o_proj.weight"]
        result = np.zeros((n, H * C))
        for t in range(n):
            for head in range(H):
                result[t, head * C:(head + 1) * C] = w_out[:, head * d:(head + 1) * d] @ z[t, head * d:(head + 1) * d]
        attn_out = result.reshape(n, H, C).sum(axis=1) + (w[a_ + "o_proj.bias"] if o_bias else 0)
        hooks.update({b + "attn.hook_v": v, b + "attn.hook_rot_q": rot_q,
                      b + "attn.hook_rot_k": rot_k, b + "attn.hook_z": z, b + "attn.hook_result": result,
                      b + "hook_attn_out": attn_out})
        if kind == "olmo2":  # the norm on the sublayer's output, TransformerLens's ln1
            normed_out, scale = rows_rms_norm(attn_out, w[f"model.layers.{layer}.post_attention_layernorm.weight"])
            hooks[b + "ln1.hook_scale"] = scale[:, None]
            x = x + normed_out
            a = x
        else:
            x = x + attn_out
            normed = [naive_rms_norm(x[t], w[f"model.layers.{layer}.post_attention_layernorm.weight"], eps)
                      for t in range(n)]
            hooks[b + "ln2.hook_scale"] = np.array([[s] for _, s in normed])
            a = np.stack([row for row, _ in normed])
        hooks[b + "hook_resid_mid"] = x.copy()
        gate, up = linear(m_ + "gate_proj", a, mlp_bias), linear(m_ + "up_proj", a, mlp_bias)
        post = gate / (1 + np.exp(-gate)) * up
        out = linear(m_ + "down_proj", post, mlp_bias)
        hooks.update({b + "mlp.hook_pre": gate, b + "mlp.hook_pre_linear": up, b + "mlp.hook_post": post,
                      b + "hook_mlp_out": out})
        if kind == "olmo2":  # TransformerLens's ln2
            out, scale = rows_rms_norm(out, w[f"model.layers.{layer}.post_feedforward_layernorm.weight"])
            hooks[b + "ln2.hook_scale"] = scale[:, None]
        x = x + out
        hooks[b + "hook_resid_post"] = x.copy()
    normed = [naive_rms_norm(x[t], w["model.norm.weight"], eps) for t in range(n)]
    hooks["ln_final.hook_scale"] = np.array([[s] for _, s in normed])
    unembed = w["model.embed_tokens.weight"] if config["tie_word_embeddings"] else w["lm_head.weight"]
    return np.stack([row @ unembed.T for row, _ in normed]), np.stack(patterns), hooks


def round_to_bfloat16(x):
    """x rounded to the nearest bfloat16 (ties to even), by its float32 bits."""
    bits = int(np.array(x, dtype="<f4").view("<u4"))
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return float(np.array(bits, dtype="<u4").view("<f4"))


def naive_gemma(config, w, ids):
    """Gemma 2 and Gemma 3 (text): scaled embedding, four (1 + weight) RMSNorms per layer, GeGLU,
    query_pre_attn_scalar, soft caps, sliding windows on the layers the config names."""
    C, H, Hkv, d = (config[k] for k in ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim"))
    eps, L = config["rms_norm_eps"], config["num_hidden_layers"]
    gemma3 = config["model_type"] == "gemma3_text"
    if "layer_types" in config:
        sliding = [t == "sliding_attention" for t in config["layer_types"]]
    elif gemma3:
        sliding = [(layer + 1) % config["sliding_window_pattern"] != 0 for layer in range(L)]
    else:
        sliding = [layer % 2 == 0 for layer in range(L)]
    normalizer = float(np.float32(math.sqrt(C)))
    if config["torch_dtype"] == "bfloat16":
        normalizer = round_to_bfloat16(normalizer)

    def frequencies(theta):
        return [theta ** (-2 * i / d) for i in range(d // 2)]

    def norm(x, weight):
        rows = [naive_rms_norm(row, 1 + weight, eps) for row in x]
        return np.stack([row for row, _ in rows]), np.array([[s] for _, s in rows])

    def head_norm(x, weight, count):
        out, scales = x.copy(), np.zeros((x.shape[0], count))
        for h in range(count):
            part, scale = norm(x[:, h * d:(h + 1) * d], weight)
            out[:, h * d:(h + 1) * d], scales[:, h] = part, scale[:, 0]
        return out, scales

    n = len(ids)
    x = np.stack([w["model.embed_tokens.weight"][i] for i in ids]) * normalizer
    hooks = {"hook_embed": x.copy()}
    patterns = []
    for layer in range(L):
        p, b = f"model.layers.{layer}.", f"blocks.{layer}."
        hooks[b + "hook_resid_pre"] = x.copy()
        a, hooks[b + "ln1.hook_scale"] = norm(x, w[p + "input_layernorm.weight"])
        q, k, v = (a @ w[p + f"self_attn.{t}_proj.weight"].T for t in "qkv")
        hooks.update({b + "attn.hook_q": q, b + "attn.hook_k": k, b + "attn.hook_v": v})
        if gemma3:
            q, hooks[b + "attn.q_norm.hook_scale"] = head_norm(q, w[p + "self_attn.q_norm.weight"], H)
            k, hooks[b + "attn.k_norm.hook_scale"] = head_norm(k, w[p + "self_attn.k_norm.weight"], Hkv)
        theta = config["rope_local_base_freq"] if gemma3 and sliding[layer] else config["rope_theta"]
        rot_q, rot_k = naive_rotate(q, H, d, frequencies(theta)), naive_rotate(k, Hkv, d, frequencies(theta))
        pattern, z = naive_attention(rot_q, rot_k, v, H, Hkv, d, config["query_pre_attn_scalar"] ** -0.5,
                                     config["sliding_window"] if sliding[layer] else None,
                                     config.get("attn_logit_softcapping"))
        patterns.append(pattern)
        w_out = w[p + "self_attn.o_proj.weight"]
        result = np.zeros((n, H * C))
        for t in range(n):
            for head in range(H):
                result[t, head * C:(head + 1) * C] = w_out[:, head * d:(head + 1) * d] @ z[t, head * d:(head + 1) * d]
        attn_out, hooks[b + "ln1_post.hook_scale"] = norm(result.reshape(n, H, C).sum(axis=1),
                                                          w[p + "post_attention_layernorm.weight"])
        hooks.update({b + "attn.hook_rot_q": rot_q, b + "attn.hook_rot_k": rot_k, b + "attn.hook_z": z,
                      b + "attn.hook_result": result, b + "hook_attn_out": attn_out})
        x = x + attn_out
        hooks[b + "hook_resid_mid"] = x.copy()
        a, hooks[b + "ln2.hook_scale"] = norm(x, w[p + "pre_feedforward_layernorm.weight"])
        gate, up = a @ w[p + "mlp.gate_proj.weight"].T, a @ w[p + "mlp.up_proj.weight"].T
        post = 0.5 * gate * (1 + np.tanh(math.sqrt(2 / math.pi) * (gate + 0.044715 * gate ** 3))) * up
        out, hooks[b + "ln2_post.hook_scale"] = norm(post @ w[p + "mlp.down_proj.weight"].T,
                                                     w[p + "post_feedforward_layernorm.weight"])
        hooks.update({b + "mlp.hook_pre": gate, b + "mlp.hook_pre_linear": up, b + "mlp.hook_post": post,
                      b + "hook_mlp_out": out})
        x = x + out
        hooks[b + "hook_resid_post"] = x.copy()
    final, hooks["ln_final.hook_scale"] = norm(x, w["model.norm.weight"])
    logits = final @ w["model.embed_tokens.weight"].T
    cap = config.get("final_logit_softcapping")
    if cap is not None:
        logits = cap * np.tanh(logits / cap)
    return logits, np.stack(patterns), hooks


def naive(directory, ids):
    config = json.loads((Path(directory) / "config.json").read_text())
    w = naive_tensors(directory)
    formulation = {"gpt2": naive_gpt2, "gpt_neox": naive_gpt_neox, "gemma2": naive_gemma,
                   "gemma3_text": naive_gemma}.get(config["model_type"], naive_rotary)
    return formulation(config, w, ids)


def assert_close(actual, expected, what):
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} vs {expected.shape}"
    error = np.max(np.abs(actual - expected) / np.maximum(1, np.abs(expected)))
    assert error <= 1e-12, f"{what}: relative error {error:.3g}"


# ---------------------------------------------------------------- goldens against the naive formulation


@pytest.fixture(scope="module")
def goldens():
    return {name: (read_safetensors(DATA / name / "golden.safetensors")[0],
                   json.loads((DATA / name / "golden.json").read_text())) for name in NAMES}


@pytest.mark.parametrize("name", NAMES)
def test_goldens_agree_with_the_naive_formulation(goldens, name):
    tensors, description = goldens[name]
    assert len(description["prompts"]) == 3
    for prompt in description["prompts"]:
        key, ids = prompt["key"], prompt["ids"]
        assert tensors[f"{key}.ids"].tolist() == ids
        logits, attention, hooks = naive(DATA / name, ids)
        assert set(hooks) == set(description["hooks"])
        assert_close(tensors[f"{key}.logits"], logits, f"{name} {key} logits")
        assert_close(tensors[f"{key}.attention"], attention, f"{name} {key} attention")
        for hook, values in hooks.items():
            assert_close(tensors[f"{key}.{hook}"], values, f"{name} {key} {hook}")


def test_reference_agrees_with_the_naive_formulation_on_fresh_checkpoints(tmp_path):
    # Configurations the committed checkpoints leave out: GPT-2 untied in BF16, Llama with one
    # query head per key/value head and biases in F16, Qwen2 untied with head_dim given.
    cases = [
        ("gpt2", {"vocab_size": 30, "n_positions": 10, "n_embd": 12, "n_layer": 2, "n_head": 3,
                  "scale_attn_by_inverse_layer_idx": True, "activation_function": "gelu"},
         "BF16", {"tied": False, "prefix": ""}),
        ("llama", {"vocab_size": 30, "hidden_size": 16, "intermediate_size": 20, "num_hidden_layers": 2,
                   "num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 10,
                   "rope_theta": 500.0, "attention_bias": True, "mlp_bias": True}, "F16", {"tied": True}),
        ("qwen2", {"vocab_size": 30, "hidden_size": 16, "intermediate_size": 20, "num_hidden_layers": 1,
                   "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 6,
                   "max_position_embeddings": 10}, "F32", {"tied": False}),
    ]
    for index, (architecture, config, dtype, options) in enumerate(cases):
        directory = tmp_path / str(index)
        hf_checkpoints.write_checkpoint(directory, architecture, config, dtype, seed=index, **options)
        ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
        logits, attention, hooks = hf_reference.run(hf_reference.load(directory), ids)
        expected_logits, expected_attention, expected_hooks = naive(directory, ids)
        assert_close(logits, expected_logits, f"{architecture} logits")
        assert_close(attention, expected_attention, f"{architecture} attention")
        assert set(hooks) == set(expected_hooks)
        for hook, values in expected_hooks.items():
            assert_close(hooks[hook], values, f"{architecture} {hook}")


# ---------------------------------------------------------------- the committed files


def gpt2_hooks(layers):
    names = ["hook_embed", "hook_pos_embed"]
    for layer in range(layers):
        b = f"blocks.{layer}."
        names += [b + "hook_resid_pre", b + "ln1.hook_scale", b + "attn.hook_q", b + "attn.hook_k",
                  b + "attn.hook_v", b + "attn.hook_z", b + "attn.hook_result", b + "hook_attn_out",
                  b + "hook_resid_mid", b + "ln2.hook_scale", b + "mlp.hook_pre", b + "mlp.hook_post",
                  b + "hook_mlp_out", b + "hook_resid_post"]
    return names + ["ln_final.hook_scale"]


def rotary_hooks(layers):
    names = ["hook_embed"]
    for layer in range(layers):
        b = f"blocks.{layer}."
        names += [b + "hook_resid_pre", b + "ln1.hook_scale", b + "attn.hook_q", b + "attn.hook_k",
                  b + "attn.hook_v", b + "attn.hook_rot_q", b + "attn.hook_rot_k", b + "attn.hook_z",
                  b + "attn.hook_result", b + "hook_attn_out", b + "hook_resid_mid", b + "ln2.hook_scale",
                  b + "mlp.hook_pre", b + "mlp.hook_pre_linear", b + "mlp.hook_post", b + "hook_mlp_out",
                  b + "hook_resid_post"]
    return names + ["ln_final.hook_scale"]


def gpt_neox_hooks(layers, parallel):
    names = ["hook_embed"]
    for layer in range(layers):
        b = f"blocks.{layer}."
        names += [b + "hook_resid_pre", b + "ln1.hook_scale", b + "attn.hook_q", b + "attn.hook_k",
                  b + "attn.hook_v", b + "attn.hook_rot_q", b + "attn.hook_rot_k", b + "attn.hook_z",
                  b + "attn.hook_result", b + "hook_attn_out"] + ([] if parallel else [b + "hook_resid_mid"]) + \
                 [b + "ln2.hook_scale", b + "mlp.hook_pre", b + "mlp.hook_post", b + "hook_mlp_out",
                  b + "hook_resid_post"]
    return names + ["ln_final.hook_scale"]


def qwen3_hooks(layers):
    names = rotary_hooks(layers)
    for layer in range(layers):
        b = f"blocks.{layer}."
        at = names.index(b + "attn.hook_rot_q")
        names[at:at] = [b + "attn.q_norm.hook_scale", b + "attn.k_norm.hook_scale"]
    return names


def olmo2_hooks(layers):
    names = ["hook_embed"]
    for layer in range(layers):
        b = f"blocks.{layer}."
        names += [b + "hook_resid_pre", b + "attn.hook_q", b + "attn.hook_k", b + "attn.hook_v",
                  b + "attn.q_norm.hook_scale", b + "attn.k_norm.hook_scale", b + "attn.hook_rot_q",
                  b + "attn.hook_rot_k", b + "attn.hook_z", b + "attn.hook_result", b + "hook_attn_out",
                  b + "ln1.hook_scale", b + "hook_resid_mid", b + "mlp.hook_pre", b + "mlp.hook_pre_linear",
                  b + "mlp.hook_post", b + "hook_mlp_out", b + "ln2.hook_scale", b + "hook_resid_post"]
    return names + ["ln_final.hook_scale"]


def gemma_hooks(layers, qk_norm):
    names = ["hook_embed"]
    for layer in range(layers):
        b = f"blocks.{layer}."
        names += [b + "hook_resid_pre", b + "ln1.hook_scale", b + "attn.hook_q", b + "attn.hook_k", b + "attn.hook_v"]
        if qk_norm:
            names += [b + "attn.q_norm.hook_scale", b + "attn.k_norm.hook_scale"]
        names += [b + "attn.hook_rot_q", b + "attn.hook_rot_k", b + "attn.hook_z", b + "attn.hook_result",
                  b + "ln1_post.hook_scale", b + "hook_attn_out", b + "hook_resid_mid", b + "ln2.hook_scale",
                  b + "mlp.hook_pre", b + "mlp.hook_pre_linear", b + "mlp.hook_post", b + "ln2_post.hook_scale",
                  b + "hook_mlp_out", b + "hook_resid_post"]
    return names + ["ln_final.hook_scale"]


def expected_hooks(config):
    kind = config["model_type"]
    if kind == "gpt2":
        return gpt2_hooks(config["n_layer"])
    layers = config["num_hidden_layers"]
    if kind == "gpt_neox":
        return gpt_neox_hooks(layers, config["use_parallel_residual"])
    if kind in ("gemma2", "gemma3_text"):
        return gemma_hooks(layers, kind == "gemma3_text")
    return {"qwen3": qwen3_hooks, "olmo2": olmo2_hooks}.get(kind, rotary_hooks)(layers)


def sliding_layers(config):
    """Which layers slide, and the window (None for none), read independently of hf_reference."""
    kind, layers = config["model_type"], config.get("num_hidden_layers", config.get("n_layer"))
    if kind == "mistral":
        return [True] * layers, config["sliding_window"]
    if kind == "gemma2":
        return [layer % 2 == 0 for layer in range(layers)], config["sliding_window"]
    if kind == "gemma3_text":
        if "layer_types" in config:
            return [t == "sliding_attention" for t in config["layer_types"]], config["sliding_window"]
        return [(layer + 1) % config["sliding_window_pattern"] != 0 for layer in range(layers)], \
            config["sliding_window"]
    return [False] * layers, None


@pytest.mark.parametrize("name", NAMES)
def test_committed_goldens_are_named_and_shaped_as_documented(goldens, name):
    tensors, description = goldens[name]
    config = json.loads((DATA / name / "config.json").read_text())
    gpt2 = config["model_type"] == "gpt2"
    if gpt2:
        layers, H, C, V, context = config["n_layer"], config["n_head"], config["n_embd"], config["vocab_size"], \
            config["n_positions"]
        Hkv, d, M = H, C // H, config.get("n_inner") or 4 * C
    else:
        layers, H, C, V = (config[k] for k in ("num_hidden_layers", "num_attention_heads", "hidden_size",
                                                "vocab_size"))
        Hkv = config.get("num_key_value_heads", H)
        context, M = config["max_position_embeddings"], config["intermediate_size"]
        d = config.get("head_dim") or C // H
    assert description["hooks"] == expected_hooks(config)
    assert description["architecture"] == config["architectures"][0]
    assert [len(p["ids"]) for p in description["prompts"]] == [1, 9, context]
    widths = {"hook_embed": C, "hook_pos_embed": C, "hook_resid_pre": C, "hook_scale": 1, "hook_q": H * d,
              "hook_k": Hkv * d, "hook_v": Hkv * d, "hook_rot_q": H * d, "hook_rot_k": Hkv * d, "hook_z": H * d,
              "hook_result": H * C, "hook_attn_out": C, "hook_resid_mid": C, "hook_pre": M, "hook_pre_linear": M,
              "hook_post": M, "hook_mlp_out": C, "hook_resid_post": C}
    expected_names = set()
    for prompt in description["prompts"]:
        key, n = prompt["key"], len(prompt["ids"])
        expected_names |= {f"{key}.ids", f"{key}.logits", f"{key}.attention"}
        assert tensors[f"{key}.logits"].shape == (n, V)
        attention = tensors[f"{key}.attention"]
        assert attention.shape == (layers, H, n, n)
        np.testing.assert_allclose(attention.sum(-1), 1, atol=1e-14)
        assert np.all(np.triu(attention, 1) == 0)
        slides, window = sliding_layers(config)
        for layer, slide in enumerate(slides):  # keys before p - w + 1 get nothing; those inside do
            outside = np.tril(np.ones((n, n), dtype=bool), -window) if slide else np.zeros((n, n), dtype=bool)
            assert np.all(attention[layer][:, outside] == 0) and np.all(attention[layer][:, ~outside & np.tri(n, dtype=bool)] > 0)
        for hook in description["hooks"]:
            expected_names.add(f"{key}.{hook}")
            width = widths[hook.split(".")[-1]]
            if hook.endswith("_norm.hook_scale") and config["model_type"] in ("qwen3", "gemma3_text"):
                width = H if ".q_norm." in hook else Hkv  # one scale per position and head
            assert tensors[f"{key}.{hook}"].shape == (n, width), hook
    assert set(tensors) == expected_names
    assert sum(f.stat().st_size for f in (DATA / name).iterdir()) <= 1 << 20


@pytest.mark.parametrize("name", NAMES)
def test_committed_attention_is_neither_uniform_nor_one_hot(goldens, name):
    attention = goldens[name][0]["p2.attention"]
    rows = attention[:, :, 7:, :]  # queries that see at least 8 keys
    top = rows.max(-1)
    assert 0.25 < top.mean() < 0.7, f"mean largest weight {top.mean():.3f}"
    assert top.max() < 0.999 and top.min() > 1.5 / attention.shape[-1]


def test_committed_checkpoints_are_the_documented_variants():
    def config(name):
        return json.loads((DATA / name / "config.json").read_text())

    def names(name):
        return set(naive_tensors(DATA / name))

    c = config("gpt2_prefixed_f32")
    assert c["activation_function"] == "gelu_new" and "tie_word_embeddings" not in c and "n_inner" not in c
    assert "transformer.h.1.attn.bias" in names("gpt2_prefixed_f32")
    assert "lm_head.weight" not in names("gpt2_prefixed_f32")
    c = config("gpt2_f16")
    assert (c["torch_dtype"], c["activation_function"], c["scale_attn_by_inverse_layer_idx"], c["n_inner"]) == \
        ("float16", "gelu", True, 3 * c["n_embd"])
    assert "wte.weight" in names("gpt2_f16")
    c = config("gpt2_unscaled_f32")
    assert (c["scale_attn_weights"], c["activation_function"]) == (False, "gelu_pytorch_tanh")
    c = config("llama_gqa_bf16_shards")
    assert (c["num_attention_heads"], c["num_key_value_heads"], c["torch_dtype"], c["tie_word_embeddings"]) == \
        (4, 2, "bfloat16", True)
    assert len(list((DATA / "llama_gqa_bf16_shards").glob("model-0000?-of-00002.safetensors"))) == 2
    assert "lm_head.weight" not in names("llama_gqa_bf16_shards")
    c = config("llama_head_dim_untied")
    assert c["head_dim"] != c["hidden_size"] // c["num_attention_heads"] and c["num_key_value_heads"] == 1
    assert c["attention_bias"] and c["mlp_bias"] and not c["tie_word_embeddings"]
    assert "lm_head.weight" in names("llama_head_dim_untied")
    c = config("qwen2_bias")
    assert (c["rope_theta"], c["num_attention_heads"], c["num_key_value_heads"], c["use_sliding_window"]) == \
        (1e6, 6, 2, False)


def test_committed_newer_architectures_are_the_documented_variants():
    def config(name):
        return json.loads((DATA / name / "config.json").read_text())

    def names(name):
        return set(naive_tensors(DATA / name))

    c = config("gpt_neox_parallel")
    assert c["use_parallel_residual"] and c["rotary_pct"] == 0.25 and c["attention_bias"]
    assert {"gpt_neox.layers.1.attention.bias", "gpt_neox.layers.1.attention.masked_bias",
            "gpt_neox.layers.1.attention.rotary_emb.inv_freq", "embed_out.weight"} <= names("gpt_neox_parallel")
    c = config("gpt_neox_sequential")
    assert not c["use_parallel_residual"] and c["rotary_pct"] == 0.5 and c["rotary_emb_base"] == 1000
    assert not any(".attention.bias" in n for n in names("gpt_neox_sequential"))
    c = config("llama3_rope_scaling")
    assert c["rope_scaling"]["rope_type"] == "llama3" and hf_reference.llama3_bands(c) == (3, 2, 11)
    c = config("llama_linear_rope_parameters")
    assert c["rope_parameters"] == {"factor": 4.0, "rope_theta": 10000.0, "rope_type": "linear"}
    assert "rope_theta" not in c and "rope_scaling" not in c and c["dtype"] == "float32" and "torch_dtype" not in c
    assert config("llama_linear_rope_scaling_type")["rope_scaling"] == {"factor": 2.0, "type": "linear"}
    c = config("qwen3_qk_norm")
    assert c["head_dim"] != c["hidden_size"] // c["num_attention_heads"] and c["tie_word_embeddings"]
    assert not c["attention_bias"] and not c["use_sliding_window"]
    assert "model.layers.0.self_attn.q_norm.weight" in names("qwen3_qk_norm")
    c = config("olmo2_post_norm")
    assert naive_tensors(DATA / "olmo2_post_norm")["model.layers.0.self_attn.k_norm.weight"].shape == \
        (c["num_key_value_heads"] * c["hidden_size"] // c["num_attention_heads"],)
    assert not any("input_layernorm" in n for n in names("olmo2_post_norm"))
    c = config("phi3_fused_partial")
    assert c["partial_rotary_factor"] == 0.5 and c["rope_scaling"] is None
    assert "model.layers.0.mlp.gate_up_proj.weight" in names("phi3_fused_partial")


def test_committed_windowed_architectures_are_the_documented_variants():
    def config(name):
        return json.loads((DATA / name / "config.json").read_text())

    def names(name):
        return set(naive_tensors(DATA / name))

    for name in ("gemma2_softcap_window", "gemma3_pattern", "gemma3_layer_types", "mistral_window"):
        c = config(name)
        assert c["sliding_window"] < c["max_position_embeddings"] and c["head_dim"] != c["hidden_size"] // \
            c["num_attention_heads"] and c["num_key_value_heads"] < c["num_attention_heads"], name
        if name.startswith("gemma"):
            assert c["query_pre_attn_scalar"] != c["head_dim"] and "tie_word_embeddings" not in c
            assert c["hidden_activation"] == "gelu_pytorch_tanh" and "lm_head.weight" not in names(name)
            assert {"model.layers.0.pre_feedforward_layernorm.weight",
                    "model.layers.0.post_feedforward_layernorm.weight"} <= names(name)
    c = config("gemma2_softcap_window")
    assert c["attn_logit_softcapping"] and c["final_logit_softcapping"] and c["hidden_act"] == "gelu_pytorch_tanh"
    assert sliding_layers(c)[0] == [True, False]
    c = config("gemma3_pattern")
    assert c["attn_logit_softcapping"] is None and c["final_logit_softcapping"] is None and c["rope_scaling"] is None
    assert (c["sliding_window_pattern"], c["rope_local_base_freq"], c["rope_theta"]) == (3, 1e4, 1e6)
    assert sliding_layers(c)[0] == [True, True, False] and "layer_types" not in c
    c = config("gemma3_layer_types")
    assert sliding_layers(c)[0] == [True, False, True] and "sliding_window_pattern" not in c
    assert c["_sliding_window_pattern"] == 6 and c["torch_dtype"] == "bfloat16"
    assert "model.layers.2.self_attn.q_norm.weight" in names("gemma3_layer_types")
    c = config("mistral_window")
    assert not c["tie_word_embeddings"] and "lm_head.weight" in names("mistral_window")


def test_gemma_normalizer_is_rounded_to_the_checkpoint_dtype():
    # transformers: torch.tensor(hidden_size**0.5, dtype=hidden_states.dtype), in BF16 √40 -> 6.3125
    assert hf_reference.load(DATA / "gemma3_layer_types").normalizer == 6.3125 == round_to_bfloat16(math.sqrt(40))
    assert hf_reference.load(DATA / "gemma3_pattern").normalizer == float(np.float32(math.sqrt(32))) != math.sqrt(32)
    tensors = read_safetensors(DATA / "gemma3_layer_types" / "golden.safetensors")[0]
    ids = json.loads((DATA / "gemma3_layer_types" / "golden.json").read_text())["prompts"][1]["ids"]
    embed = naive_tensors(DATA / "gemma3_layer_types")["model.embed_tokens.weight"]
    assert np.array_equal(tensors["p1.hook_embed"], embed[ids] * 6.3125)


def test_windows_and_soft_caps_change_the_goldens():
    # Each reading the validation uses against llama.cpp also moves the goldens' logits: the window
    # (one wider, none), Gemma's caps, its (1 + weight), √C, query_pre_attn_scalar and local θ.
    for name, readings in [("gemma2_softcap_window", ["window_wider", "no_window", "no_attn_softcap",
                                                      "no_final_softcap", "norm_no_offset", "embed_unscaled",
                                                      "head_dim_scale"]),
                           ("gemma3_pattern", ["window_wider", "no_window", "global_theta", "no_qk_norm"]),
                           ("mistral_window", ["window_wider", "no_window"])]:
        golden = json.loads((DATA / name / "golden.json").read_text())["prompts"][2]
        want = read_safetensors(DATA / name / "golden.safetensors")[0]["p2.logits"]
        for reading in readings:
            got, _, _ = hf_reference.run(hf_reference.load(DATA / name, [reading]), golden["ids"])
            assert np.abs(got[-1] - want[-1]).max() > 0.05 * np.abs(want[-1]).max(), (name, reading)


def test_regeneration_reproduces_the_committed_files(tmp_path):
    hf_reference.regenerate(tmp_path)
    for name in NAMES:
        committed = sorted(p.name for p in (DATA / name).iterdir())
        assert sorted(p.name for p in (tmp_path / name).iterdir()) == committed
        for file in committed:
            if file != "golden.safetensors":
                assert (tmp_path / name / file).read_bytes() == (DATA / name / file).read_bytes(), f"{name}/{file}"
        fresh = read_safetensors(tmp_path / name / "golden.safetensors")[0]
        for key, values in read_safetensors(DATA / name / "golden.safetensors")[0].items():
            # The same weights and formulas; only a BLAS's summation order may differ.
            assert_close(fresh[key], values, f"{name} {key}")


# ---------------------------------------------------------------- safetensors reading


def safetensors_bytes(header, body):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + body


def test_reader_upcasts_half_types_exactly(tmp_path):
    bf16 = [0x3F80, 0xC040, 0x3F81, 0x0001, 0x7F7F, 0xFF80]  # 1, -3, 1 + 2^-7, smallest subnormal, max, -inf
    f16 = [0x3C00, 0x0001, 0x7BFF, 0xC000]  # 1, 2^-24, 65504, -2
    body = struct.pack("<6H", *bf16) + struct.pack("<4H", *f16)
    path = tmp_path / "half.safetensors"
    path.write_bytes(safetensors_bytes({
        "b": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]},
        "h": {"dtype": "F16", "shape": [4], "data_offsets": [12, 20]}}, body))
    tensors, metadata = read_safetensors(path)
    assert metadata == {}
    assert tensors["b"].dtype == np.float64 and tensors["b"].shape == (2, 3)
    assert tensors["b"].ravel().tolist() == [1.0, -3.0, 1 + 2 ** -7, 2.0 ** -133, (2 - 2 ** -7) * 2.0 ** 127, -math.inf]
    assert tensors["h"].tolist() == [1.0, 2.0 ** -24, 65504.0, -2.0]


GOOD = {"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}


@pytest.mark.parametrize("content, message", [
    (b"\x01\x00", "too short for the 8-byte header length"),
    (struct.pack("<Q", 1000) + b"{}", "header length 1000 exceeds the file"),
    (struct.pack("<Q", 3) + b"{x}", "header is not JSON"),
    (struct.pack("<Q", 2) + b"[]", "header is not a JSON object"),
    (safetensors_bytes({"__metadata__": {"format": 1}}, b""), "__metadata__ must map strings to strings"),
    (safetensors_bytes({"a": {"dtype": "F32", "shape": [2]}}, b"\0" * 8), "entry must have exactly"),
    (safetensors_bytes({"a": {"dtype": "F8", "shape": [2], "data_offsets": [0, 2]}}, b"\0" * 2), "unknown dtype 'F8'"),
    (safetensors_bytes({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, b"\0" * 8), "bad shape"),
    (safetensors_bytes({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}}, b"\0" * 8),
     "outside the 8-byte data section"),
    (safetensors_bytes({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, b"\0" * 8),
     "8 bytes for F32 \\[3\\] \\(12 bytes\\)"),
    (safetensors_bytes({"a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12), "gap"),
    (safetensors_bytes({**GOOD, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8), "overlap"),
    (safetensors_bytes(GOOD, b"\0" * 9), "1 bytes after the last tensor"),
    (safetensors_bytes({"a": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x02"), "BOOL bytes"),
])
def test_reader_refuses_malformed_files(tmp_path, content, message):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match=message) as error:
        read_safetensors(path)
    assert str(path) in str(error.value)


@pytest.fixture
def sharded(tmp_path):
    shutil.copytree(DATA / "llama_gqa_bf16_shards", tmp_path / "c")
    return tmp_path / "c"


def edit_index(directory, edit):
    path = directory / "model.safetensors.index.json"
    index = json.loads(path.read_text())
    edit(index)
    path.write_text(json.dumps(index))


def test_sharded_checkpoint_errors(sharded):
    index_path = sharded / "model.safetensors.index.json"
    original = index_path.read_text()
    edit_index(sharded, lambda i: i["metadata"].update(total_size=i["metadata"]["total_size"] + 2))
    with pytest.raises(CheckpointError, match="total_size .* but the shards hold"):
        hf_reference.read_weights(sharded)
    index_path.write_text(original)
    edit_index(sharded, lambda i: i["weight_map"].update({"model.norm.weight": "model-00001-of-00002.safetensors"}))
    with pytest.raises(CheckpointError, match="'model.norm.weight' is mapped to 'model-00001"):
        hf_reference.read_weights(sharded)
    index_path.write_text(original)
    edit_index(sharded, lambda i: i["weight_map"].update({"lm_head.weight": "model-00002-of-00002.safetensors"}))
    with pytest.raises(CheckpointError, match="tensors \\['lm_head.weight'\\] not in their shards"):
        hf_reference.read_weights(sharded)
    edit_index(sharded, lambda i: i["weight_map"].update({"lm_head.weight": "../model-00002-of-00002.safetensors"}))
    with pytest.raises(CheckpointError, match="is not a file name in the directory"):
        hf_reference.read_weights(sharded)
    index_path.write_text("{\"weight_map\": {}}")
    with pytest.raises(CheckpointError, match="not an index with metadata.total_size"):
        hf_reference.read_weights(sharded)
    index_path.unlink()
    with pytest.raises(CheckpointError, match="neither model.safetensors nor model.safetensors.index.json"):
        hf_reference.read_weights(sharded)


# ---------------------------------------------------------------- what the reference refuses


def copy_with(tmp_path, name, config_edit=None, tensors_edit=None):
    directory = tmp_path / name
    shutil.copytree(DATA / name, directory)
    if config_edit:
        config = json.loads((directory / "config.json").read_text())
        config_edit(config)
        (directory / "config.json").write_text(json.dumps(config))
    if tensors_edit:
        path = directory / "model.safetensors"
        tensors, _ = read_safetensors(path)
        tensors_edit(tensors)
        specs = [hf_checkpoints.Spec(n, v.shape, "F32", "test") for n, v in tensors.items()]
        hf_checkpoints.write_safetensors(path, specs, lambda s: hf_checkpoints.encode(tensors[s.name], "F32"))
    return directory


def assign(key, value):
    return lambda config: config.__setitem__(key, value)


@pytest.mark.parametrize("name, config_edit, message", [
    ("qwen2_bias", assign("rope_scaling", {"type": "linear", "factor": 2.0}), "rope_scaling .* is not implemented"),
    ("qwen2_bias", assign("use_sliding_window", True), "use_sliding_window true is not implemented"),
    ("llama_head_dim_untied", assign("hidden_act", "gelu"), "hidden_act 'gelu' is not implemented"),
    ("gpt2_unscaled_f32", assign("activation_function", "relu"), "activation_function 'relu' is not one of"),
    ("gpt2_unscaled_f32", assign("model_type", "gptj"), "model_type 'gptj' is not one of"),
    ("gpt2_unscaled_f32", assign("architectures", ["GPT2Model"]), "architectures \\['GPT2Model'\\] for model_type"),
    ("gpt2_unscaled_f32", assign("n_head", 3), "n_embd 32 is not a multiple of n_head 3"),
    ("gpt2_unscaled_f32", assign("n_layer", 2.0), "n_layer must be an integer"),
    ("gpt2_unscaled_f32", assign("scale_attn_weights", "no"), "scale_attn_weights must be true or false"),
    ("gpt2_unscaled_f32", assign("layer_norm_epsilon", -1), "layer_norm_epsilon must be a positive number"),
    ("gpt2_unscaled_f32", assign("n_layer", 3), "missing tensor 'transformer.h.2.ln_1.weight'"),
    ("gpt2_unscaled_f32", assign("n_layer", 1), "unexpected tensors \\['transformer.h.1"),
    ("gpt2_unscaled_f32", assign("tie_word_embeddings", False), "missing tensor 'lm_head.weight'"),
    ("gpt2_unscaled_f32", assign("n_inner", 64), "'transformer.h.0.mlp.c_fc.weight' has shape \\[32, 128\\], expected"),
    ("llama_gqa_bf16_shards", assign("num_key_value_heads", 3), "num_attention_heads 4 is not a multiple of"),
    ("llama_gqa_bf16_shards", assign("num_key_value_heads", 4), "'model.layers.0.self_attn.k_proj.weight' has shape"),
    ("llama_gqa_bf16_shards", assign("head_dim", 15), "head dimension 15 is odd"),
    ("llama_gqa_bf16_shards", assign("attention_bias", True), "missing tensor 'model.layers.0.self_attn.q_proj.bias'"),
    ("llama_head_dim_untied", assign("mlp_bias", False), "unexpected tensors \\['model.layers.0.mlp.down_proj.bias'"),
    ("qwen2_bias", assign("hidden_size", 50), "hidden_size 50 is not a multiple of num_attention_heads 6"),
    ("llama3_rope_scaling", assign("rope_scaling", {"rope_type": "yarn", "factor": 2.0}), "rope type 'yarn' is not"),
    ("llama3_rope_scaling", assign("rope_scaling", {"rope_type": "llama3", "factor": 2.0, "type": "linear"}),
     "type 'linear' and rope_type 'llama3' differ"),
    ("llama3_rope_scaling", assign("rope_scaling", {"rope_type": "llama3", "factor": 2.0}),
     "config low_freq_factor must be a positive number"),
    ("llama_linear_rope_parameters", assign("rope_scaling", {"type": "linear", "factor": 2.0}),
     "both rope_parameters and rope_scaling"),
    ("phi3_fused_partial", assign("rope_scaling", {"rope_type": "longrope", "long_factor": [1.0] * 4,
                                                   "short_factor": [1.0] * 4}), "Phi-3 rope scaling .* not implemented"),
    ("phi3_fused_partial", assign("sliding_window", 8), "sliding_window 8 below max_position_embeddings"),
    ("phi3_fused_partial", assign("partial_rotary_factor", 0.2), "rotary dimension 3 is odd"),
    ("qwen3_qk_norm", assign("use_sliding_window", True), "use_sliding_window true is not implemented"),
    ("qwen3_qk_norm", assign("head_dim", 8), "'model.layers.0.self_attn.q_proj.weight' has shape"),
    ("olmo2_post_norm", assign("rope_scaling", {"rope_type": "linear", "factor": 2.0}), "rope_scaling .* not implemented"),
    ("gpt_neox_parallel", assign("rope_theta", 500.0), "rope_theta 500.0 differs from rotary_emb_base"),
    ("gpt_neox_parallel", assign("hidden_act", "relu"), "hidden_act 'relu' is not one of"),
    ("gpt_neox_parallel", assign("rotary_pct", 0.5), "partial_rotary_factor 0.25 differs from rotary_pct 0.5"),
    ("gpt_neox_sequential", assign("attention_bias", False), "unexpected tensors \\['gpt_neox.layers.0.attention.dense.bias'"),
    ("gemma2_softcap_window", assign("hidden_activation", "gelu"), "hidden_activation 'gelu' is not implemented"),
    ("gemma2_softcap_window", assign("rope_scaling", {"rope_type": "linear", "factor": 8.0}),
     "rope_scaling .* is not implemented"),
    ("gemma2_softcap_window", assign("sliding_window", 0), "sliding_window must be an integer ≥ 1"),
    ("gemma2_softcap_window", assign("attn_logit_softcapping", -1.0), "attn_logit_softcapping must be a positive"),
    ("gemma2_softcap_window", assign("attention_bias", True), "attention_bias true is not implemented"),
    ("gemma3_layer_types", assign("layer_types", ["sliding_attention"]), "layer_types must give"),
    ("gemma3_layer_types", assign("torch_dtype", "float8"), "torch_dtype 'float8' is not one of"),
    ("gemma3_pattern", assign("sliding_window_pattern", 0), "sliding_window_pattern must be an integer ≥ 1"),
    ("gemma3_pattern", assign("tie_word_embeddings", False), "missing tensor 'lm_head.weight'"),
    ("mistral_window", assign("sliding_window", 2.5), "sliding_window must be an integer ≥ 1"),
])
def test_reference_refuses_unimplemented_or_inconsistent_configs(tmp_path, name, config_edit, message):
    directory = copy_with(tmp_path, name, config_edit)
    with pytest.raises(CheckpointError, match=message) as error:
        hf_reference.load(directory)
    assert str(directory) in str(error.value)


def test_reference_refuses_mixed_prefixes_and_bad_mask_buffers(tmp_path):
    def rename(tensors):
        tensors["ln_f.weight"] = tensors.pop("transformer.ln_f.weight")

    with pytest.raises(CheckpointError, match="some tensors have the 'transformer.' prefix and some do not"):
        hf_reference.load(copy_with(tmp_path, "gpt2_prefixed_f32", tensors_edit=rename))

    def unmask(tensors):
        tensors["transformer.h.0.attn.bias"] = np.ones_like(tensors["transformer.h.0.attn.bias"])

    with pytest.raises(CheckpointError, match="'transformer.h.0.attn.bias' is not a causal mask"):
        hf_reference.load(copy_with(tmp_path / "b", "gpt2_prefixed_f32", tensors_edit=unmask))
    with pytest.raises(CheckpointError, match="config.json: cannot read"):
        hf_reference.load(tmp_path / "nowhere")
    (tmp_path / "c").mkdir()
    (tmp_path / "c/config.json").write_text("{")
    with pytest.raises(CheckpointError, match="config.json: not JSON"):
        hf_reference.load(tmp_path / "c")


@pytest.mark.parametrize("ids, message", [
    ([], "no tokens"),
    ([0, 64], "token ids \\[64\\] outside \\[0, 64\\)"),
    ([-1], "token ids \\[-1\\] outside"),
    ([1] * 25, "25 tokens exceed n_positions 24"),
])
def test_reference_refuses_bad_prompts(ids, message):
    model = hf_reference.load(DATA / "gpt2_unscaled_f32")
    with pytest.raises(CheckpointError, match=message):
        hf_reference.run(model, ids)


def test_cli_writes_goldens_for_given_ids(tmp_path):
    directory = tmp_path / "c"
    shutil.copytree(DATA / "qwen2_bias", directory)
    (directory / "golden.safetensors").unlink()
    script = ROOT / "tools/references/hf_reference.py"
    subprocess.run([sys.executable, str(script), str(directory), "--ids", "1,2,3", "--ids", "7"], check=True)
    description = json.loads((directory / "golden.json").read_text())
    assert [p["ids"] for p in description["prompts"]] == [[1, 2, 3], [7]]
    tensors = read_safetensors(directory / "golden.safetensors")[0]
    committed = read_safetensors(DATA / "qwen2_bias/golden.safetensors")[0]
    # A prefix of a committed prompt: causal attention makes its rows those of the longer prompt.
    first = json.loads((DATA / "qwen2_bias/golden.json").read_text())["prompts"][2]["ids"][:3]
    assert tensors["p0.logits"].shape == (3, 100) and tensors["p1.logits"].shape == (1, 100)
    subprocess.run([sys.executable, str(script), str(directory), "--ids", ",".join(map(str, first))], check=True)
    tensors = read_safetensors(directory / "golden.safetensors")[0]
    assert_close(tensors["p0.logits"], committed["p2.logits"][:3], "prefix logits")
    failed = subprocess.run([sys.executable, str(script), str(directory), "--ids", "1,100"],
                            capture_output=True, text=True)
    assert failed.returncode == 1 and "token ids [100] outside [0, 100)" in failed.stderr
