"""tools/training/train.py --architecture llama on a few products: names, tying, resume checks."""

import sys
from pathlib import Path

import pytest
import torch

TOOLS = Path(__file__).resolve().parents[1]
STORE = TOOLS.parent / "models" / "store"
sys.path.insert(0, str(TOOLS))

from training import train  # noqa: E402


@pytest.fixture()
def corpus(tmp_path):
    lines = (STORE / "validation.tsv").read_text(encoding="utf-8").splitlines(keepends=True)
    header, rows = lines[0], lines[1:]
    (tmp_path / "train.tsv").write_text(header + "".join(rows[:16]), encoding="utf-8")
    (tmp_path / "validation.tsv").write_text(header + "".join(rows[16:20]), encoding="utf-8")
    return tmp_path


def run(corpus, *extra):
    return train.main(["--data", str(corpus), "--out", str(corpus / "out"), "--checkpoints",
                       str(corpus / "ckpt"), "--tokenizer", str(STORE), "--steps", "2",
                       "--batch-size", "4", "--warmup", "1", "--eval-every", "1", "--threads", "1",
                       "--intermediate-size", "32", *extra])


def test_llama_training_writes_hugging_face_names(corpus):
    assert run(corpus, "--architecture", "llama") == 0
    final = torch.load(corpus / "ckpt" / "final.pt")
    assert final["architecture"] == "llama" and final["summary"]["architecture"] == "llama"
    state = final["model"]
    assert state["model.layers.3.self_attn.k_proj.weight"].shape == (64, 128)  # 2 key/value heads of 32
    assert state["model.layers.0.mlp.gate_proj.weight"].shape == (32, 128)
    assert torch.equal(state["lm_head.weight"], state["model.embed_tokens.weight"])
    assert not any(k.endswith(".bias") for k in state)
    assert final["settings"]["num_key_value_heads"] == 2
    # the tokenizer came from --tokenizer: nothing was learned into --out
    assert not (corpus / "out" / "vocabulary.txt").exists()


def test_resume_refuses_a_checkpoint_of_the_other_architecture(corpus):
    assert run(corpus, "--architecture", "llama") == 0
    with pytest.raises(SystemExit, match="checkpoint holds a llama model, not store"):
        run(corpus, "--architecture", "store", "--resume", "--steps", "3")


def test_the_embedding_is_not_decayed():
    model = train.build_model("llama", 2048, 160, 32)[1]
    optimizer = train.make_optimizer(model, 1e-3, 0.1, model.model.embed_tokens.weight)
    decayed = {id(p) for p in optimizer.param_groups[0]["params"]}
    assert id(model.model.embed_tokens.weight) not in decayed
    assert id(model.model.layers[0].mlp.up_proj.weight) in decayed
    assert id(model.model.norm.weight) not in decayed
