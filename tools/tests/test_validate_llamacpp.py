"""tools/references/validate_llamacpp.py: the float64 reference against llama.cpp (when its pinned build is
installed), and, always, that the deliberately wrong readings of the reference are far from the goldens:
a comparison at llama.cpp's agreement could tell each of them from the right one."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from references import hf_reference, validate_llamacpp  # noqa: E402
from references.hf_reference import read_safetensors  # noqa: E402

DATA = hf_reference.TEST_DATA
# A bound on the agreement with llama.cpp (its F16-table GELU: up to 5e-4 here); wrong readings must be RATIO times further.
WORST_AGREEMENT = 1e-3
# Gemma's GeGLU goes through the same table, but with tanh on both sides and its post-norms it agrees to 2.3e-4 at worst.
GEMMA_AGREEMENT = 4e-4
GELU_ARCHITECTURES = ("GPT2LMHeadModel", "GPTNeoXForCausalLM")
GEMMA_ARCHITECTURES = ("Gemma2ForCausalLM", "Gemma3ForCausalLM")
CASES = [(name, reading) for name, readings in validate_llamacpp.READINGS.items() for reading in readings]


def test_every_checkpoint_and_reading_is_validated():
    assert set(validate_llamacpp.READINGS) == set(hf_reference.TEST_CHECKPOINTS)
    used = {reading for readings in validate_llamacpp.READINGS.values() for reading in readings}
    assert used | {"gelu_tanh"} == set(hf_reference.READINGS)


@pytest.mark.parametrize("name, reading", CASES)
def test_wrong_readings_are_far_from_the_goldens(tmp_path, name, reading):
    golden = json.loads((DATA / name / "golden.json").read_text())
    tensors = read_safetensors(DATA / name / "golden.safetensors")[0]
    config = json.loads((DATA / name / "config.json").read_text())
    edit = validate_llamacpp.gpt2_toggle_scale if config["model_type"] == "gpt2" else None
    far = max(validate_llamacpp.distance(
        validate_llamacpp.reference_logits(DATA / name, p["ids"], () if edit else (reading,), edit, tmp_path),
        tensors[f"{p['key']}.logits"][-1]) for p in golden["prompts"])
    bound = GEMMA_AGREEMENT if config["architectures"][0] in GEMMA_ARCHITECTURES else WORST_AGREEMENT
    assert far >= validate_llamacpp.RATIO * bound, f"{name} {reading}: {far:.3g}"


def test_mistral_as_the_pinned_converter_writes_it_is_the_no_window_reading():
    # llama.cpp's llama graph has no window: on the arch-llama GGUF the reference's no_window reading
    # is what agrees (checked against llama.cpp below when it is installed); here, that the two
    # readings differ on every prompt long enough to leave the window.
    name = "mistral_window"
    for prompt in json.loads((DATA / name / "golden.json").read_text())["prompts"][1:]:
        right = read_safetensors(DATA / name / "golden.safetensors")[0][f"{prompt['key']}.logits"][-1]
        plain = validate_llamacpp.reference_logits(DATA / name, prompt["ids"], ("no_window",))
        assert validate_llamacpp.distance(plain, right) > 0.1


def test_the_llama_cpp_gelu_reading_is_near_but_not_equal():
    name = "gpt_neox_parallel"
    prompt = json.loads((DATA / name / "golden.json").read_text())["prompts"][2]
    right = read_safetensors(DATA / name / "golden.safetensors")[0]["p2.logits"][-1]
    tanh = validate_llamacpp.reference_logits(DATA / name, prompt["ids"], ("gelu_tanh",))
    assert 1e-6 < validate_llamacpp.distance(tanh, right) < WORST_AGREEMENT


@pytest.mark.skipif(validate_llamacpp.installed() is None,
                    reason="the pinned llama.cpp is not installed (tools/benchmarks/peers/llamacpp_setup.py); "
                           "the wrong readings are still checked against the goldens above")
def test_reference_agrees_with_llama_cpp_and_wrong_readings_do_not(tmp_path):
    rows = validate_llamacpp.validate(validate_llamacpp.installed(), scratch=tmp_path)
    assert [row["name"] for row in rows] == list(validate_llamacpp.READINGS)
    for row in rows:
        gelu, gemma = row["architecture"] in GELU_ARCHITECTURES, row["architecture"] in GEMMA_ARCHITECTURES
        assert row["agreement"] < (WORST_AGREEMENT if gelu else GEMMA_AGREEMENT if gemma else 2e-6), row
        for reading, (far, ratio) in row["readings"].items():
            assert ratio >= validate_llamacpp.RATIO, (row["name"], reading, far, ratio)
        if row["as_converted"]:  # Mistral as arch llama: no window, the no_window reading
            full, plain = row["as_converted"]
            assert full > 0.1 and plain < 2e-6, row
    text = validate_llamacpp.markdown(rows, validate_llamacpp.installed())
    assert "all are" in text and "NOT" not in text
