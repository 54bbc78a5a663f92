"""The store's model: a small pre-LayerNorm causal transformer with RoPE.

Settings (fixed by the C++ side, see models/store/README.md): width 128, 4 layers,
4 heads of 32, context 160, LayerNorm eps 1e-5, attention projections without
bias, rotary positions (base 10000, rotate-half pairing: dimension j with j+16),
scores scaled by 1/sqrt(32), MLP 128 -> 512 -> 128 with exact (erf) GELU, final
LayerNorm, logits = final_norm(x) @ embedding^T (tied, no bias).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Settings:
    vocabulary_size: int
    dimensions: int = 128
    layers: int = 4
    heads: int = 4
    head_size: int = 32
    mlp_width: int = 512
    longest: int = 160
    norm_epsilon: float = 1e-5
    rope_base: float = 10000.0

    def to_dict(self):
        return asdict(self)


def rope_tables(longest: int, head_size: int, base: float, dtype=torch.float32):
    """cos and sin tables (longest x head_size/2): angle = position * base^(-2j/head_size)."""
    half = head_size // 2
    j = torch.arange(half, dtype=torch.float64)
    frequency = base ** (-2.0 * j / head_size)
    positions = torch.arange(longest, dtype=torch.float64)
    angle = positions[:, None] * frequency[None, :]
    return torch.cos(angle).to(dtype), torch.sin(angle).to(dtype)


def apply_rope(x, cos, sin):
    """Rotate-half RoPE on (..., n, head_size); cos/sin are (n, head_size/2)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Attention(nn.Module):
    def __init__(self, s: Settings):
        super().__init__()
        self.heads, self.head_size = s.heads, s.head_size
        inner = s.heads * s.head_size
        self.query = nn.Linear(s.dimensions, inner, bias=False)
        self.key = nn.Linear(s.dimensions, inner, bias=False)
        self.value = nn.Linear(s.dimensions, inner, bias=False)
        self.output = nn.Linear(inner, s.dimensions, bias=False)

    def forward(self, x, cos, sin, mask, keep_attention=False):
        b, n, _ = x.shape

        def split(t):  # (b, n, heads*size) -> (b, heads, n, size), head-major columns
            return t.view(b, n, self.heads, self.head_size).transpose(1, 2)

        q = apply_rope(split(self.query(x)), cos, sin)
        k = apply_rope(split(self.key(x)), cos, sin)
        v = split(self.value(x))
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_size))
        scores = scores.masked_fill(mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        o = (weights @ v).transpose(1, 2).reshape(b, n, self.heads * self.head_size)
        return self.output(o), (weights if keep_attention else None)


class MLP(nn.Module):
    def __init__(self, s: Settings):
        super().__init__()
        self.up = nn.Linear(s.dimensions, s.mlp_width)
        self.down = nn.Linear(s.mlp_width, s.dimensions)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))  # exact erf GELU (approximate='none')


class Block(nn.Module):
    def __init__(self, s: Settings):
        super().__init__()
        self.attention_norm = nn.LayerNorm(s.dimensions, eps=s.norm_epsilon)
        self.attention = Attention(s)
        self.mlp_norm = nn.LayerNorm(s.dimensions, eps=s.norm_epsilon)
        self.mlp = MLP(s)

    def forward(self, x, cos, sin, mask, keep_attention=False):
        a, weights = self.attention(self.attention_norm(x), cos, sin, mask, keep_attention)
        x = x + a
        x = x + self.mlp(self.mlp_norm(x))
        return x, weights


class StoreModel(nn.Module):
    def __init__(self, s: Settings):
        super().__init__()
        self.settings = s
        self.embedding = nn.Embedding(s.vocabulary_size, s.dimensions)
        self.layers = nn.ModuleList(Block(s) for _ in range(s.layers))
        self.final_norm = nn.LayerNorm(s.dimensions, eps=s.norm_epsilon)
        # plain float64 attributes (not buffers), so .double()/.float() leave them
        # exact; they are cast to the activations' dtype in forward
        self.rope_cos, self.rope_sin = rope_tables(s.longest, s.head_size, s.rope_base,
                                                   dtype=torch.float64)
        self.reset_parameters()

    def reset_parameters(self):
        s = self.settings
        std = 0.02
        nn.init.normal_(self.embedding.weight, std=std)
        for block in self.layers:
            for linear in (block.attention.query, block.attention.key,
                           block.attention.value, block.mlp.up):
                nn.init.normal_(linear.weight, std=std)
            # GPT-2 style: residual projections scaled down by depth
            for linear in (block.attention.output, block.mlp.down):
                nn.init.normal_(linear.weight, std=std / math.sqrt(2 * s.layers))
            nn.init.zeros_(block.mlp.up.bias)
            nn.init.zeros_(block.mlp.down.bias)

    def forward(self, ids, keep_attention=False):
        """ids (n) or (batch x n) -> logits (... x n x V).

        With keep_attention=True also returns a list, one per layer, of attention
        weights (batch x heads x n x n), or (heads x n x n) for 1-D ids.
        """
        single = ids.dim() == 1
        if single:
            ids = ids[None]
        n = ids.shape[1]
        if n > self.settings.longest:
            raise ValueError(f"sequence of {n} ids is longer than {self.settings.longest}")
        x = self.embedding(ids)
        cos = self.rope_cos[:n].to(x.dtype)
        sin = self.rope_sin[:n].to(x.dtype)
        mask = torch.ones(n, n, dtype=torch.bool, device=ids.device).triu(1)
        kept = []
        for block in self.layers:
            x, weights = block(x, cos, sin, mask, keep_attention)
            if keep_attention:
                kept.append(weights[0] if single else weights)
        logits = self.final_norm(x) @ self.embedding.weight.t()
        if single:
            logits = logits[0]
        return (logits, kept) if keep_attention else logits


def from_exported(settings: dict, weights: dict) -> StoreModel:
    """A StoreModel holding exported weights.

    settings: the manifest's "settings"; weights: name -> NumPy array in the file's
    layout (tools/training/export.py), whose linear weights are (in x out) and so transposed back
    here.
    """
    s = Settings(vocabulary_size=settings["vocabulary_size"], dimensions=settings["dimensions"],
                 layers=settings["layers"], heads=settings["heads"], head_size=settings["head_size"],
                 mlp_width=settings["mlp_width"], longest=settings["longest"],
                 norm_epsilon=settings["norm_epsilon"], rope_base=settings["rope_base"])
    # the model takes the weights' dtype before loading them, so float64 arrays stay exact
    model = StoreModel(s).to(torch.as_tensor(weights["embedding"][:1]).dtype)
    state = {"embedding.weight": weights["embedding"],
             "final_norm.weight": weights["final_norm.weight"],
             "final_norm.bias": weights["final_norm.bias"]}
    for i in range(s.layers):
        p = f"layers.{i}."
        for norm in ("attention_norm", "mlp_norm"):
            state[p + norm + ".weight"] = weights[p + norm + ".weight"]
            state[p + norm + ".bias"] = weights[p + norm + ".bias"]
        for part in ("query", "key", "value", "output"):
            state[p + f"attention.{part}.weight"] = weights[p + "attention." + part].T
        for part in ("up", "down"):
            state[p + f"mlp.{part}.weight"] = weights[p + f"mlp.{part}.weight"].T
            state[p + f"mlp.{part}.bias"] = weights[p + f"mlp.{part}.bias"]
    model.load_state_dict({k: torch.as_tensor(v.copy()) for k, v in state.items()})
    return model.eval()
