"""The store corpus's models: one pre-norm causal transformer with rotary positions, in two
architectures that share the attention, the residual block, the forward pass and the
initialisation, and differ in their norms, MLPs, key/value heads and parameter names.

store (Settings, StoreModel; fixed by the C++ side, see models/store/README.md): width 128,
4 layers, 4 heads of 32, context 160, LayerNorm eps 1e-5, attention projections without
bias, rotary positions (base 10000, rotate-half pairing: dimension j with j+16), scores
scaled by 1/sqrt(32), MLP 128 -> 512 -> 128 with exact (erf) GELU, final LayerNorm,
logits = final_norm(x) @ embedding^T (tied, no bias).

llama (LlamaSettings, LlamaStoreModel): written from the Hugging Face LlamaForCausalLM
formulas, with its parameter names, so that `state_dict()` (minus the tied `lm_head.weight`)
is a checkpoint that LlamaForCausalLM would load as it stands:

  model.embed_tokens.weight                          V x 128
  model.layers.L.input_layernorm.weight              128
  model.layers.L.self_attn.{q,o}_proj.weight         128 x 128   (out x in, torch.nn.Linear)
  model.layers.L.self_attn.{k,v}_proj.weight         64 x 128
  model.layers.L.post_attention_layernorm.weight     128
  model.layers.L.mlp.{gate,up}_proj.weight           I x 128
  model.layers.L.mlp.down_proj.weight                128 x I
  model.norm.weight                                  128
  lm_head.weight                                     V x 128  (the same tensor as embed_tokens)

One llama decoder layer, x the n x 128 residual stream:

  h = rmsnorm(x; input_layernorm)                    x / sqrt(mean(x^2) + eps) * weight
  q, k, v = h Wq^T, h Wk^T, h Wv^T                   n x 4*32, n x 2*32, n x 2*32
  q, k = rope(q), rope(k)                            per head: q cos + rotate_half(q) sin
  query head h reads key/value head h // 2           (grouped-query attention)
  w = softmax(q k^T / sqrt(32), causal)
  x = x + merge_heads(w v) Wo^T
  x = x + down(silu(gate(h2)) * up(h2)),  h2 = rmsnorm(x; post_attention_layernorm)

then logits = rmsnorm(x; norm) E^T. Both architectures rotate dimension j with j + 16 of a
head of 32 by position * base^(-2j/32); rotate_half(x) = (-x[16:], x[:16]).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Settings:
    """The store architecture's hyper-parameters (manifest.json's "settings" names)."""

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


@dataclass
class LlamaSettings:
    """The llama architecture's hyper-parameters, named as in a Hugging Face LlamaConfig."""

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


def rope_tables(longest: int, head_size: int, base: float, dtype=torch.float32, reciprocal=False):
    """cos and sin tables (longest x head_size/2): angle = position * base^(-2j/head_size).

    reciprocal=True computes the frequency as Hugging Face does, 1 / base^(2j/head_size),
    which rounds differently in the last bit: each architecture keeps its own formula so
    that its trained weights see the angles they were trained with.
    """
    half = head_size // 2
    j = torch.arange(half, dtype=torch.float64)
    frequency = 1.0 / base ** (2.0 * j / head_size) if reciprocal else base ** (-2.0 * j / head_size)
    positions = torch.arange(longest, dtype=torch.float64)
    angle = positions[:, None] * frequency[None, :]
    return torch.cos(angle).to(dtype), torch.sin(angle).to(dtype)


def apply_rope(x, cos, sin):
    """Rotate-half RoPE on (..., n, head_size); cos/sin are (n, head_size/2)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


# ----------------------------------------------------------------------------
# attention, shared: the architectures differ only in the projections' names


class Attention(nn.Module):
    """Causal self-attention with rotary positions, projections without bias. With fewer
    key/value heads than query heads, each key/value head serves a run of consecutive query
    heads ([kv0, kv0, kv1, kv1] for 4 over 2: grouped-query attention)."""

    # the query, key, value and output projections' attribute (and so parameter) names
    projection_names = ("query", "key", "value", "output")

    def __init__(self, dimensions: int, heads: int, head_size: int, kv_heads: int | None = None):
        super().__init__()
        kv_heads = heads if kv_heads is None else kv_heads
        if heads % kv_heads:
            raise ValueError(f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
        self.heads, self.kv_heads, self.head_size = heads, kv_heads, head_size
        shapes = ((dimensions, heads * head_size), (dimensions, kv_heads * head_size),
                  (dimensions, kv_heads * head_size), (heads * head_size, dimensions))
        for name, (inputs, outputs) in zip(self.projection_names, shapes):
            setattr(self, name, nn.Linear(inputs, outputs, bias=False))

    def projections(self):
        """(query, key, value, output) nn.Linear modules."""
        return tuple(getattr(self, name) for name in self.projection_names)

    def forward(self, x, cos, sin, mask, keep_attention=False):
        """x (b x n x dimensions) -> (b x n x dimensions, weights b x heads x n x n or None)."""
        query, key, value, output = self.projections()
        b, n, _ = x.shape

        def split(t, heads):  # (b, n, heads*size) -> (b, heads, n, size), head-major columns
            return t.view(b, n, heads, self.head_size).transpose(1, 2)

        q = apply_rope(split(query(x), self.heads), cos, sin)
        k = apply_rope(split(key(x), self.kv_heads), cos, sin)
        v = split(value(x), self.kv_heads)
        if self.kv_heads != self.heads:
            group = self.heads // self.kv_heads
            k = k.repeat_interleave(group, dim=1)
            v = v.repeat_interleave(group, dim=1)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.head_size))
        weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        o = (weights @ v).transpose(1, 2).reshape(b, n, self.heads * self.head_size)
        return output(o), (weights if keep_attention else None)


class LlamaAttention(Attention):
    projection_names = ("q_proj", "k_proj", "v_proj", "o_proj")


# ----------------------------------------------------------------------------
# the parts that differ: norms and MLPs


class MLP(nn.Module):
    """dimensions -> mlp_width -> dimensions with biases and exact (erf) GELU."""

    def __init__(self, s: Settings):
        super().__init__()
        self.up = nn.Linear(s.dimensions, s.mlp_width)
        self.down = nn.Linear(s.mlp_width, s.dimensions)

    def input_projections(self):
        return (self.up,)

    def output_projection(self):
        return self.down

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))  # exact erf GELU (approximate='none')


class LlamaMLP(nn.Module):
    """down(silu(gate(x)) * up(x)), no biases."""

    def __init__(self, s: LlamaSettings):
        super().__init__()
        self.gate_proj = nn.Linear(s.hidden_size, s.intermediate_size, bias=False)
        self.up_proj = nn.Linear(s.hidden_size, s.intermediate_size, bias=False)
        self.down_proj = nn.Linear(s.intermediate_size, s.hidden_size, bias=False)

    def input_projections(self):
        return (self.gate_proj, self.up_proj)

    def output_projection(self):
        return self.down_proj

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaRMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.variance_epsilon = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon) * self.weight


# ----------------------------------------------------------------------------
# the residual block, shared; each architecture builds its parts under its own names


class PreNormBlock(nn.Module):
    """x + attention(norm(x)), then x + mlp(norm(x)). Subclasses create the four parts (in
    their own order, which fixes the initial weights a seed gives) and name them in parts()."""

    def parts(self):
        """(attention norm, attention, MLP norm, MLP)."""
        raise NotImplementedError

    def forward(self, x, cos, sin, mask, keep_attention=False):
        attention_norm, attention, mlp_norm, mlp = self.parts()
        a, weights = attention(attention_norm(x), cos, sin, mask, keep_attention)
        x = x + a
        x = x + mlp(mlp_norm(x))
        return x, weights


class Block(PreNormBlock):
    def __init__(self, s: Settings):
        super().__init__()
        self.attention_norm = nn.LayerNorm(s.dimensions, eps=s.norm_epsilon)
        self.attention = Attention(s.dimensions, s.heads, s.head_size)
        self.mlp_norm = nn.LayerNorm(s.dimensions, eps=s.norm_epsilon)
        self.mlp = MLP(s)

    def parts(self):
        return self.attention_norm, self.attention, self.mlp_norm, self.mlp


class LlamaDecoderLayer(PreNormBlock):
    def __init__(self, s: LlamaSettings):
        super().__init__()
        self.self_attn = LlamaAttention(s.hidden_size, s.num_attention_heads, s.head_dim, s.num_key_value_heads)
        self.mlp = LlamaMLP(s)
        self.input_layernorm = LlamaRMSNorm(s.hidden_size, s.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(s.hidden_size, s.rms_norm_eps)

    def parts(self):
        return self.input_layernorm, self.self_attn, self.post_attention_layernorm, self.mlp


# ----------------------------------------------------------------------------
# the whole model: forward pass and initialisation shared


class CausalModel(nn.Module):
    """Embedding, pre-norm blocks, final norm, tied output matrix. Subclasses provide the
    modules and longest, blocks(), embedding_weight, embed(ids) and unembed(x).

    rope_cos/rope_sin are plain float64 attributes (not buffers), so .double()/.float()
    leave them exact; they are cast to the activations' dtype in forward."""

    longest: int

    def blocks(self):
        raise NotImplementedError

    def embed(self, ids):
        raise NotImplementedError

    def unembed(self, x):
        """The final norm and the output matrix: (... x dimensions) -> logits (... x V)."""
        raise NotImplementedError

    def reset_parameters(self):
        # std 0.02 (Hugging Face's initializer_range); the projections that write into the
        # residual stream are scaled down by depth (GPT-2 style); biases start at zero
        blocks = self.blocks()
        std = 0.02
        residual_std = std / math.sqrt(2 * len(blocks))
        nn.init.normal_(self.embedding_weight, std=std)
        for block in blocks:
            _, attention, _, mlp = block.parts()
            query, key, value, output = attention.projections()
            for linear in (query, key, value) + mlp.input_projections():
                nn.init.normal_(linear.weight, std=std)
            for linear in (output, mlp.output_projection()):
                nn.init.normal_(linear.weight, std=residual_std)
            for linear in mlp.input_projections() + (mlp.output_projection(),):
                if linear.bias is not None:
                    nn.init.zeros_(linear.bias)

    def forward(self, ids, keep_attention=False):
        """ids (n) or (batch x n) -> logits (... x n x V).

        With keep_attention=True also returns a list, one per layer, of attention
        weights (batch x heads x n x n), or (heads x n x n) for 1-D ids.
        """
        single = ids.dim() == 1
        if single:
            ids = ids[None]
        n = ids.shape[1]
        if n > self.longest:
            raise ValueError(f"sequence of {n} ids is longer than {self.longest}")
        x = self.embed(ids)
        cos = self.rope_cos[:n].to(x.dtype)
        sin = self.rope_sin[:n].to(x.dtype)
        mask = torch.ones(n, n, dtype=torch.bool, device=ids.device).triu(1)
        kept = []
        for block in self.blocks():
            x, weights = block(x, cos, sin, mask, keep_attention)
            if keep_attention:
                kept.append(weights[0] if single else weights)
        logits = self.unembed(x)
        if single:
            logits = logits[0]
        return (logits, kept) if keep_attention else logits


class StoreModel(CausalModel):
    def __init__(self, s: Settings):
        super().__init__()
        self.settings = s
        self.longest = s.longest
        self.embedding = nn.Embedding(s.vocabulary_size, s.dimensions)
        self.layers = nn.ModuleList(Block(s) for _ in range(s.layers))
        self.final_norm = nn.LayerNorm(s.dimensions, eps=s.norm_epsilon)
        self.rope_cos, self.rope_sin = rope_tables(s.longest, s.head_size, s.rope_base, dtype=torch.float64)
        self.reset_parameters()

    @property
    def embedding_weight(self):
        return self.embedding.weight

    def blocks(self):
        return self.layers

    def embed(self, ids):
        return self.embedding(ids)

    def unembed(self, x):
        return self.final_norm(x) @ self.embedding.weight.t()


class LlamaBody(nn.Module):
    """The `model.` part of LlamaForCausalLM: embedding, decoder layers, final norm."""

    def __init__(self, s: LlamaSettings):
        super().__init__()
        self.embed_tokens = nn.Embedding(s.vocab_size, s.hidden_size)
        self.layers = nn.ModuleList(LlamaDecoderLayer(s) for _ in range(s.num_hidden_layers))
        self.norm = LlamaRMSNorm(s.hidden_size, s.rms_norm_eps)


class LlamaStoreModel(CausalModel):
    """LlamaForCausalLM's structure and names, with the output matrix tied to the embedding."""

    def __init__(self, s: LlamaSettings):
        super().__init__()
        self.settings = s
        self.longest = s.max_position_embeddings
        self.model = LlamaBody(s)
        self.lm_head = nn.Linear(s.hidden_size, s.vocab_size, bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight
        self.rope_cos, self.rope_sin = rope_tables(s.max_position_embeddings, s.head_dim, s.rope_theta,
                                                   dtype=torch.float64, reciprocal=True)
        self.reset_parameters()

    @property
    def embedding_weight(self):
        return self.model.embed_tokens.weight

    def blocks(self):
        return self.model.layers

    def embed(self, ids):
        return self.model.embed_tokens(ids)

    def unembed(self, x):
        return self.lm_head(self.model.norm(x))


# ----------------------------------------------------------------------------
# loading


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
