"""Independent float64 reference of the exported store model, and the C++ goldens.

    python3 tools/references/reference.py [--model models/store] [--out tests/data/store]
                               [--check-against /work/ckpt/final.pt]

Loads ONLY the exported files (manifest.json, model.safetensors through the strict
reader of tools/common/safetensors_io.py, vocabulary.txt/merges.txt through tools/common/tokenizer.py) and runs the
forward pass written out step by step in float64, in the file's (in x out)
layout. Writes to --out:

  golden.safetensors  p{k}.ids (I64, n), p{k}.logits (F64, n x V),
                      p{k}.attention (F64, layers x heads x n x n)
  golden.json         [{"key", "split", "name", "description", "ids"}, ...]
  validation_ids.txt  product_ids(name, description, longest) of every
                      validation product, space-separated, in validation.tsv order

--check-against loads the training checkpoint into tools/common/model.py in float64 and
requires the logits to agree to 1e-10 (the only use of training code here).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages

from common.safetensors_io import read_safetensors, write_safetensors  # noqa: E402
from common.tokenizer import Tokenizer, read_products  # noqa: E402

EXEMPLAR = "double chaise patio furniture cover"


# ----------------------------------------------------------------------------
# the reference forward pass


class Reference:
    def __init__(self, folder):
        folder = Path(folder)
        self.manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        s = self.manifest["settings"]
        assert s["norm"] == "layernorm" and s["activation"] == "gelu_erf"
        assert s["rope_pairing"] == "rotate_half" and s["weight_layout"] == "in_out"
        assert s["tied_embeddings"] and not s["attention_bias"]
        self.settings = s
        arrays, _ = read_safetensors(folder / self.manifest["weights"])
        self.w = {k: torch.from_numpy(v.astype(np.float64)) for k, v in arrays.items()}
        tk = self.manifest["tokenizer"]
        self.tokenizer = Tokenizer.load(folder, tk["vocabulary"], tk["merges"])
        if len(self.tokenizer) != s["vocabulary_size"]:
            raise ValueError("vocabulary.txt size differs from the manifest")
        if tuple(self.w["embedding"].shape) != (s["vocabulary_size"], s["dimensions"]):
            raise ValueError("embedding shape differs from the manifest")

    def norm(self, x, prefix):
        mean = x.mean(dim=-1, keepdim=True)
        variance = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.settings["norm_epsilon"]) \
            * self.w[prefix + ".weight"] + self.w[prefix + ".bias"]

    def rope(self, x):
        """x (heads x n x d): rotate-half, dimension j paired with j + d/2."""
        d = x.shape[-1]
        half = d // 2
        n = x.shape[-2]
        j = torch.arange(half, dtype=torch.float64)
        frequency = self.settings["rope_base"] ** (-2.0 * j / d)
        angle = torch.arange(n, dtype=torch.float64)[:, None] * frequency[None, :]
        cos, sin = torch.cos(angle), torch.sin(angle)
        a, b = x[..., :half], x[..., half:]
        return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)

    def forward(self, ids):
        """ids: list of ints -> (logits n x V, attention layers x heads x n x n), float64."""
        s, w = self.settings, self.w
        heads, d = s["heads"], s["head_size"]
        n = len(ids)
        if not 1 <= n <= s["longest"]:
            raise ValueError(f"{n} ids: must be 1..{s['longest']}")
        x = w["embedding"][torch.tensor(ids, dtype=torch.long)]          # n x 128
        future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        kept = []
        for layer in range(s["layers"]):
            p = f"layers.{layer}."
            h = self.norm(x, p + "attention_norm")
            q = (h @ w[p + "attention.query"]).view(n, heads, d).transpose(0, 1)  # heads x n x d
            k = (h @ w[p + "attention.key"]).view(n, heads, d).transpose(0, 1)
            v = (h @ w[p + "attention.value"]).view(n, heads, d).transpose(0, 1)
            q, k = self.rope(q), self.rope(k)
            scores = (q @ k.transpose(1, 2)) / math.sqrt(d)
            scores = scores.masked_fill(future, float("-inf"))
            scores = scores - scores.max(dim=-1, keepdim=True).values
            e = torch.exp(scores)
            weights = e / e.sum(dim=-1, keepdim=True)                      # heads x n x n
            kept.append(weights)
            o = (weights @ v).transpose(0, 1).reshape(n, heads * d)
            x = x + o @ w[p + "attention.output"]
            h = self.norm(x, p + "mlp_norm")
            u = h @ w[p + "mlp.up.weight"] + w[p + "mlp.up.bias"]
            u = 0.5 * u * (1.0 + torch.erf(u / math.sqrt(2.0)))
            x = x + u @ w[p + "mlp.down.weight"] + w[p + "mlp.down.bias"]
        logits = self.norm(x, "final_norm") @ w["embedding"].T
        return logits, torch.stack(kept)


# ----------------------------------------------------------------------------
# golden selection


def choose_products(tokenizer, validation, train, longest, count=8):
    """Deterministic choice: the exemplar, a product cut to exactly `longest` ids,
    one with an empty description, then short and medium validation products."""
    chosen = []

    def add(split, product):
        if product not in [(c[1], c[2]) for c in chosen]:
            chosen.append((split, product[0], product[1]))

    exemplar = [p for p in validation if p[0] == EXEMPLAR]
    if not exemplar:
        raise SystemExit(f"validation split has no product named {EXEMPLAR!r}")
    add("validation", exemplar[0])

    full = [len(tokenizer.product_ids(n, d, 10**9)) for n, d in validation]
    long_ones = [i for i, l in enumerate(full) if l > longest]
    if long_ones:
        add("validation", validation[long_ones[0]])
    else:
        # the validation split has no product longer than `longest`: take the
        # first such product of the training split instead (recorded as "train")
        long_train = [p for p in train if len(tokenizer.product_ids(p[0], p[1], 10**9)) > longest]
        if long_train:
            add("train", long_train[0])
        else:  # no product is long enough: lengthen the longest validation product
            i = max(range(len(validation)), key=lambda i: (full[i], -i))
            name, description = validation[i]
            while len(tokenizer.product_ids(name, description, 10**9)) <= longest:
                description = description + " " + validation[i][1]
            add("constructed", (name, description))

    empties = [p for p in validation if p[1] == ""]
    if empties:
        add("validation", empties[0])
    # short ones (8..30 ids), then medium ones, in file order
    short = [p for p, l in zip(validation, full) if 8 <= l <= 30]
    medium = [p for p, l in zip(validation, full) if 40 <= l <= 70]
    for p in short[:3]:
        add("validation", p)
    for p in medium:
        if len(chosen) >= count:
            break
        add("validation", p)
    return chosen


def write_goldens(ref, chosen, out):
    """golden.safetensors and golden.json for the chosen products; returns (the tensors written,
    as (dtype, array) by name, and the file's size), after checking that the reader reads them back."""
    tok, longest = ref.tokenizer, ref.settings["longest"]
    tensors = OrderedDict()
    records = []
    for k, (split, name, description) in enumerate(chosen):
        ids = tok.product_ids(name, description, longest)
        logits, attention = ref.forward(ids)
        key = f"p{k}"
        tensors[key + ".ids"] = ("I64", np.array(ids, dtype=np.int64))
        tensors[key + ".logits"] = ("F64", logits.numpy())
        tensors[key + ".attention"] = ("F64", attention.numpy())
        records.append(OrderedDict([("key", key), ("split", split), ("name", name),
                                    ("description", description), ("ids", ids)]))
        print(f"{key}: {split}, {len(ids)} ids, {name!r}")
    size = write_safetensors(out / "golden.safetensors", tensors,
                             metadata={"format": "attn-store-golden", "version": "1",
                                       "model": "models/store/model.safetensors"})
    (out / "golden.json").write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")

    # the reader reads back what the writer wrote
    back, _ = read_safetensors(out / "golden.safetensors")
    for name, (_, array) in tensors.items():
        assert np.array_equal(back[name], array), name
    return tensors, size


def check_against(checkpoint, tok, chosen, longest, tensors):
    """--check-against: the training checkpoint in float64 must give the goldens' logits to 1e-10."""
    from common.model import Settings, StoreModel
    state = torch.load(checkpoint)
    model = StoreModel(Settings(**state["settings"]))
    model.load_state_dict(state["model"])
    model.double().eval()
    worst = 0.0
    worst_attention = 0.0
    with torch.no_grad():
        for k, (_, name, description) in enumerate(chosen):
            ids = tok.product_ids(name, description, longest)
            logits, attention = model(torch.tensor(ids), keep_attention=True)
            worst = max(worst, float((logits - torch.from_numpy(
                tensors[f"p{k}.logits"][1])).abs().max()))
            worst_attention = max(worst_attention, float((torch.stack(attention) - torch.from_numpy(
                tensors[f"p{k}.attention"][1])).abs().max()))
    print(f"reference vs training model (float64): max |logit difference| {worst:.3e}, "
          f"max |attention difference| {worst_attention:.3e}")
    if not worst <= 1e-10:
        raise SystemExit("reference and training model disagree by more than 1e-10")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="models/store")
    p.add_argument("--data", default="models/store", help="folder with validation.tsv, train.tsv")
    p.add_argument("--out", default="tests/data/store")
    p.add_argument("--check-against", default="",
                   help="training checkpoint (final.pt) whose float64 logits must agree")
    args = p.parse_args(argv)
    torch.set_num_threads(2)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    ref = Reference(args.model)
    tok = ref.tokenizer
    longest = ref.settings["longest"]
    validation = read_products(Path(args.data) / "validation.tsv")
    train = read_products(Path(args.data) / "train.tsv")

    with open(out / "validation_ids.txt", "w", encoding="utf-8", newline="\n") as f:
        for name, description in validation:
            f.write(" ".join(map(str, tok.product_ids(name, description, longest))) + "\n")

    chosen = choose_products(tok, validation, train, longest)
    tensors, size = write_goldens(ref, chosen, out)
    print(f"wrote {out / 'golden.safetensors'} ({size / 1e6:.2f} MB), golden.json, "
          f"validation_ids.txt ({len(validation)} products)")
    if args.check_against:
        check_against(args.check_against, tok, chosen, longest, tensors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
