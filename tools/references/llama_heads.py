"""Which heads copy from the name and which read the previous token, in Python.

    python3 tools/references/llama_heads.py [--model models/store-llama] [--data models/store] [--products 300]

Loads an exported model (a Hugging Face folder with config.json, or the store model's
folder with manifest.json), runs it in float64 and prints, per head (layer.head,
1-based as the C++ examples number them):

* exemplar: at the description's second `furniture` of `double chaise patio furniture
  cover`, the weight on the name's `cover` (the token to copy) and P(cover);
* over the description positions of the first --products validation products:
  - previous: the mean weight on the position just before (even spread: mean 1/(i+1));
  - same token: at positions whose token occurs in the name, the weight on those name
    positions;
  - copy: at positions whose token occurs in the name followed by another name token,
    the weight on that following token (what the description would copy next);
  each with the even-spread value of the same positions next to it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages

from training.export_hf import read_exported, settings_of  # noqa: E402
from common.model import from_state_dict  # noqa: E402
from common.tokenizer import Tokenizer, read_products  # noqa: E402

EXEMPLAR = "double chaise patio furniture cover"
SEPARATOR = 1


def load(folder: Path):
    """(model in float64, heads per layer) of an exported folder."""
    if (folder / "config.json").exists():
        config, tensors = read_exported(folder)
        model = from_state_dict(settings_of(config), {k: v.double() for k, v in tensors.items()})
        return model, config["num_attention_heads"]
    from common.model import from_exported
    from common.safetensors_io import read_safetensors

    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    arrays, _ = read_safetensors(folder / manifest["weights"])
    weights = {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}
    return from_exported(manifest["settings"], weights), manifest["settings"]["heads"]


def attention(model, ids):
    with torch.no_grad():
        logits, kept = model(torch.tensor(ids), keep_attention=True)
    return logits, torch.stack(kept).numpy()  # layers x heads x n x n


def scores(model, tokenizer, products, limit):
    """{measure: (layers x heads) mean weight, measure + ' even': even-spread value}."""
    sums = {}

    def add(key, values):
        total, count = sums.get(key, (0.0, 0))
        sums[key] = (total + values, count + 1)

    for name, description in products[:limit]:
        ids = tokenizer.product_ids(name, description, 160)
        if SEPARATOR not in ids:
            continue
        sep = ids.index(SEPARATOR)
        name_positions = range(1, sep)
        _, weights = attention(model, ids)
        for i in range(sep + 1, len(ids)):
            add("previous", weights[:, :, i, i - 1])
            add("previous even", 1.0 / (i + 1))
            same = [j for j in name_positions if ids[j] == ids[i]]
            if same:
                add("same token", weights[:, :, i, same].sum(axis=-1))
                add("same token even", len(same) / (i + 1))
            following = [j + 1 for j in same if j + 1 < sep]
            if following:
                add("copy", weights[:, :, i, following].sum(axis=-1))
                add("copy even", len(following) / (i + 1))
    return {key: total / count for key, (total, count) in sums.items()}, {k: c for k, (_, c) in sums.items()}


def exemplar(model, tokenizer, products):
    name, description = next(p for p in products if p[0] == EXEMPLAR)
    ids = tokenizer.product_ids(name, description, 160)
    furniture, cover = tokenizer.encode("furniture")[0], tokenizer.encode("cover")[0]
    sep = ids.index(SEPARATOR)
    position = [i for i in range(sep + 1, len(ids)) if ids[i] == furniture][1]
    name_cover = ids.index(cover)
    logits, weights = attention(model, ids)
    p_cover = float(torch.softmax(logits[position], -1)[cover])
    return position, name_cover, weights[:, :, position, name_cover], weights[:, :, position, position - 1], p_cover


def table(title, values, even=None):
    layers, heads = values.shape
    print(title + (f" (even spread {even:.3f})" if even is not None else ""))
    print("          " + "".join(f"  head {h + 1}" for h in range(heads)))
    for layer in range(layers):
        print(f"  layer {layer + 1}" + "".join(f"  {values[layer, h]:6.3f}" for h in range(heads)))


def best(values):
    layer, head = np.unravel_index(np.argmax(values), values.shape)
    return f"{layer + 1}.{head + 1} ({values[layer, head]:.3f})"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="models/store-llama")
    p.add_argument("--data", default="models/store")
    p.add_argument("--products", type=int, default=300)
    args = p.parse_args(argv)
    folder = Path(args.model)
    model, _ = load(folder)
    tokenizer = Tokenizer.load(folder)
    validation = read_products(Path(args.data) / "validation.tsv")

    position, name_cover, on_cover, on_previous, p_cover = exemplar(model, tokenizer, validation)
    print(f"{folder}: exemplar `{EXEMPLAR}`, position {position} (description's second furniture), "
          f"P(cover) {p_cover:.4f}")
    table(f"weight on the name's cover (position {name_cover})", on_cover)
    print(f"  most: {best(on_cover)}")
    table("weight on the previous token", on_previous)

    means, counts = scores(model, tokenizer, validation, args.products)
    print(f"\nfirst {args.products} validation products: {counts['previous']} description positions, "
          f"{counts.get('same token', 0)} with their token in the name, "
          f"{counts.get('copy', 0)} with a name token to copy")
    for key in ("previous", "same token", "copy"):
        if key in means:
            table(key, means[key], float(means[key + " even"]))
            print(f"  most: {best(means[key])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
