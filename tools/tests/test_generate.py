"""tools/references/generate.py: the cached decoder against the full forwards, the sampler, the golden generations."""

import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from references import generate  # noqa: E402
from references.generate import Options  # noqa: E402
from references.reference import Reference  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models/store"
GOLDEN = ROOT / "tests/data/store/generation.json"


@pytest.fixture(scope="module")
def loaded():
    torch.set_num_threads(2)
    return generate.load(MODEL)


@pytest.fixture(scope="module")
def texts():
    """Prompts of the reference goldens: one of 160 ids, and a short one."""
    golden = json.loads((ROOT / "tests/data/store/golden.json").read_text())
    full = next(p["ids"] for p in golden if len(p["ids"]) == 160)
    short = min((p["ids"] for p in golden), key=len)
    return [full, short]


def cached_logits(decoder, ids, prefill):
    """Logits of every position: `prefill` positions in one call, then one per call."""
    keys, values = decoder.new_cache()
    with torch.inference_mode():
        rows = [decoder(torch.tensor(ids[:prefill]), 0, keys, values)]
        for position in range(prefill, len(ids)):
            rows.append(decoder(torch.tensor(ids[position:position + 1]), position, keys, values))
    return torch.cat(rows)


def test_cached_decoding_equals_the_full_forward_at_every_position(loaded, texts):
    decoder, model, _ = loaded
    assert decoder.embedding.weight.dtype == torch.float64
    for ids in texts:
        with torch.inference_mode():
            full = model(torch.tensor(ids))
        for prefill in (1, 7, len(ids)):
            cached = cached_logits(decoder, ids, prefill)
            assert cached.shape == full.shape
            assert float((cached - full).abs().max()) <= 1e-12, (len(ids), prefill)


def test_cached_decoding_equals_the_independent_reference(loaded, texts):
    decoder, _, _ = loaded
    reference = Reference(MODEL)
    for ids in texts:
        expected, _ = reference.forward(ids)
        assert float((cached_logits(decoder, ids, 1) - expected).abs().max()) <= 1e-12


def test_scripted_decoder_equals_the_eager_one(loaded, texts):
    decoder, _, _ = loaded
    scripted = torch.jit.script(decoder)
    ids = texts[1]
    keys, values = scripted.new_cache()
    with torch.inference_mode():
        first = scripted(torch.tensor(ids[:-1]), 0, keys, values)
        last = scripted(torch.tensor(ids[-1:]), len(ids) - 1, keys, values)
    assert float((torch.cat([first, last]) - cached_logits(decoder, ids, 1)).abs().max()) <= 1e-12


def test_decoder_refuses_positions_past_the_context(loaded):
    decoder, _, _ = loaded
    keys, values = decoder.new_cache()
    with pytest.raises(ValueError, match="context"):
        decoder(torch.tensor([5, 6]), decoder.context - 1, keys, values)


# ----------------------------------------------------------------------------
# the sampler, on logits with known answers


def logits_row():
    rng = np.random.default_rng(5)
    row = rng.normal(0.0, 3.0, 64)
    row[[10, 20]] = row.max() + 1.0  # tied maxima: greedy takes the lower id
    return row


def test_greedy_is_the_lowest_argmax():
    row = logits_row()
    rng = np.random.default_rng(0)
    assert generate.sample(row, Options(), rng) == 10
    assert generate.sample(row, Options(banned=[10]), rng) == 20
    assert rng.random() == np.random.default_rng(0).random()  # greedy draws nothing


def test_top_k_one_and_tiny_top_p_are_greedy():
    row = logits_row()
    for seed in range(20):
        for temperature in (0.7, 1.0, 1.3):
            for options in (Options(temperature=temperature, top_k=1, seed=seed),
                            Options(temperature=temperature, top_p=1e-9, seed=seed)):
                assert generate.sample(row, options, np.random.default_rng(seed)) == 10


def test_same_seed_same_tokens_and_different_seeds_differ():
    row = logits_row()
    options = Options(temperature=1.3)
    draws = {seed: [generate.sample(row, options, rng) for rng in [np.random.default_rng(seed)]
                    for _ in range(50)] for seed in (1, 2)}
    again = np.random.default_rng(1)
    assert draws[1] == [generate.sample(row, options, again) for _ in range(50)]
    assert draws[1] != draws[2]


def test_banned_ids_are_never_drawn():
    row = logits_row()
    banned = [10, 20, int(np.argsort(row)[-3])]
    rng = np.random.default_rng(7)
    for temperature in (0.0, 0.7, 1.3):
        for top_k in (0, 1, 5):
            options = Options(temperature=temperature, top_k=top_k, banned=banned)
            assert not {generate.sample(row, options, rng) for _ in range(200)} & set(banned)
    only = Options(temperature=1.0, banned=[i for i in range(64) if i != 33])
    assert generate.sample(row, only, rng) == 33


def test_candidates_are_sorted_cut_and_sum_to_one():
    row = logits_row()
    order, p = generate.candidates(row, Options(temperature=1.0))
    assert order[:2] == [10, 20] and len(order) == 64
    assert all(row[a] >= row[b] for a, b in zip(order, order[1:]))
    assert math.isclose(sum(p), 1.0, rel_tol=1e-12)
    order, p = generate.candidates(row, Options(temperature=0.7, top_k=5))
    assert len(order) == 5 and math.isclose(sum(p), 1.0, rel_tol=1e-12)
    nucleus, q = generate.candidates(row, Options(temperature=1.0, top_p=0.5))
    full = generate.candidates(row, Options(temperature=1.0))[1]
    # the shortest prefix reaching top_p
    assert sum(full[:len(nucleus)]) >= 0.5 > sum(full[:len(nucleus) - 1])
    assert math.isclose(sum(q), 1.0, rel_tol=1e-12)


def test_draws_follow_the_distribution():
    row = np.log(np.array([0.5, 0.3, 0.2]))
    rng = np.random.default_rng(11)
    counts = np.bincount([generate.sample(row, Options(temperature=1.0), rng) for _ in range(20000)],
                         minlength=3) / 20000
    assert np.abs(counts - [0.5, 0.3, 0.2]).max() < 0.015


def test_options_are_checked():
    for bad in (Options(temperature=-1), Options(top_k=-1), Options(top_p=0), Options(top_p=1.5),
                Options(max_tokens=-1), Options(banned=[64]), Options(banned=list(range(64)))):
        with pytest.raises(ValueError):
            bad.check(64)


# ----------------------------------------------------------------------------
# generation


def test_generation_stops_and_probabilities(loaded):
    decoder, _, tokenizer = loaded
    prompt = generate.prompt_ids(tokenizer, "double chaise patio furniture cover")
    assert prompt[0] == tokenizer.start and prompt[-1] == tokenizer.separator
    written, probabilities, stop = generate.generate(decoder, prompt, Options(max_tokens=0))
    assert (written, probabilities, stop) == ([], [], "max_tokens")
    written, probabilities, stop = generate.generate(
        decoder, prompt, Options(temperature=1.0, seed=3, max_tokens=5, banned=[tokenizer.end]))
    assert len(written) == 5 and stop == "max_tokens" and tokenizer.end not in written
    assert all(0 < p <= 1 for p in probabilities)
    # with max_tokens past the room left, the context stops it
    room = decoder.context - len(prompt)
    written, _, stop = generate.generate(decoder, prompt, Options(banned=[tokenizer.end], max_tokens=500))
    assert len(written) == room and stop == "context"
    written, _, stop = generate.generate(decoder, prompt, Options(banned=[tokenizer.end], max_tokens=room))
    assert len(written) == room and stop == "context"
    full = [1] * decoder.context
    assert generate.generate(decoder, full, Options()) == ([], [], "context")
    with pytest.raises(ValueError, match="prompt"):
        generate.generate(decoder, full + [1], Options())


def test_probability_is_the_raw_softmax(loaded):
    decoder, _, tokenizer = loaded
    prompt = generate.prompt_ids(tokenizer, "dinox sheepskin rug")
    options = Options(temperature=0.7, top_k=5, seed=4, max_tokens=1)
    written, probabilities, _ = generate.generate(decoder, prompt, options)
    with torch.inference_mode():
        logits = decoder(torch.tensor(prompt), 0, *decoder.new_cache())[-1]
    assert math.isclose(probabilities[0], float(torch.softmax(logits, 0)[written[0]]), rel_tol=1e-12)


def golden_runs():
    if not GOLDEN.exists():
        raise FileNotFoundError(f"{GOLDEN} is missing: python3 tools/references/generate.py --golden {GOLDEN}")
    return json.loads(GOLDEN.read_text())


def test_golden_file_covers_the_settings():
    golden = golden_runs()
    assert golden["context"] == 160 and len(golden["runs"]) >= 112
    options = [r["options"] for r in golden["runs"]]
    assert {o["temperature"] for o in options} >= {0.0, 0.7, 1.0, 1.3}
    assert {o["top_k"] for o in options} >= {0, 5, 40}
    assert {o["top_p"] for o in options} >= {1.0, 0.9, 0.5}
    assert {r["stop"] for r in golden["runs"]} == set(generate.STOPS)
    assert any(o["banned"] for o in options)
    assert any(r["description"] == "protect your" for r in golden["runs"])
    for run in golden["runs"]:
        assert len(run["ids"]) == len(run["probabilities"])
        assert not set(run["ids"]) & set(run["options"]["banned"])


def test_golden_generations_are_reproduced(loaded):
    decoder, _, tokenizer = loaded
    runs = golden_runs()["runs"]
    # a bare-name greedy run, greedy runs that write a description, and every sampled run
    chosen = [runs[0]] + [r for r in runs if r["options"]["temperature"] == 0 and len(r["ids"]) > 20][:2] \
        + [r for r in runs if r["options"]["temperature"] > 0]
    assert len(chosen) >= 12
    for run in chosen:
        options = Options(**run["options"])
        record, _ = generate.run_record(decoder, tokenizer, run["name"], run["description"], options)
        assert record["prompt_ids"] == run["prompt_ids"]
        assert record["ids"] == run["ids"], run["name"]
        assert (record["stop"], record["text"]) == (run["stop"], run["text"])
        assert np.allclose(record["probabilities"], run["probabilities"], rtol=1e-12, atol=0)
