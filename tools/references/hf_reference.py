#!/usr/bin/python3
"""The forward pass of Hugging Face GPT2LMHeadModel, LlamaForCausalLM and Qwen2ForCausalLM
checkpoints in float64 PyTorch, written from the published formulas, with TransformerLens-named
activations: the reference attn's Hugging Face loader is tested against.

    /usr/bin/python3 tools/references/hf_reference.py --regenerate        # tests/data/hf/*: checkpoints + goldens
    /usr/bin/python3 tools/references/hf_reference.py DIR --ids 3,1,4     # goldens for a checkpoint directory

A checkpoint is read through a strict safetensors reader of its own (F16 and BF16 upcast exactly),
either model.safetensors or model.safetensors.index.json and its shards. Configuration this file
does not implement (rope_scaling, a sliding window, other activations) is refused, not ignored.

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


def causal_softmax(scores):
    """Row-wise softmax of heads × n × n scores over keys at or before each query."""
    n = scores.shape[-1]
    future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
    return torch.softmax(scores.masked_fill(future, -math.inf), dim=-1)


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


class Rotary:
    """LlamaForCausalLM and Qwen2ForCausalLM: RMSNorm, rotate-half RoPE, grouped-query attention,
    gated SiLU MLP. Qwen2 is Llama with q/k/v biases (never o or MLP biases)."""

    def __init__(self, config, tensors, where="checkpoint"):
        self.where = where
        c = config
        kind = c.get("model_type")
        self.width = _integer(c, "hidden_size", where)
        self.inner = _integer(c, "intermediate_size", where)
        self.layers = _integer(c, "num_hidden_layers", where)
        self.heads = _integer(c, "num_attention_heads", where)
        self.kv_heads = _integer(c, "num_key_value_heads", where, default=self.heads)
        self.vocab = _integer(c, "vocab_size", where)
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
        self.theta = _number(c, "rope_theta", where, 10000.0)
        if c.get("rope_scaling") is not None:
            raise CheckpointError(f"{where}: rope_scaling {c['rope_scaling']!r} is not implemented (only null)")
        if c.get("hidden_act", "silu") != "silu":
            raise CheckpointError(f"{where}: hidden_act {c['hidden_act']!r} is not implemented (only 'silu')")
        if kind == "qwen2":
            if _flag(c, "use_sliding_window", where, False):
                raise CheckpointError(f"{where}: use_sliding_window true is not implemented")
            qkv_bias, o_bias, mlp_bias = True, False, False
        else:
            qkv_bias = o_bias = _flag(c, "attention_bias", where, False)
            mlp_bias = _flag(c, "mlp_bias", where, False)
        tied = _flag(c, "tie_word_embeddings", where, False)

        w = Weights(tensors, where)
        C, M, H, Hkv, d = self.width, self.inner, self.heads, self.kv_heads, self.head_dim

        def linear(name, rows, columns, bias):
            return (w.take(name + ".weight", (rows, columns)), w.take(name + ".bias", (rows,)) if bias else None)

        self.embed = w.take("model.embed_tokens.weight", (self.vocab, C))
        self.blocks = []
        for layer in range(self.layers):
            a, m = f"model.layers.{layer}.self_attn.", f"model.layers.{layer}.mlp."
            self.blocks.append({
                "input_norm": w.take(f"model.layers.{layer}.input_layernorm.weight", (C,)),
                "q": linear(a + "q_proj", H * d, C, qkv_bias),
                "k": linear(a + "k_proj", Hkv * d, C, qkv_bias),
                "v": linear(a + "v_proj", Hkv * d, C, qkv_bias),
                "o": linear(a + "o_proj", C, H * d, o_bias),
                "post_norm": w.take(f"model.layers.{layer}.post_attention_layernorm.weight", (C,)),
                "gate": linear(m + "gate_proj", M, C, mlp_bias),
                "up": linear(m + "up_proj", M, C, mlp_bias),
                "down": linear(m + "down_proj", C, M, mlp_bias),
            })
        self.norm = w.take("model.norm.weight", (C,))
        self.unembed = self.embed if tied else w.take("lm_head.weight", (self.vocab, C))
        w.finish()

    def rms_norm(self, x, weight):
        scale = torch.sqrt((x ** 2).mean(-1, keepdim=True) + self.eps)
        return x / scale * weight, scale

    @staticmethod
    def apply(linear, x):
        weight, bias = linear
        return x @ weight.T if bias is None else x @ weight.T + bias

    def rotate(self, x):
        """RoPE on n × heads × d: x·cos + rotate_half(x)·sin, angle position / θ^(2i/d) for pair i."""
        n, d = x.shape[0], self.head_dim
        inv_freq = 1.0 / self.theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
        angles = torch.arange(n, dtype=torch.float64)[:, None] * inv_freq[None, :]
        cos = torch.cat([angles.cos(), angles.cos()], dim=-1)[:, None, :]
        sin = torch.cat([angles.sin(), angles.sin()], dim=-1)[:, None, :]
        rotated_half = torch.cat([-x[..., d // 2:], x[..., :d // 2]], dim=-1)
        return x * cos + rotated_half * sin

    def forward(self, ids):
        n = len(ids)
        H, Hkv, d, C = self.heads, self.kv_heads, self.head_dim, self.width
        hooks = {}
        x = self.embed[torch.as_tensor(ids, dtype=torch.long)]
        hooks["hook_embed"] = x
        attention = []
        group = H // Hkv
        for layer, block in enumerate(self.blocks):
            b = f"blocks.{layer}."
            hooks[b + "hook_resid_pre"] = x
            a, hooks[b + "ln1.hook_scale"] = self.rms_norm(x, block["input_norm"])
            q, k, v = (self.apply(block[p], a) for p in "qkv")
            hooks[b + "attn.hook_q"], hooks[b + "attn.hook_k"], hooks[b + "attn.hook_v"] = q, k, v
            q = self.rotate(q.reshape(n, H, d))
            k = self.rotate(k.reshape(n, Hkv, d))
            hooks[b + "attn.hook_rot_q"] = q.reshape(n, H * d)
            hooks[b + "attn.hook_rot_k"] = k.reshape(n, Hkv * d)
            kv_of_head = torch.arange(H) // group
            kh = k.transpose(0, 1)[kv_of_head]  # H × n × d
            vh = v.reshape(n, Hkv, d).transpose(0, 1)[kv_of_head]
            pattern = causal_softmax(q.transpose(0, 1) @ kh.transpose(1, 2) / math.sqrt(d))
            attention.append(pattern)
            z = pattern @ vh
            hooks[b + "attn.hook_z"] = z.transpose(0, 1).reshape(n, H * d)
            w_out, b_out = block["o"]
            result = torch.einsum("hnd,chd->nhc", z, w_out.reshape(C, H, d))
            hooks[b + "attn.hook_result"] = result.reshape(n, H * C)
            hooks[b + "hook_attn_out"] = result.sum(1) if b_out is None else result.sum(1) + b_out
            x = x + hooks[b + "hook_attn_out"]
            hooks[b + "hook_resid_mid"] = x
            a, hooks[b + "ln2.hook_scale"] = self.rms_norm(x, block["post_norm"])
            hooks[b + "mlp.hook_pre"] = self.apply(block["gate"], a)
            hooks[b + "mlp.hook_pre_linear"] = self.apply(block["up"], a)
            gate, up = hooks[b + "mlp.hook_pre"], hooks[b + "mlp.hook_pre_linear"]
            hooks[b + "mlp.hook_post"] = torch.nn.functional.silu(gate) * up
            hooks[b + "hook_mlp_out"] = self.apply(block["down"], hooks[b + "mlp.hook_post"])
            x = x + hooks[b + "hook_mlp_out"]
            hooks[b + "hook_resid_post"] = x
        final, hooks["ln_final.hook_scale"] = self.rms_norm(x, self.norm)
        return final @ self.unembed.T, torch.stack(attention), hooks


MODELS = {"gpt2": ("GPT2LMHeadModel", GPT2), "llama": ("LlamaForCausalLM", Rotary),
          "qwen2": ("Qwen2ForCausalLM", Rotary)}


def load(directory):
    """The model of a checkpoint directory (GPT2 or Rotary), its config checked against its tensors."""
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
    return MODELS[kind][1](config, read_weights(directory), where)


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
}


def context_of(config):
    return config["n_positions"] if config["model_type"] == "gpt2" else config["max_position_embeddings"]


def test_prompts(config, seed):
    """Prompts of 1 token, 9 tokens and the whole context, drawn over the vocabulary."""
    rng = np.random.default_rng([seed, 2026])
    return [rng.integers(0, config["vocab_size"], size=n).tolist() for n in (1, 9, context_of(config))]


def regenerate(out=TEST_DATA, names=None):
    """Write the test checkpoints and their goldens under out/<name>/."""
    for name, (architecture, config, dtype, options, seed) in TEST_CHECKPOINTS.items():
        if names and name not in names:
            continue
        directory = Path(out) / name
        full = hf_checkpoints.write_checkpoint(directory, architecture, config, dtype, seed, **options)
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
