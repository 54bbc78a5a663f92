"""Export the trained store model to models/store/model.safetensors + manifest.json.

    python3 tools/training/export.py [--checkpoint /work/ckpt/final.pt] [--out models/store]

The safetensors file is written by tools/common/safetensors_io.py (no safetensors
package here): 8-byte little-endian header length N, N bytes of JSON (padded with spaces
to a multiple of 8), then the raw little-endian data of each tensor, contiguous,
in header order, offsets relative to the start of the data section.

Linear weights are stored TRANSPOSED, as (in x out), because the C++ side computes
y = x . W; query/key/value columns are head-major (head h: columns 32h .. 32h+31).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import OrderedDict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages

from common.safetensors_io import write_safetensors  # noqa: E402


def layout(state):
    """Training state dict (torch tensors) -> ordered {name: float32 array} in file layout."""
    t = {k: v.detach().cpu().double().numpy() for k, v in state.items()}
    out = OrderedDict()
    out["embedding"] = t["embedding.weight"]
    layer = 0
    while f"layers.{layer}.attention_norm.weight" in t:
        p = f"layers.{layer}."
        out[p + "attention_norm.weight"] = t[p + "attention_norm.weight"]
        out[p + "attention_norm.bias"] = t[p + "attention_norm.bias"]
        for part in ("query", "key", "value", "output"):
            out[p + "attention." + part] = t[p + f"attention.{part}.weight"].T  # in x out
        out[p + "mlp_norm.weight"] = t[p + "mlp_norm.weight"]
        out[p + "mlp_norm.bias"] = t[p + "mlp_norm.bias"]
        out[p + "mlp.up.weight"] = t[p + "mlp.up.weight"].T  # 128 x 512
        out[p + "mlp.up.bias"] = t[p + "mlp.up.bias"]
        out[p + "mlp.down.weight"] = t[p + "mlp.down.weight"].T  # 512 x 128
        out[p + "mlp.down.bias"] = t[p + "mlp.down.bias"]
        layer += 1
    out["final_norm.weight"] = t["final_norm.weight"]
    out["final_norm.bias"] = t["final_norm.bias"]
    return out


def manifest(settings, summary):
    return OrderedDict([
        ("format", "attn-store-model"),
        ("version", 1),
        ("settings", OrderedDict([
            ("layers", settings["layers"]),
            ("heads", settings["heads"]),
            ("dimensions", settings["dimensions"]),
            ("head_size", settings["head_size"]),
            ("mlp_width", settings["mlp_width"]),
            ("longest", settings["longest"]),
            ("vocabulary_size", settings["vocabulary_size"]),
            ("norm", "layernorm"),
            ("norm_epsilon", settings["norm_epsilon"]),
            ("activation", "gelu_erf"),
            ("rope_base", float(settings["rope_base"])),
            ("rope_pairing", "rotate_half"),
            ("attention_bias", False),
            ("tied_embeddings", True),
            ("weight_layout", "in_out"),
        ])),
        ("tokenizer", OrderedDict([
            ("vocabulary", "vocabulary.txt"),
            ("merges", "merges.txt"),
            ("lowercase", "ascii"),
            ("end_of_word", "</w>"),
            ("specials", OrderedDict([("start", "<s>"), ("separator", "<sep>"),
                                      ("end", "</s>"), ("unknown", "<unk>")])),
        ])),
        ("weights", "model.safetensors"),
        ("training", summary),
    ])


def training_markdown(s, loss_detail="; batches of short products weigh more, see Quality for a per-token figure"):
    """The training run's table (a model README's), from train.py's summary."""
    minutes = s["wall_seconds"] / 60
    threads = f"{s['threads']} thread" + ("" if s["threads"] == 1 else "s")
    rows = [
        ("corpus", f"`{s['corpus']}`: {s['training_products']:,} training, "
                   f"{s['validation_products']:,} validation products"),
        ("seed", s["seed"]),
        ("steps", f"{s['steps']:,}" + ("" if s["steps"] == s.get("planned_steps", s["steps"])
                                       else f" (of {s['planned_steps']:,} planned: time limit)")),
        ("batch", f"{s['batch_size']} products, padded to the batch's longest"),
        ("optimizer", f"AdamW (β 0.9, 0.95), peak learning rate {s['learning_rate']}, "
                      f"{s['warmup']} warm-up steps, cosine decay to 10 %, weight decay "
                      f"{s['weight_decay']} on the projection matrices, gradient clipping 1.0"),
        ("tokens seen", f"{s['tokens_seen']:,} next-token targets"),
        ("final train loss", f"{s['final_train_loss']:.4f} nats/token (mean of the per-batch "
                             f"losses of the last evaluation interval{loss_detail})"),
        ("final validation loss", f"{s['final_validation_loss']:.4f} nats/token (whole split)"),
        ("wall time", f"{s['wall_seconds']:.0f} s ({minutes:.1f} min) of training on "
                      f"{threads} of a shared 2-core machine"),
        ("torch", s["torch_version"]),
    ]
    lines = ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    return "\n".join(lines) + "\n"


def write_manifest(path, data):
    Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def main(argv=None):
    import torch

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default="/work/ckpt/final.pt")
    p.add_argument("--out", default="models/store")
    args = p.parse_args(argv)
    out = Path(args.out)
    state = torch.load(args.checkpoint)
    settings = state["settings"]
    # final.pt carries the run's summary; an intermediate store.pt only its step
    summary = dict(state.get("summary") or {"steps": state.get("step"), "intermediate": True})
    vocabulary = (out / "vocabulary.txt").read_bytes().decode("utf-8").split("\n")[:-1]
    if vocabulary != state["vocabulary"]:
        raise SystemExit(f"{out / 'vocabulary.txt'} differs from the checkpoint's vocabulary")
    tensors = layout(state["model"])
    expected = {"embedding": (settings["vocabulary_size"], settings["dimensions"])}
    if tensors["embedding"].shape != expected["embedding"]:
        raise SystemExit(f"embedding shape {tensors['embedding'].shape} != {expected['embedding']}")
    size = write_safetensors(out / "model.safetensors",
                             OrderedDict((k, ("F32", v)) for k, v in tensors.items()),
                             metadata={"format": "attn-store-model", "version": "1"})
    # keep quality numbers a previous quality.py run wrote, if the weights are the same run
    old = out / "manifest.json"
    if old.exists():
        previous = json.loads(old.read_text(encoding="utf-8")).get("training", {})
        if "quality" in previous and all(previous.get(k) == summary.get(k) for k in
                                         ("steps", "seed", "final_validation_loss")):
            summary["quality"] = previous["quality"]
    write_manifest(out / "manifest.json", manifest(settings, summary))
    readme = out / "README.md"
    if readme.exists() and not summary.get("intermediate"):
        text = readme.read_text(encoding="utf-8")
        begin, end = "<!-- training:begin -->", "<!-- training:end -->"
        if begin in text and end in text:
            before, rest = text.split(begin, 1)
            _, after = rest.split(end, 1)
            readme.write_text(before + begin + "\n" + training_markdown(summary) + end + after,
                              encoding="utf-8")
    print(f"wrote {out / 'model.safetensors'} ({size} bytes, {len(tensors)} tensors) "
          f"and {out / 'manifest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
