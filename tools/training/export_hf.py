"""Export the Llama-architecture store model in Hugging Face layout.

    python3 tools/training/export_hf.py [--checkpoint /work/ckpt-llama/final.pt]
                               [--tokenizer models/store] [--out models/store-llama]

Writes to --out what a LlamaForCausalLM checkpoint downloaded from a model hub holds:

  config.json        a LlamaConfig as `save_pretrained` writes it (keys sorted, indent 2)
  model.safetensors  the state dict under its own names, F32, without `lm_head.weight`
                     (tied to `model.embed_tokens.weight`), laid out as the safetensors
                     library writes it: `__metadata__` {"format": "pt"} first, tensors
                     sorted by name, data contiguous in that order, compact JSON header
                     padded with spaces to a multiple of 8

and next to them the store tokenizer (vocabulary.txt, merges.txt, copied from
--tokenizer: the model was trained on those ids). With a final checkpoint the training
table of --out/README.md (between its training markers) is rewritten.

Weights keep torch's (out x in) layout: nothing is renamed or transposed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages
from common.safetensors_io import read_safetensors, write_blobs  # noqa: E402
from training.export import training_markdown  # noqa: E402  (the store model's training table)

# The LlamaConfig keys that transformers' save_pretrained writes for this model (the
# version below: its to_json_string(use_diff=True), so the generic PretrainedConfig
# defaults are left out and every Llama attribute is written).
TRANSFORMERS_VERSION = "4.51.3"
START_ID, END_ID = 0, 2  # <s>, </s> of the store tokenizer


def llama_config(settings: dict) -> dict:
    """config.json's content for the training settings (tools/common/model.py LlamaSettings)."""
    config = {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": START_ID,
        "eos_token_id": END_ID,
        "head_dim": settings["head_dim"],
        "hidden_act": "silu",
        "hidden_size": settings["hidden_size"],
        "initializer_range": 0.02,
        "intermediate_size": settings["intermediate_size"],
        "max_position_embeddings": settings["max_position_embeddings"],
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": settings["num_attention_heads"],
        "num_hidden_layers": settings["num_hidden_layers"],
        "num_key_value_heads": settings["num_key_value_heads"],
        "pretraining_tp": 1,
        "rms_norm_eps": float(settings["rms_norm_eps"]),
        "rope_scaling": None,
        "rope_theta": float(settings["rope_theta"]),
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "transformers_version": TRANSFORMERS_VERSION,
        "use_cache": True,
        "vocab_size": settings["vocab_size"],
    }
    return config


def config_text(config: dict) -> str:
    return json.dumps(config, indent=2, sort_keys=True) + "\n"


def expected_shapes(settings: dict) -> "OrderedDict[str, tuple]":
    """Every tensor of the exported file and its shape (rows x cols as torch.nn.Linear: out x in)."""
    d, inner = settings["hidden_size"], settings["intermediate_size"]
    q = settings["num_attention_heads"] * settings["head_dim"]
    kv = settings["num_key_value_heads"] * settings["head_dim"]
    shapes = OrderedDict([("model.embed_tokens.weight", (settings["vocab_size"], d))])
    for layer in range(settings["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        shapes[p + "input_layernorm.weight"] = (d,)
        shapes[p + "self_attn.q_proj.weight"] = (q, d)
        shapes[p + "self_attn.k_proj.weight"] = (kv, d)
        shapes[p + "self_attn.v_proj.weight"] = (kv, d)
        shapes[p + "self_attn.o_proj.weight"] = (d, q)
        shapes[p + "post_attention_layernorm.weight"] = (d,)
        shapes[p + "mlp.gate_proj.weight"] = (inner, d)
        shapes[p + "mlp.up_proj.weight"] = (inner, d)
        shapes[p + "mlp.down_proj.weight"] = (d, inner)
    shapes["model.norm.weight"] = (d,)
    return shapes


def write_safetensors(path, tensors, metadata):
    """tensors: name -> float32 array. Returns the bytes written.

    Byte for byte what the safetensors library writes for F32 tensors: the header's
    `__metadata__` first, then the tensors sorted by name (all of one dtype, so the
    library's dtype-alignment key does not reorder them), each {"dtype", "shape",
    "data_offsets"}, compact JSON padded with spaces to a multiple of 8.
    """
    header = OrderedDict([("__metadata__", OrderedDict(sorted(metadata.items())))])
    blobs, offset = [], 0
    for name in sorted(tensors):
        data = np.ascontiguousarray(tensors[name], dtype="<f4")
        blob = data.tobytes()
        header[name] = OrderedDict([("dtype", "F32"), ("shape", list(data.shape)),
                                    ("data_offsets", [offset, offset + len(blob)])])
        blobs.append(blob)
        offset += len(blob)
    return write_blobs(path, header, blobs)


def hf_tensors(state: dict, settings: dict) -> "OrderedDict[str, np.ndarray]":
    """The checkpoint's state dict as float32 arrays under their own names, lm_head dropped.

    Raises ValueError naming the tensor when one is missing, extra, of another shape,
    or when lm_head.weight is not the embedding (the file could not say it is tied).
    """
    state = dict(state)
    head = state.pop("lm_head.weight", None)
    embedding = state.get("model.embed_tokens.weight")
    if head is not None and embedding is not None and not bool((head == embedding).all()):
        raise ValueError("lm_head.weight differs from model.embed_tokens.weight: "
                         "the model is not tied and cannot be written with tie_word_embeddings")
    shapes = expected_shapes(settings)
    missing = [name for name in shapes if name not in state]
    extra = sorted(name for name in state if name not in shapes)
    if missing or extra:
        raise ValueError(f"checkpoint tensors do not match a Llama model of these settings: "
                         f"missing {missing}, unexpected {extra}")
    out = OrderedDict()
    for name, shape in shapes.items():
        array = state[name].detach().cpu().float().numpy()
        if array.shape != shape:
            raise ValueError(f"tensor {name} has shape {list(array.shape)}, expected {list(shape)}")
        out[name] = array
    return out


def update_readme(readme: Path, summary: dict) -> bool:
    if not readme.exists():
        return False
    text = readme.read_text(encoding="utf-8")
    begin, end = "<!-- training:begin -->", "<!-- training:end -->"
    if begin not in text or end not in text:
        return False
    before, rest = text.split(begin, 1)
    _, after = rest.split(end, 1)
    readme.write_text(before + begin + "\n" + training_markdown(summary, loss_detail="") + end + after, encoding="utf-8")
    return True


def read_vocabulary(folder: Path):
    return (folder / "vocabulary.txt").read_bytes().decode("utf-8").split("\n")[:-1]


def read_exported(folder) -> "tuple[dict, dict]":
    """(config, {name: torch tensor}) of an exported folder, for analyses in Python; F32 only.

    tools/tests/test_export_hf.py holds a second strict reader of its own, written from the
    format independently of this one.
    """
    import torch

    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    arrays, _ = read_safetensors(folder / "model.safetensors")
    tensors = {}
    for name, array in arrays.items():
        if array.dtype != np.dtype("<f4"):
            raise ValueError(f"{folder / 'model.safetensors'}: tensor {name} is {array.dtype}, this reader takes F32")
        tensors[name] = torch.from_numpy(array)
    return config, tensors


def settings_of(config: dict) -> dict:
    """The LlamaSettings fields (tools/common/model.py) of a config.json."""
    return {k: config[k] for k in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                                   "num_attention_heads", "num_key_value_heads", "head_dim",
                                   "max_position_embeddings", "rms_norm_eps", "rope_theta")}


def export(checkpoint: dict, tokenizer_dir: Path, out: Path) -> int:
    """Write config.json, model.safetensors and the tokenizer files to `out`; bytes of the weights."""
    architecture = checkpoint.get("architecture", "store")
    if architecture != "llama":
        raise ValueError(f"checkpoint holds a {architecture} model; export_hf writes llama models "
                         "(tools/training/export.py writes the store model)")
    settings = checkpoint["settings"]
    vocabulary = read_vocabulary(tokenizer_dir)
    if vocabulary != checkpoint["vocabulary"]:
        raise ValueError(f"{tokenizer_dir / 'vocabulary.txt'} differs from the checkpoint's vocabulary")
    if len(vocabulary) != settings["vocab_size"]:
        raise ValueError(f"vocabulary of {len(vocabulary)} tokens, model vocab_size {settings['vocab_size']}")
    tensors = hf_tensors(checkpoint["model"], settings)
    out.mkdir(parents=True, exist_ok=True)
    size = write_safetensors(out / "model.safetensors", tensors, {"format": "pt"})
    (out / "config.json").write_text(config_text(llama_config(settings)), encoding="utf-8")
    for name in ("vocabulary.txt", "merges.txt"):
        source, target = tokenizer_dir / name, out / name
        if source.resolve() != target.resolve():
            shutil.copyfile(source, target)
    return size


def main(argv=None):
    import torch

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", default="/work/ckpt-llama/final.pt")
    p.add_argument("--tokenizer", default="models/store", help="folder with vocabulary.txt, merges.txt")
    p.add_argument("--out", default="models/store-llama")
    args = p.parse_args(argv)
    out = Path(args.out)
    checkpoint = torch.load(args.checkpoint)
    try:
        size = export(checkpoint, Path(args.tokenizer), out)
    except ValueError as error:
        raise SystemExit(f"{args.checkpoint}: {error}")
    summary = checkpoint.get("summary")
    if summary and update_readme(out / "README.md", summary):
        print(f"updated the training table of {out / 'README.md'}")
    print(f"wrote {out / 'model.safetensors'} ({size} bytes), {out / 'config.json'}, "
          f"{out / 'vocabulary.txt'}, {out / 'merges.txt'}"
          + ("" if summary else f" (intermediate checkpoint, step {checkpoint.get('step')})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
