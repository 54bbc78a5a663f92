#!/usr/bin/env python3
"""The PyTorch eager peer: GPT-2, Llama, Qwen3, GPT-NeoX, Mistral, Gemma 2 and Gemma 3 (text) forward passes
from Hugging Face's formulas, with a KV cache.

  /usr/bin/python3 tools/benchmarks/peers/torch_peer.py HF_DIR --threads T logits --tokens 1,2,3 [--float64]
  /usr/bin/python3 tools/benchmarks/peers/torch_peer.py HF_DIR --threads T bench [--prefill 128,512]
      [--decode 128,512] [--steps 32] [--reps 5]

Prints JSON shaped like tools/benchmarks/peers/llama_peer.cpp's. Written from the modelling code's
formulas (GPT2Model: learned positions, pre-LayerNorm, Conv1D (x @ W), gelu_new; LlamaModel:
RMSNorm, half-split rotary (rotate_half), grouped key-value heads, SiLU-gated MLP; Qwen3Model:
Llama's, with an RMSNorm over each head of q and k (q_norm, k_norm) before the rotary; GPTNeoXModel:
LayerNorms with biases, one query_key_value projection with rows per head [q_h; k_h; v_h],
half-split rotary on the first int(rotary_pct · d) dimensions of each head, GELU (erf) MLP,
parallel residual x + attn(ln1(x)) + mlp(ln2(x)) or the sequential one, untied embed_out; MistralModel:
Llama's, with every layer's sliding window (query p sees keys p − w < j ≤ p); Gemma2Model /
Gemma3TextModel: see the Gemma class — (1 + w) RMSNorms before and after each block, GeGLU, the
embedding × √C, query_pre_attn_scalar, soft caps, q/k norms and per-layer windows and θ), run under
torch.inference_mode(), float32 (or float64 for the agreement check); bfloat16 checkpoints are
widened exactly to float32. Like the llama.cpp peer, a prefill computes the logits of its last
position only. Peak RSS is the high-water mark after the weights are loaded (VmHWM is reset
then), so the file-reading copies do not count.
"""
import argparse
import gc
import json
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tools/: the role packages
from common import peer_threads, safetensors_io  # noqa: E402


class Cache:
    """Per layer, keys and values of the positions seen: (heads_kv × capacity × head_dim)."""

    def __init__(self, layers, kv_heads, head_dim, capacity, dtype):
        shape = (layers, 2, kv_heads, capacity, head_dim)
        self.kv = torch.zeros(shape, dtype=dtype)
        self.length = 0

    def append(self, layer, k, v):
        n = k.shape[1]
        self.kv[layer, 0, :, self.length:self.length + n] = k
        self.kv[layer, 1, :, self.length:self.length + n] = v
        end = self.length + n
        return self.kv[layer, 0, :, :end], self.kv[layer, 1, :, :end]


def attend(q, k, v, first, scale=None, window=None, softcap=None):
    """q (heads × n × d) at positions first.., k/v (heads × (first+n) × d) -> (n × heads·d).

    Scores q·k · scale (1/√d by default), then softcap · tanh(score / softcap) where given, then the
    causal mask, and with a sliding window w also the keys j ≤ p − w (query p sees p − w < j ≤ p), as
    the eager attention of modeling_gemma3.py / modeling_mistral.py with their masks. A single query
    (a decoding step) is given the keys it sees (last_keys) and needs no mask."""
    n, total = q.shape[1], k.shape[1]
    scores = q @ k.transpose(1, 2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if softcap is not None:
        scores = torch.tanh(scores / softcap) * softcap
    if n > 1:
        key, query = torch.arange(total)[None, :], (first + torch.arange(n))[:, None]
        visible = key <= query
        if window is not None:
            visible &= key > query - window
        scores = scores.masked_fill(~visible, float("-inf"))
    out = torch.softmax(scores, dim=-1) @ v
    return out.transpose(0, 1).reshape(n, -1)


def last_keys(k, v, n, window):
    """A decoding step (n = 1) under a sliding window w sees the last w keys only: the others are
    dropped (as a sliding-window cache keeps only them) before the key-value heads are repeated for
    their query heads."""
    if window is None or n > 1 or k.shape[1] <= window:
        return k, v
    return k[:, -window:], v[:, -window:]


class GPT2:
    def __init__(self, config, w):
        self.c, self.w = config, w
        self.layers, self.heads = config["n_layer"], config["n_head"]
        self.head_dim = config["n_embd"] // self.heads
        self.kv_heads, self.eps = self.heads, config["layer_norm_epsilon"]

    def norm(self, x, name):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def conv1d(self, x, name):
        return torch.addmm(self.w[name + ".bias"], x, self.w[name + ".weight"])

    def forward(self, ids, cache):
        w, first = self.w, cache.length
        x = w["wte.weight"][ids] + w["wpe.weight"][first:first + len(ids)]
        for i in range(self.layers):
            p = f"h.{i}."
            q, k, v = self.conv1d(self.norm(x, p + "ln_1"), p + "attn.c_attn").split(self.c["n_embd"], dim=1)
            q, k, v = (t.reshape(len(ids), self.heads, self.head_dim).transpose(0, 1) for t in (q, k, v))
            k, v = cache.append(i, k, v)
            x = x + self.conv1d(attend(q, k, v, first), p + "attn.c_proj")
            h = torch.nn.functional.gelu(self.conv1d(self.norm(x, p + "ln_2"), p + "mlp.c_fc"), approximate="tanh")
            x = x + self.conv1d(h, p + "mlp.c_proj")
        cache.length += len(ids)
        return self.norm(x[-1:], "ln_f") @ w["wte.weight"].T


class Llama:
    def __init__(self, config, w):
        self.c, self.w = config, w
        self.layers, self.heads = config["num_hidden_layers"], config["num_attention_heads"]
        self.kv_heads = config.get("num_key_value_heads", self.heads)
        self.head_dim = config.get("head_dim") or config["hidden_size"] // self.heads
        self.eps = config["rms_norm_eps"]
        dtype = w["model.embed_tokens.weight"].dtype
        exponent = torch.arange(0, self.head_dim, 2, dtype=torch.float64) / self.head_dim
        self.inv_freq = (1.0 / config.get("rope_theta", 10000.0) ** exponent).to(dtype)
        self.lm_head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
        self.qk_norm = "model.layers.0.self_attn.q_norm.weight" in w
        # Mistral: every layer's sliding window (null: none); Llama and Qwen3 have none here.
        self.window = config.get("sliding_window") if config.get("model_type") == "mistral" else None
        if config.get("attention_bias") or config.get("mlp_bias"):
            raise ValueError("the PyTorch peer runs Llama, Qwen3 and Mistral without biases only")

    def norm(self, x, name):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w[name]

    def rotate(self, x, cos, sin):
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rotated * sin

    def forward(self, ids, cache):
        w, first, n = self.w, cache.length, len(ids)
        angles = torch.arange(first, first + n, dtype=self.inv_freq.dtype)[:, None] * self.inv_freq[None, :]
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos(), angles.sin()
        group = self.heads // self.kv_heads
        x = w["model.embed_tokens.weight"][ids]
        for i in range(self.layers):
            p = f"model.layers.{i}."
            h = self.norm(x, p + "input_layernorm.weight")
            q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(n, self.heads, self.head_dim).transpose(0, 1)
            k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(n, self.kv_heads, self.head_dim).transpose(0, 1)
            v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(n, self.kv_heads, self.head_dim).transpose(0, 1)
            if self.qk_norm:  # Qwen3: RMSNorm over each head's d values, before the rotary
                q, k = self.norm(q, p + "self_attn.q_norm.weight"), self.norm(k, p + "self_attn.k_norm.weight")
            k, v = last_keys(*cache.append(i, self.rotate(k, cos, sin), v), n, self.window)
            k, v = k.repeat_interleave(group, dim=0), v.repeat_interleave(group, dim=0)
            z = attend(self.rotate(q, cos, sin), k, v, first, window=self.window)
            x = x + z @ w[p + "self_attn.o_proj.weight"].T
            h = self.norm(x, p + "post_attention_layernorm.weight")
            gated = torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T) * (h @ w[p + "mlp.up_proj.weight"].T)
            x = x + gated @ w[p + "mlp.down_proj.weight"].T
        cache.length += n
        return self.norm(x[-1:], "model.norm.weight") @ self.lm_head.T


GELUS = {"gelu": lambda x: torch.nn.functional.gelu(x),
         "gelu_new": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
         "gelu_pytorch_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh")}


class GPTNeoX:
    def __init__(self, config, w):
        self.c, self.w = config, w
        self.layers, self.heads = config["num_hidden_layers"], config["num_attention_heads"]
        self.kv_heads, self.head_dim = self.heads, config["hidden_size"] // self.heads
        self.rotary_dim = int(self.head_dim * config.get("rotary_pct", 0.25))
        self.eps = config["layer_norm_eps"]
        self.parallel = config.get("use_parallel_residual", True)
        self.activation = GELUS[config.get("hidden_act", "gelu")]
        dtype = w["gpt_neox.embed_in.weight"].dtype
        exponent = torch.arange(0, self.rotary_dim, 2, dtype=torch.float64) / self.rotary_dim
        self.inv_freq = (1.0 / config.get("rotary_emb_base", 10000) ** exponent).to(dtype)
        self.lm_head = w["gpt_neox.embed_in.weight"] if config.get("tie_word_embeddings") else w["embed_out.weight"]

    def norm(self, x, name):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def linear(self, x, name):
        bias = self.w.get(name + ".bias")  # attention_bias false drops the attention's biases
        return x @ self.w[name + ".weight"].T if bias is None else torch.addmm(bias, x, self.w[name + ".weight"].T)

    def rotate(self, x, cos, sin):
        """Half-split rotary on the first rotary_dim values of each head; the rest pass unchanged."""
        r = self.rotary_dim
        turned, passed = x[..., :r], x[..., r:]
        rotated = torch.cat((-turned[..., r // 2:], turned[..., :r // 2]), dim=-1)
        return torch.cat((turned * cos + rotated * sin, passed), dim=-1)

    def mlp(self, h, p):
        return self.linear(self.activation(self.linear(h, p + "mlp.dense_h_to_4h")), p + "mlp.dense_4h_to_h")

    def forward(self, ids, cache):
        w, first, n = self.w, cache.length, len(ids)
        angles = torch.arange(first, first + n, dtype=self.inv_freq.dtype)[:, None] * self.inv_freq[None, :]
        angles = torch.cat((angles, angles), dim=-1)
        cos, sin = angles.cos(), angles.sin()
        x = w["gpt_neox.embed_in.weight"][ids]
        for i in range(self.layers):
            p = f"gpt_neox.layers.{i}."
            qkv = self.linear(self.norm(x, p + "input_layernorm"), p + "attention.query_key_value")
            q, k, v = (t.transpose(0, 1) for t in qkv.reshape(n, self.heads, 3 * self.head_dim).split(self.head_dim, -1))
            k, v = cache.append(i, self.rotate(k, cos, sin), v)
            attended = self.linear(attend(self.rotate(q, cos, sin), k, v, first), p + "attention.dense")
            if self.parallel:
                x = x + attended + self.mlp(self.norm(x, p + "post_attention_layernorm"), p)
            else:
                x = x + attended
                x = x + self.mlp(self.norm(x, p + "post_attention_layernorm"), p)
        cache.length += n
        return self.norm(x[-1:], "gpt_neox.final_layer_norm") @ self.lm_head.T


TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class Gemma:
    """Gemma2ForCausalLM and Gemma3ForCausalLM (text), from modeling_gemma2.py / modeling_gemma3.py:
    RMSNorm x / √(mean(x²) + eps) · (1 + w) before and after attention and the MLP
    (input_layernorm, post_attention_layernorm, pre_feedforward_layernorm,
    post_feedforward_layernorm) and at the end; the embedding × √hidden_size rounded to the
    checkpoint's torch_dtype; GeGLU down(gelu_tanh(gate(x)) · up(x)); scores ·
    query_pre_attn_scalar^-1/2, capped by attn_logit_softcapping where set; Gemma 3's q_norm / k_norm
    (1 + w) over each head before the rotary; sliding layers (layer_types, else Gemma 2's even ones or
    Gemma 3's (L + 1) % sliding_window_pattern ≠ 0) with the window p − w < j ≤ p and, in Gemma 3,
    rope_local_base_freq instead of rope_theta; tied logits, capped by final_logit_softcapping where
    set. The cache keeps every position; a sliding layer's decoding step attends to the last w."""

    def __init__(self, config, w):
        self.c, self.w = config, w
        gemma3 = config["model_type"] == "gemma3_text"
        self.layers, self.heads = config["num_hidden_layers"], config["num_attention_heads"]
        self.kv_heads = config.get("num_key_value_heads", self.heads)
        self.head_dim = config.get("head_dim", 256)
        self.eps = config.get("rms_norm_eps", 1e-6)
        if config.get("attention_bias") or config.get("rope_scaling") is not None or "rope_parameters" in config:
            raise ValueError("the PyTorch peer runs Gemma without biases or rope scaling only")
        if config.get("hidden_activation", "gelu_pytorch_tanh") != "gelu_pytorch_tanh":
            raise ValueError(f"hidden_activation {config['hidden_activation']!r}: only gelu_pytorch_tanh")
        self.scale = config.get("query_pre_attn_scalar", 256) ** -0.5
        default_caps = (None, None) if gemma3 else (50.0, 30.0)
        self.attn_softcap = config.get("attn_logit_softcapping", default_caps[0])
        self.final_softcap = config.get("final_logit_softcapping", default_caps[1])
        self.window = config.get("sliding_window", 4096)
        types = config.get("layer_types")
        if types is not None:
            self.sliding = [t == "sliding_attention" for t in types]
        elif gemma3:
            pattern = config.get("sliding_window_pattern", config.get("_sliding_window_pattern", 6))
            self.sliding = [(layer + 1) % pattern != 0 for layer in range(self.layers)]
        else:
            self.sliding = [layer % 2 == 0 for layer in range(self.layers)]
        dtype = w["model.embed_tokens.weight"].dtype
        theta = config.get("rope_theta", 1e6 if gemma3 else 1e4)
        local = config.get("rope_local_base_freq", 1e4) if gemma3 else theta
        exponent = torch.arange(0, self.head_dim, 2, dtype=torch.float64) / self.head_dim
        self.inv_freq = {False: (1.0 / theta ** exponent).to(dtype), True: (1.0 / local ** exponent).to(dtype)}
        stored = TORCH_DTYPES[config.get("torch_dtype", config.get("dtype")) or "float32"]
        self.normalizer = float(torch.tensor(config["hidden_size"] ** 0.5, dtype=stored))
        self.qk_norm = gemma3

    def norm(self, x, name):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * (1 + self.w[name])

    def rotate(self, x, cos, sin):
        half = x.shape[-1] // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin

    def forward(self, ids, cache):
        w, first, n = self.w, cache.length, len(ids)
        turns = {}
        for sliding, inv_freq in self.inv_freq.items():
            angles = torch.arange(first, first + n, dtype=inv_freq.dtype)[:, None] * inv_freq[None, :]
            angles = torch.cat((angles, angles), dim=-1)
            turns[sliding] = angles.cos(), angles.sin()
        group = self.heads // self.kv_heads
        x = w["model.embed_tokens.weight"][ids] * self.normalizer
        for i in range(self.layers):
            p, sliding = f"model.layers.{i}.", self.sliding[i]
            cos, sin = turns[sliding]
            window = self.window if sliding else None
            h = self.norm(x, p + "input_layernorm.weight")
            q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(n, self.heads, self.head_dim).transpose(0, 1)
            k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(n, self.kv_heads, self.head_dim).transpose(0, 1)
            v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(n, self.kv_heads, self.head_dim).transpose(0, 1)
            if self.qk_norm:  # Gemma 3: (1 + w) RMSNorm over each head's d values, before the rotary
                q, k = self.norm(q, p + "self_attn.q_norm.weight"), self.norm(k, p + "self_attn.k_norm.weight")
            k, v = last_keys(*cache.append(i, self.rotate(k, cos, sin), v), n, window)
            k, v = k.repeat_interleave(group, dim=0), v.repeat_interleave(group, dim=0)
            z = attend(self.rotate(q, cos, sin), k, v, first, self.scale, window, self.attn_softcap)
            x = x + self.norm(z @ w[p + "self_attn.o_proj.weight"].T, p + "post_attention_layernorm.weight")
            h = self.norm(x, p + "pre_feedforward_layernorm.weight")
            gate = torch.nn.functional.gelu(h @ w[p + "mlp.gate_proj.weight"].T, approximate="tanh")
            out = (gate * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
            x = x + self.norm(out, p + "post_feedforward_layernorm.weight")
        cache.length += n
        logits = self.norm(x[-1:], "model.norm.weight") @ w["model.embed_tokens.weight"].T
        if self.final_softcap is not None:
            logits = torch.tanh(logits / self.final_softcap) * self.final_softcap
        return logits


ARCHITECTURES = {"GPT2LMHeadModel": GPT2, "LlamaForCausalLM": Llama, "Qwen3ForCausalLM": Llama,
                 "GPTNeoXForCausalLM": GPTNeoX, "MistralForCausalLM": Llama, "Gemma2ForCausalLM": Gemma,
                 "Gemma3ForCausalLM": Gemma}


def load(hf_dir, dtype):
    hf_dir = Path(hf_dir)
    config = json.loads((hf_dir / "config.json").read_text(encoding="utf-8"))
    weights = {}
    for path in sorted(hf_dir.glob("model*.safetensors")):  # not a golden.safetensors beside them
        arrays, _ = safetensors_io.read_float32(path)
        for name, array in arrays.items():
            weights[name.removeprefix("transformer.")] = torch.from_numpy(array).to(dtype)
    architecture = (config.get("architectures") or ["<none>"])[0]
    if architecture not in ARCHITECTURES:
        raise ValueError(f"{hf_dir}/config.json: architecture {architecture!r} is neither of "
                         f"{', '.join(ARCHITECTURES)}")
    return ARCHITECTURES[architecture](config, weights)


def new_cache(model, capacity, dtype):
    return Cache(model.layers, model.kv_heads, model.head_dim, capacity, dtype)


def last_logits(model, tokens, dtype):
    with torch.inference_mode():
        return model.forward(torch.tensor(tokens), new_cache(model, len(tokens), dtype))[0]


def reset_peak_rss():
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass  # the peak then includes loading


def peak_rss_bytes():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return -1


def bench(model, prefill, decode, steps, reps):
    longest = max(prefill + [n + steps for n in decode])
    vocab = model.c["vocab_size"]
    tokens = torch.randint(0, vocab, (longest,), generator=torch.Generator().manual_seed(12345))
    cache = new_cache(model, longest, torch.float32)
    gc.collect()
    reset_peak_rss()
    result = {"prefill": [], "decode": []}
    with torch.inference_mode():
        model.forward(tokens[:longest - steps], cache)  # first touch of everything, untimed
        for n in prefill:
            seconds = []
            for _ in range(reps):
                cache.length = 0
                start = time.perf_counter()
                model.forward(tokens[:n], cache)
                seconds.append(time.perf_counter() - start)
            result["prefill"].append({"tokens": n, "seconds": seconds})
        for n in decode:
            seconds = []
            for _ in range(reps):
                cache.length = 0
                model.forward(tokens[:n], cache)
                start = time.perf_counter()
                for step in range(steps):
                    model.forward(tokens[n + step:n + step + 1], cache)
                seconds.append(time.perf_counter() - start)
            result["decode"].append({"context": n, "steps": steps, "seconds": seconds})
    result["peak_rss_bytes"] = peak_rss_bytes()
    return result


def int_list(text):
    return [int(t) for t in text.split(",") if t]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("hf_dir", type=Path)
    parser.add_argument("--threads", type=int, default=1)
    sub = parser.add_subparsers(dest="command", required=True)
    logits = sub.add_parser("logits")
    logits.add_argument("--tokens", required=True, type=int_list)
    logits.add_argument("--float64", action="store_true")
    timing = sub.add_parser("bench")
    timing.add_argument("--prefill", type=int_list, default=[128, 512])
    timing.add_argument("--decode", type=int_list, default=[128, 512])
    timing.add_argument("--steps", type=int, default=32)
    timing.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    peer_threads.limit_this_process(args.threads)  # OpenBLAS's threads too, not only OpenMP's
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    if args.command == "logits":
        dtype = torch.float64 if args.float64 else torch.float32
        values = last_logits(load(args.hf_dir, dtype), args.tokens, dtype)
        print(json.dumps({"vocab": len(values), "logits": values.tolist()}))
    else:
        result = bench(load(args.hf_dir, torch.float32), args.prefill, args.decode, args.steps, args.reps)
        print(json.dumps({"threads": args.threads, "torch": torch.__version__, **result}))


if __name__ == "__main__":
    main()
