"""The store corpus's model in the Llama architecture, for training.

Written from the Hugging Face LlamaForCausalLM formulas, with its parameter names, so
that `state_dict()` (minus the tied `lm_head.weight`) is a checkpoint that
LlamaForCausalLM would load as it stands:

  model.embed_tokens.weight                          V x 128
  model.layers.L.input_layernorm.weight              128
  model.layers.L.self_attn.{q,o}_proj.weight         128 x 128   (out x in, torch.nn.Linear)
  model.layers.L.self_attn.{k,v}_proj.weight         64 x 128
  model.layers.L.post_attention_layernorm.weight     128
  model.layers.L.mlp.{gate,up}_proj.weight           I x 128
  model.layers.L.mlp.down_proj.weight                128 x I
  model.norm.weight                                  128
  lm_head.weight                                     V x 128  (the same tensor as embed_tokens)

One decoder layer, x the n x 128 residual stream:

  h = rmsnorm(x; input_layernorm)                    x / sqrt(mean(x^2) + eps) * weight
  q, k, v = h Wq^T, h Wk^T, h Wv^T                   n x 4*32, n x 2*32, n x 2*32
  q, k = rope(q), rope(k)                            per head: q cos + rotate_half(q) sin
  query head h reads key/value head h // 2           (grouped-query attention)
  w = softmax(q k^T / sqrt(32), causal)
  x = x + merge_heads(w v) Wo^T
  x = x + down(silu(gate(h2)) * up(h2)),  h2 = rmsnorm(x; post_attention_layernorm)

then logits = rmsnorm(x; norm) E^T. RoPE: inv_freq_i = 1 / theta^(2i/32) for
i < 16, angle(p, j) = p * inv_freq_(j mod 16) over the whole head (the frequencies
repeated), rotate_half(x) = (-x[16:], x[:16]).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class LlamaSettings:
    """Hyper-parameters, named as in a Hugging Face LlamaConfig."""

    vocab_size: int
    hidden_size: int = 128
    intermediate_size: int = 384
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 32
    max_position_embeddings: int = 160
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0

    def to_dict(self):
        return asdict(self)


def rope_cos_sin(positions: int, head_dim: int, theta: float):
    """cos, sin (positions x head_dim) in float64: the frequencies repeated over both halves."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    angles = torch.outer(torch.arange(positions, dtype=torch.float64), inv_freq)
    angles = torch.cat((angles, angles), dim=-1)
    return angles.cos(), angles.sin()


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaRMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.variance_epsilon = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon) * self.weight


class LlamaAttention(nn.Module):
    def __init__(self, s: LlamaSettings):
        super().__init__()
        if s.num_attention_heads % s.num_key_value_heads:
            raise ValueError(f"num_attention_heads {s.num_attention_heads} is not a multiple of "
                             f"num_key_value_heads {s.num_key_value_heads}")
        self.heads, self.kv_heads, self.head_dim = s.num_attention_heads, s.num_key_value_heads, s.head_dim
        self.q_proj = nn.Linear(s.hidden_size, self.heads * s.head_dim, bias=False)
        self.k_proj = nn.Linear(s.hidden_size, self.kv_heads * s.head_dim, bias=False)
        self.v_proj = nn.Linear(s.hidden_size, self.kv_heads * s.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * s.head_dim, s.hidden_size, bias=False)

    def forward(self, x, cos, sin, mask, keep_attention=False):
        b, n, _ = x.shape

        def split(t, heads):  # (b, n, heads*head_dim) -> (b, heads, n, head_dim)
            return t.view(b, n, heads, self.head_dim).transpose(1, 2)

        q = split(self.q_proj(x), self.heads)
        k = split(self.k_proj(x), self.kv_heads)
        v = split(self.v_proj(x), self.kv_heads)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        # each key/value head serves a run of consecutive query heads: [kv0, kv0, kv1, kv1]
        group = self.heads // self.kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_dim))
        weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        o = (weights @ v).transpose(1, 2).reshape(b, n, self.heads * self.head_dim)
        return self.o_proj(o), (weights if keep_attention else None)


class LlamaMLP(nn.Module):
    def __init__(self, s: LlamaSettings):
        super().__init__()
        self.gate_proj = nn.Linear(s.hidden_size, s.intermediate_size, bias=False)
        self.up_proj = nn.Linear(s.hidden_size, s.intermediate_size, bias=False)
        self.down_proj = nn.Linear(s.intermediate_size, s.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, s: LlamaSettings):
        super().__init__()
        self.self_attn = LlamaAttention(s)
        self.mlp = LlamaMLP(s)
        self.input_layernorm = LlamaRMSNorm(s.hidden_size, s.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(s.hidden_size, s.rms_norm_eps)

    def forward(self, x, cos, sin, mask, keep_attention=False):
        a, weights = self.self_attn(self.input_layernorm(x), cos, sin, mask, keep_attention)
        x = x + a
        x = x + self.mlp(self.post_attention_layernorm(x))
        return x, weights


class LlamaBody(nn.Module):
    """The `model.` part of LlamaForCausalLM: embedding, decoder layers, final norm."""

    def __init__(self, s: LlamaSettings):
        super().__init__()
        self.embed_tokens = nn.Embedding(s.vocab_size, s.hidden_size)
        self.layers = nn.ModuleList(LlamaDecoderLayer(s) for _ in range(s.num_hidden_layers))
        self.norm = LlamaRMSNorm(s.hidden_size, s.rms_norm_eps)


class LlamaStoreModel(nn.Module):
    """LlamaForCausalLM's structure and names, with the output matrix tied to the embedding."""

    def __init__(self, s: LlamaSettings):
        super().__init__()
        self.settings = s
        self.model = LlamaBody(s)
        self.lm_head = nn.Linear(s.hidden_size, s.vocab_size, bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight
        # plain float64 attributes (not buffers): .double()/.float() leave them exact,
        # and they are cast to the activations' dtype in forward
        self.rope_cos, self.rope_sin = rope_cos_sin(s.max_position_embeddings, s.head_dim, s.rope_theta)
        self.reset_parameters()

    def reset_parameters(self):
        # std 0.02 as Hugging Face's initializer_range; the projections that write into
        # the residual stream are scaled down by depth (GPT-2 style), as in tools/common/model.py
        std = 0.02
        residual_std = std / math.sqrt(2 * self.settings.num_hidden_layers)
        nn.init.normal_(self.model.embed_tokens.weight, std=std)
        for layer in self.model.layers:
            for linear in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj,
                           layer.mlp.gate_proj, layer.mlp.up_proj):
                nn.init.normal_(linear.weight, std=std)
            for linear in (layer.self_attn.o_proj, layer.mlp.down_proj):
                nn.init.normal_(linear.weight, std=residual_std)

    @property
    def embedding_weight(self):
        return self.model.embed_tokens.weight

    def forward(self, ids, keep_attention=False):
        """ids (n) or (batch x n) -> logits (... x n x V).

        With keep_attention=True also returns a list, one per layer, of attention
        weights (batch x query heads x n x n), or (heads x n x n) for 1-D ids.
        """
        single = ids.dim() == 1
        if single:
            ids = ids[None]
        n = ids.shape[1]
        if n > self.settings.max_position_embeddings:
            raise ValueError(f"sequence of {n} ids is longer than {self.settings.max_position_embeddings}")
        x = self.model.embed_tokens(ids)
        cos = self.rope_cos[:n].to(x.dtype)
        sin = self.rope_sin[:n].to(x.dtype)
        mask = torch.ones(n, n, dtype=torch.bool, device=ids.device).triu(1)
        kept = []
        for layer in self.model.layers:
            x, weights = layer(x, cos, sin, mask, keep_attention)
            if keep_attention:
                kept.append(weights[0] if single else weights)
        logits = self.lm_head(self.model.norm(x))
        if single:
            logits = logits[0]
        return (logits, kept) if keep_attention else logits


def from_state_dict(settings: dict, state: dict) -> LlamaStoreModel:
    """A LlamaStoreModel holding `state` (names as LlamaForCausalLM; lm_head.weight optional).

    The model takes the weights' dtype, so float64 weights stay exact.
    """
    s = LlamaSettings(**settings)
    state = {k: torch.as_tensor(v) for k, v in state.items()}
    model = LlamaStoreModel(s).to(state["model.embed_tokens.weight"].dtype)
    if "lm_head.weight" not in state:
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
    model.load_state_dict(state)
    return model.eval()
