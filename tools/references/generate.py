#!/usr/bin/env python3
"""Generate with the store model and a key/value cache; the golden generations of the C++ side.

    /usr/bin/python3 tools/references/generate.py --name "double chaise patio furniture cover" \\
        [--description TEXT] [--temperature 0] [--top-k 0] [--top-p 1] [--seed 0] \\
        [--max-tokens 160] [--banned 2,17] [--model models/store]
    /usr/bin/python3 tools/references/generate.py --golden tests/data/store/generation.json

The definitions the C++ generator shares (token for token):

* prompt: [<s>] + encode(name) + [<sep>] + encode(description), no </s>; a prompt longer
  than the context is an error.
* stop, checked before each token in this order: "end" once </s> is written (it stays in
  the written ids), "context" when len(prompt) + len(written) reaches the context, and
  "max_tokens" when max_tokens tokens are written. So when the context and max_tokens are
  reached together, the stop is "context".
* each written token's probability is softmax(raw logits)[id] in float64, whatever the
  sampling settings.
* the sampler (float64, on the logits of the last position) is `sample` below.
* "text" is the tokenizer's decode of the written ids without the final </s>.

The model runs in float64: tools/common/model.py's StoreModel holding models/store's exported
weights, driven one position at a time through `CachedDecoder`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import List, Sequence, Tuple

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages

from common.model import StoreModel, apply_rope, from_exported  # noqa: E402
from common.safetensors_io import read_safetensors  # noqa: E402
from references.reference import EXEMPLAR  # noqa: E402
from common.tokenizer import Tokenizer, read_products  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
STOPS = ("end", "context", "max_tokens")


# ----------------------------------------------------------------------------
# the model with a key/value cache


class CachedLayer(nn.Module):
    """One Block of a StoreModel on its slice of the cache (heads x context x head_size).

    Holds the block's parts rather than the block, so that torch.jit.script need not
    compile Block.forward (whose helper closure TorchScript cannot)."""

    def __init__(self, block, heads: int, head_size: int):
        super().__init__()
        self.heads = heads
        self.head_size = head_size
        self.scale = 1.0 / math.sqrt(head_size)
        self.attention_norm = block.attention_norm
        self.query = block.attention.query
        self.key = block.attention.key
        self.value = block.attention.value
        self.output = block.attention.output
        self.mlp_norm = block.mlp_norm
        self.mlp = block.mlp

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, start: int,
                keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """x (m x dimensions) at positions start .. start+m-1 -> x after the block."""
        m = x.shape[0]
        end = start + m
        h = self.attention_norm(x)
        q = apply_rope(self.split(self.query(h)), cos, sin)
        keys[:, start:end] = apply_rope(self.split(self.key(h)), cos, sin)
        values[:, start:end] = self.split(self.value(h))
        scores = (q @ keys[:, :end].transpose(-1, -2)) * self.scale
        if m > 1:  # a new position sees the cache and the new positions up to itself
            future = torch.ones(m, end, dtype=torch.bool).triu(start + 1)
            scores = scores.masked_fill(future, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        o = (weights @ values[:, :end]).transpose(0, 1).reshape(m, self.heads * self.head_size)
        x = x + self.output(o)
        return x + self.mlp(self.mlp_norm(x))

    def split(self, t: torch.Tensor) -> torch.Tensor:
        """(m x heads*head_size), head-major columns -> (heads x m x head_size)."""
        return t.view(t.shape[0], self.heads, self.head_size).transpose(0, 1)


class CachedDecoder(nn.Module):
    """A StoreModel run on a key/value cache, scriptable with torch.jit.script.

    The cache is two tensors (layers x heads x context x head_size): keys rotated at
    their absolute positions, and values. `forward` appends the positions
    start .. start+m-1 and returns their logits, so one call prefills a prompt and each
    further call with one id is a decoding step.
    """

    def __init__(self, model: StoreModel):
        super().__init__()
        s = model.settings
        self.heads = s.heads
        self.head_size = s.head_size
        self.context = s.longest
        self.layer_count = s.layers
        self.embedding = model.embedding
        self.layers = nn.ModuleList(CachedLayer(block, s.heads, s.head_size) for block in model.layers)
        self.final_norm = model.final_norm
        dtype = model.embedding.weight.dtype
        # StoreModel.forward casts its float64 tables to the activations' dtype the same way
        self.rope_cos = model.rope_cos.to(dtype)
        self.rope_sin = model.rope_sin.to(dtype)

    @torch.jit.export
    def new_cache(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """Empty keys and values, each (layers x heads x context x head_size)."""
        shape = [self.layer_count, self.heads, self.context, self.head_size]
        dtype = self.embedding.weight.dtype
        return torch.zeros(shape, dtype=dtype), torch.zeros(shape, dtype=dtype)

    def forward(self, ids: torch.Tensor, start: int, keys: torch.Tensor,
                values: torch.Tensor) -> torch.Tensor:
        """ids (m) at positions start .. start+m-1, appended to keys/values in place
        -> logits (m x V). Positions before `start` must already be in the cache."""
        end = start + ids.shape[0]
        if start < 0 or end > self.context:
            raise ValueError("positions past the context")
        x = self.embedding(ids)
        cos = self.rope_cos[start:end]
        sin = self.rope_sin[start:end]
        for index, layer in enumerate(self.layers):
            x = layer(x, cos, sin, start, keys[index], values[index])
        return self.final_norm(x) @ self.embedding.weight.t()


def load_weights(folder, dtype=np.float64):
    """-> (manifest, name -> NumPy array in `dtype`) of an exported model folder."""
    folder = Path(folder)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    arrays, _ = read_safetensors(folder / manifest["weights"])
    return manifest, {k: v.astype(dtype) for k, v in arrays.items()}


def load(folder="models/store", dtype=np.float64):
    """-> (CachedDecoder, StoreModel, Tokenizer) of an exported model folder, in `dtype`."""
    folder = Path(folder)
    manifest, weights = load_weights(folder, dtype)
    model = from_exported(manifest["settings"], weights)
    tk = manifest["tokenizer"]
    tokenizer = Tokenizer.load(folder, tk["vocabulary"], tk["merges"])
    return CachedDecoder(model).eval(), model, tokenizer


# ----------------------------------------------------------------------------
# prompt, sampler, generation


def prompt_ids(tokenizer: Tokenizer, name: str, description: str = "") -> List[int]:
    return [tokenizer.start] + tokenizer.encode(name) + [tokenizer.separator] \
        + tokenizer.encode(description)


@dataclass
class Options:
    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    max_tokens: int = 160
    banned: List[int] = field(default_factory=list)

    def check(self, vocabulary_size: int):
        if not (self.temperature >= 0 and math.isfinite(self.temperature)):
            raise ValueError(f"temperature must be finite and >= 0, got {self.temperature}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0, got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {self.max_tokens}")
        for i in self.banned:
            if not 0 <= i < vocabulary_size:
                raise ValueError(f"banned id {i} is outside 0 .. {vocabulary_size - 1}")
        if len(set(self.banned)) >= vocabulary_size:
            raise ValueError("every id is banned")


def sequential_sum(values: Sequence[float]) -> float:
    """Left to right, as the C++ side sums (np.sum would sum pairwise)."""
    total = 0.0
    for v in values:
        total += v
    return total


def normalised(weights: Sequence[float]) -> List[float]:
    total = sequential_sum(weights)
    return [w / total for w in weights]


def candidates(logits: np.ndarray, options: Options) -> Tuple[List[int], List[float]]:
    """The ids a non-greedy draw walks, in order, and their probabilities (float64)."""
    z = np.array(logits, dtype=np.float64)
    z[list(options.banned)] = -np.inf
    z = z / options.temperature
    # by z descending, ties by lower id; banned ids (-inf) are dropped before top-k
    order = [int(i) for i in np.lexsort((np.arange(z.size), -z)) if z[i] != -np.inf]
    if options.top_k > 0:
        order = order[:options.top_k]
    top = z[order[0]]
    p = normalised([math.exp(z[i] - top) for i in order])
    if options.top_p < 1:
        cumulative, keep = 0.0, len(order)
        for n, value in enumerate(p, start=1):
            cumulative += value
            if cumulative >= options.top_p:
                keep = n
                break
        order, p = order[:keep], normalised(p[:keep])
    return order, p


def greedy(logits: np.ndarray, banned: Sequence[int]) -> int:
    z = np.array(logits, dtype=np.float64)
    z[list(banned)] = -np.inf
    return int(np.argmax(z))  # the first, i.e. lowest, id among equal maxima


def sample(logits: np.ndarray, options: Options, rng: np.random.Generator) -> int:
    """One id from a logits row (V) in float64; draws one rng.random() unless greedy."""
    if options.temperature == 0:
        return greedy(logits, options.banned)
    order, p = candidates(logits, options)
    u = rng.random()
    cumulative = 0.0
    for i, value in zip(order, p):
        cumulative += value
        if u < cumulative:
            return i
    return order[-1]  # the cumulative sum rounded below u


def decision_margin(logits: np.ndarray, options: Options, u: float) -> float:
    """How far one decision is from going another way: for greedy the gap between the two
    largest allowed logits, otherwise the distance of u from the nearest cumulative sum.
    Another float64 implementation's logits differ by ~1e-13, so a margin far above that
    means it must pick the same id."""
    if options.temperature == 0:
        z = np.array(logits, dtype=np.float64)
        z[list(options.banned)] = -np.inf
        top2 = np.sort(z)[-2:]
        return float(top2[1] - top2[0])
    _, p = candidates(logits, options)
    cumulative, margin = 0.0, math.inf
    for value in p[:-1]:  # the last kept id takes whatever is left, so its sum is no boundary
        cumulative += value
        margin = min(margin, abs(u - cumulative))
    return margin


def probability(logits: np.ndarray, index: int) -> float:
    """softmax(logits)[index] in float64."""
    z = np.asarray(logits, dtype=np.float64)
    e = np.exp(z - z.max())
    return float(e[index] / e.sum())


def generate(decoder: CachedDecoder, prompt: Sequence[int], options: Options,
             end_id: int = 2, rows=None) -> Tuple[List[int], List[float], str]:
    """-> (written ids, their probabilities, stop reason) for one prompt; appends the logits
    row of every decision to `rows` if given."""
    vocabulary_size = decoder.embedding.weight.shape[0]
    options.check(vocabulary_size)
    context = decoder.context
    if not 1 <= len(prompt) <= context:
        raise ValueError(f"the prompt has {len(prompt)} ids, must be 1 .. {context}")
    rng = np.random.default_rng(options.seed)
    keys, values = decoder.new_cache()
    written: List[int] = []
    probabilities: List[float] = []
    with torch.inference_mode():
        logits = decoder(torch.tensor(list(prompt)), 0, keys, values)[-1]
        while True:
            if written and written[-1] == end_id:
                stop = "end"
            elif len(prompt) + len(written) >= context:
                stop = "context"
            elif len(written) >= options.max_tokens:
                stop = "max_tokens"
            else:
                stop = ""
            if stop:
                return written, probabilities, stop
            if written:  # the last written id's position, needed for the next token only
                position = len(prompt) + len(written) - 1
                logits = decoder(torch.tensor(written[-1:]), position, keys, values)[-1]
            row = logits.double().numpy()
            if rows is not None:
                rows.append(row.copy())
            token = sample(row, options, rng)
            written.append(token)
            probabilities.append(probability(row, token))


def text_of(tokenizer: Tokenizer, written: Sequence[int]) -> str:
    if written and written[-1] == tokenizer.end:
        written = written[:-1]
    return tokenizer.decode(written)


def run_record(decoder, tokenizer, name, description, options: Options) -> Tuple[dict, float]:
    """-> (the run as the golden file holds it, its smallest decision margin)."""
    prompt = prompt_ids(tokenizer, name, description)
    rows: List[np.ndarray] = []
    written, probabilities, stop = generate(decoder, prompt, options, tokenizer.end, rows)
    rng = np.random.default_rng(options.seed)
    draws = [rng.random() if options.temperature else 0.0 for _ in rows]
    margin = min((decision_margin(row, options, u) for row, u in zip(rows, draws)), default=math.inf)
    record = {"name": name, "description": description, "prompt_ids": prompt,
              "options": asdict(options), "ids": written, "probabilities": probabilities,
              "stop": stop, "text": text_of(tokenizer, written)}
    return record, margin


# ----------------------------------------------------------------------------
# the golden file


def sampled_runs(validation_names: Sequence[str]) -> List[Tuple[str, str, Options]]:
    """Runs that cover the sampler's settings; validation_names[0] is the exemplar."""
    a, b, c = validation_names[:3]
    return [
        (a, "", Options(temperature=1.0, seed=1)),
        (a, "", Options(temperature=1.0, seed=2)),
        (a, "", Options(temperature=0.7, top_k=40, seed=3)),
        (a, "", Options(temperature=1.3, top_p=0.9, seed=4)),
        (b, "", Options(temperature=1.0, top_k=5, seed=5)),
        (b, "", Options(temperature=0.7, top_p=0.5, seed=6)),
        (b, "", Options(temperature=1.3, top_k=40, top_p=0.9, seed=7)),
        (c, "", Options(temperature=1.0, top_k=5, top_p=0.9, seed=8)),
        (c, "", Options(temperature=1.3, seed=9)),
        # </s> banned: runs to the context
        (a, "", Options(temperature=1.0, top_k=40, seed=10, banned=[2, 3])),
        (a, "protect your", Options(temperature=0.7, top_k=40, top_p=0.9, seed=11)),
        (b, "", Options(temperature=1.0, seed=12, max_tokens=8)),
    ]


def greedy_banned_run(decoder, tokenizer, name) -> Tuple[str, str, Options]:
    """Greedy with </s> banned, and the first two ids greedy writes then banned too."""
    first, _, _ = generate(decoder, prompt_ids(tokenizer, name), Options(banned=[tokenizer.end]),
                           tokenizer.end)
    return name, "", Options(banned=sorted({first[0], first[1], tokenizer.end}))


def write_golden(path, model_folder="models/store", greedy_count=100, description_count=20):
    decoder, _, tokenizer = load(model_folder)
    context = decoder.context
    validation = read_products(Path(model_folder) / "validation.tsv")
    runs = [(name, "", Options(max_tokens=context)) for name, _ in validation[:greedy_count]]
    # greedy from a bare name writes </s> at once (most products' most likely description
    # is none), so longer greedy runs start the description with its first three words
    described = [(name, " ".join(d.split()[:3])) for name, d in validation if d][:description_count]
    runs += [(name, start, Options(max_tokens=context)) for name, start in described]
    names = [EXEMPLAR] + [name for name, _ in validation if name != EXEMPLAR][:2]
    runs += sampled_runs(names)
    runs.append(greedy_banned_run(decoder, tokenizer, EXEMPLAR))
    records = []
    for name, description, options in runs:
        record, margin = run_record(decoder, tokenizer, name, description, options)
        records.append(record)
        print(f"{len(records):3d} {record['stop']:10s} {len(record['ids']):3d} ids  margin {margin:.1e}  "
              f"{name} | {description} -> {record['text'][:50]}")
        if margin < 1e-9:
            print("    warning: a decision this close may go the other way in another implementation")
    golden = {"model": str(model_folder), "context": context, "runs": records}
    Path(path).write_text(compact_json(golden), encoding="utf-8")
    print(f"wrote {path} ({Path(path).stat().st_size / 1e3:.0f} kB, {len(records)} runs)")


def compact_json(golden) -> str:
    """One line per run field, so the file is small and diffs stay readable."""
    lines = ["{", f' "model": {json.dumps(golden["model"])},', f' "context": {golden["context"]},',
             ' "runs": [']
    for k, run in enumerate(golden["runs"]):
        fields = [f'  "{key}": {json.dumps(value)}' for key, value in run.items()]
        lines.append(" {\n" + ",\n".join(fields) + "\n }" + ("," if k + 1 < len(golden["runs"]) else ""))
    lines.append(" ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def parse_banned(text: str) -> List[int]:
    return [int(piece) for piece in text.replace(",", " ").split()]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="models/store")
    p.add_argument("--name", default=EXEMPLAR)
    p.add_argument("--description", default="")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--top-p", type=float, default=1.0)
    p.add_argument("--max-tokens", type=int, default=160)
    p.add_argument("--banned", default="", help="ids, separated by commas or spaces")
    p.add_argument("--golden", default="", help="write the golden generations to this file")
    args = p.parse_args(argv)
    torch.set_num_threads(2)
    if args.golden:
        write_golden(args.golden, args.model)
        return 0
    decoder, _, tokenizer = load(args.model)
    options = Options(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                      seed=args.seed, max_tokens=args.max_tokens, banned=parse_banned(args.banned))
    record, _ = run_record(decoder, tokenizer, args.name, args.description, options)
    print(record["text"])
    print(f"({len(record['ids'])} ids, stop: {record['stop']})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
