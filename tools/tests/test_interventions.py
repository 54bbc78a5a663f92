"""tools/references/interventions.py: the hook cache, DLA, patching and detectors on the exported store model.

The cache's logits agree with StoreModel.forward (exactly: the hooks only watch) and with
tools/references/reference.py's independent forward (1e-12); the points obey the residual stream's
sums; DLA sums to the logit difference (1e-10); patching a run with its own activations
changes nothing; the goldens in tests/data/store reproduce.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from references import interventions as iv  # noqa: E402
from references.reference import Reference, read_safetensors  # noqa: E402

MODEL = ROOT / "models/store"
GOLDEN = ROOT / "tests/data/store"


@pytest.fixture(scope="module")
def loaded():
    torch.set_num_threads(1)
    return iv.load_model(MODEL)


@pytest.fixture(scope="module")
def exemplar(loaded):
    model, tokenizer, _ = loaded
    clean, corrupted = iv.exemplar_ids(tokenizer, model.settings.longest)
    logits, cache = iv.run_with_cache(model, clean)
    return clean, corrupted, logits, cache


def test_exemplar_ids_are_the_specified_ones(loaded, exemplar):
    _, tokenizer, _ = loaded
    clean, corrupted, _, _ = exemplar
    assert len(clean) == len(corrupted) == 26
    assert tokenizer.ids["cover</w>"] == 236 and tokenizer.ids["set</w>"] == 129
    assert clean[6] == 236 and corrupted[6] == 129
    assert tokenizer.token(clean[iv.EXEMPLAR_POSITION]) == "furniture</w>"
    assert clean[iv.EXEMPLAR_POSITION + 1] == 236


def test_cache_logits_equal_forward_and_reference(loaded, exemplar):
    model, tokenizer, _ = loaded
    clean, _, logits, cache = exemplar
    with torch.no_grad():
        plain, attention = model(torch.tensor(clean), keep_attention=True)
    assert torch.equal(logits, plain)
    reference_logits, reference_attention = Reference(MODEL).forward(clean)
    assert float((logits - reference_logits).abs().max()) <= 1e-12
    for l in range(model.settings.layers):
        pattern = cache[f"blocks.{l}.attn.hook_pattern"]
        assert torch.equal(pattern, attention[l].reshape(-1, len(clean)))
        assert float((pattern - reference_attention[l].reshape(-1, len(clean))).abs().max()) <= 1e-12


def test_cache_points_obey_the_residual_sums(loaded, exemplar):
    model, _, _ = loaded
    clean, _, _, cache = exemplar
    s = model.settings
    n = len(clean)
    assert list(cache) == iv.point_names(s.layers)
    shapes = {"hook_resid_pre": (n, s.dimensions), "ln1.hook_scale": (n, 1),
              "attn.hook_z": (n, s.heads * s.head_size), "attn.hook_result": (n, s.heads * s.dimensions),
              "attn.hook_pattern": (s.heads * n, n), "hook_attn_out": (n, s.dimensions),
              "hook_resid_mid": (n, s.dimensions), "ln2.hook_scale": (n, 1),
              "mlp.hook_pre": (n, s.mlp_width), "mlp.hook_post": (n, s.mlp_width),
              "hook_mlp_out": (n, s.dimensions), "hook_resid_post": (n, s.dimensions)}
    assert torch.equal(cache["hook_embed"], model.embedding.weight[clean])
    for l in range(s.layers):
        b = f"blocks.{l}."
        for point, shape in shapes.items():
            assert tuple(cache[b + point].shape) == shape, b + point
            assert cache[b + point].dtype == torch.float64
        previous = cache["hook_embed"] if l == 0 else cache[f"blocks.{l - 1}.hook_resid_post"]
        assert torch.equal(cache[b + "hook_resid_pre"], previous)
        result = cache[b + "attn.hook_result"].view(n, s.heads, s.dimensions)
        assert torch.allclose(result.sum(1), cache[b + "hook_attn_out"], rtol=0, atol=1e-13)
        z = cache[b + "attn.hook_z"]
        wo = model.layers[l].attention.output.weight.t()
        for h in range(s.heads):  # the brief's definition, written out
            d = slice(h * s.head_size, (h + 1) * s.head_size)
            assert torch.allclose(result[:, h], z[:, d] @ wo[d], rtol=0, atol=1e-14)
        assert torch.allclose(cache[b + "hook_resid_mid"],
                              cache[b + "hook_resid_pre"] + cache[b + "hook_attn_out"], rtol=0, atol=1e-14)
        assert torch.allclose(cache[b + "hook_resid_post"],
                              cache[b + "hook_resid_mid"] + cache[b + "hook_mlp_out"], rtol=0, atol=1e-14)
        assert torch.equal(cache[b + "mlp.hook_post"], F.gelu(cache[b + "mlp.hook_pre"]))
        x = cache[b + "hook_resid_pre"]
        scale = torch.sqrt(x.var(dim=1, unbiased=False, keepdim=True) + 1e-5)
        assert torch.allclose(cache[b + "ln1.hook_scale"], scale, rtol=1e-14, atol=0)
        pattern = cache[b + "attn.hook_pattern"].view(s.heads, n, n)
        assert torch.allclose(pattern.sum(-1), torch.ones(s.heads, n, dtype=torch.float64), rtol=0, atol=1e-14)
        assert float(pattern.triu(1).abs().max()) == 0.0


def test_dla_sums_to_the_logit_difference(loaded, exemplar):
    model, _, _ = loaded
    clean, _, logits, cache = exemplar
    p = iv.EXEMPLAR_POSITION
    dla = iv.direct_logit_attribution(model, cache, p, 236, 129)
    assert list(dla) == iv.component_labels(4, 4) and len(dla) == 22
    assert abs(sum(dla.values()) - float(logits[p, 236] - logits[p, 129])) <= 1e-10
    single = iv.direct_logit_attribution(model, cache, p, 236)  # one token: u = E[t]
    assert abs(sum(single.values()) - float(logits[p, 236])) <= 1e-10
    for position in range(len(clean)):  # the rule holds at every position
        d = iv.direct_logit_attribution(model, cache, position, 5, 17)
        assert abs(sum(d.values()) - float(logits[position, 5] - logits[position, 17])) <= 1e-10


def test_self_patching_changes_nothing(loaded, exemplar):
    model, _, _ = loaded
    clean, _, logits, cache = exemplar
    s = model.settings
    edits = []
    for l in range(s.layers):
        z = cache[f"blocks.{l}.attn.hook_z"]
        edits += [(f"blocks.{l}.attn.hook_z", iv.replace_head(model, h, z[:, iv.head_columns(model, h)]))
                  for h in range(s.heads)]
        name = f"blocks.{l}.hook_resid_pre"
        edits.append((name, iv.replace_rows(list(range(len(clean))), cache[name])))
    for name in iv.editable_points(model):  # every editable point, whole
        edits.append((name, lambda x, value=cache[name]: value[None].clone()))
    assert torch.equal(iv.run_with_hooks(model, clean, edits)[0], logits)
    again, cache_again = iv.run_with_cache(model, clean, edits)
    assert torch.equal(again, logits)
    assert all(torch.equal(cache[k], cache_again[k]) for k in cache)


def test_residual_patching_at_layer_0_restores_the_clean_run(loaded, exemplar):
    model, _, _ = loaded
    clean, corrupted, logits, cache = exemplar
    p = iv.EXEMPLAR_POSITION
    edit = ("blocks.0.hook_resid_pre", iv.replace_rows(list(range(len(clean))), cache["blocks.0.hook_resid_pre"]))
    patched = iv.run_with_hooks(model, corrupted, [edit])[0]
    assert torch.equal(patched, logits)
    m_clean, m_corrupted = iv.metrics(model, clean, corrupted, p, 236, 129)
    assert m_clean > 5 > -5 > m_corrupted
    assert iv.patching_score(float(iv.logit_difference(patched, p, 236, 129)), m_clean, m_corrupted) == 1.0
    scores = iv.residual_patching(model, clean, corrupted, p, 236, 129, cache)
    assert scores[0, 6] == 1.0  # the only differing row carries all of it at layer 0
    assert float(scores[0, :6].abs().max()) == 0.0  # rows before it are the same in both runs


def test_faster_head_patching_agrees(loaded, exemplar):
    model, _, _ = loaded
    clean, corrupted, _, cache = exemplar
    p = iv.EXEMPLAR_POSITION
    scores = iv.head_patching(model, clean, corrupted, p, 236, 129, cache)
    m_clean, m_corrupted = iv.metrics(model, clean, corrupted, p, 236, 129)
    batched = iv.logit_difference(iv.patched_head_logits(model, cache, corrupted), p, 236, 129).view(4, 4)
    skipped = iv.patched_head_metrics(model, cache, corrupted, p, 236, 129)
    for m in (batched, skipped):
        assert float((iv.patching_score(m, m_clean, m_corrupted) - scores).abs().max()) <= 1e-12
    assert float(scores[3, 1]) > 0.5  # the head that copies the name's next word


def test_ablation_edits(loaded, exemplar):
    model = loaded[0]
    clean, _, _, cache = exemplar
    _, ablated = iv.run_with_cache(model, clean, [iv.zero_ablate(model, 3, 1)])
    z = ablated["blocks.3.attn.hook_z"]
    assert float(z[:, 32:64].abs().max()) == 0.0
    assert torch.equal(z[:, :32], cache["blocks.3.attn.hook_z"][:, :32])
    mean = iv.head_mean(model, cache, 2, 0)
    _, ablated = iv.run_with_cache(model, clean, [iv.mean_ablate(model, 2, 0, mean)])
    assert torch.equal(ablated["blocks.2.attn.hook_z"][:, :32], mean.expand(len(clean), 32))
    assert torch.equal(ablated["blocks.1.hook_resid_post"], cache["blocks.1.hook_resid_post"])
    with pytest.raises(ValueError, match="cannot be edited"):
        iv.run_with_hooks(model, clean, [("blocks.0.hook_resid_mid", lambda x: x)])


def loop_detection(kind, ids):
    n = len(ids)
    d = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if kind == "previous_token":
                d[i, j] = j == i - 1
            elif kind == "duplicate_token":
                d[i, j] = j < i and ids[j] == ids[i]
            else:
                d[i, j] = 1 <= j <= i and ids[j - 1] == ids[i] and j - 1 < i
    return d


def test_copy_cases_are_qualitys(loaded):
    model, tokenizer, _ = loaded
    validation = iv.read_products(MODEL / "validation.tsv")
    cases = iv.counterfactual_copy_cases(tokenizer, validation, iv.read_products(MODEL / "train.tsv"), 160)
    quality = json.loads((MODEL / "quality.json").read_text(encoding="utf-8"))
    assert len(cases) == quality["copy"]["counterfactual_positions"]
    for clean, corrupted, t, original, alternative in cases[:50]:
        assert len(clean) == len(corrupted) == t + 1 and clean[t] in clean[1:clean.index(tokenizer.separator)]
        differ = [i for i in range(t + 1) if clean[i] != corrupted[i]]
        assert len(differ) == 1 and differ[0] < clean.index(tokenizer.separator)
        assert clean[differ[0]] == original and corrupted[differ[0]] == alternative


def test_detection_patterns_match_their_definitions():
    ids = [1, 5, 7, 5, 7, 9, 5, 1]
    for kind in iv.DETECTORS:
        assert np.array_equal(iv.detection_pattern(kind, ids).numpy(), loop_detection(kind, ids)), kind


def test_goldens_reproduce(loaded):
    model, tokenizer, manifest = loaded
    record, tensors = iv.analyse(model, tokenizer, manifest, MODEL)
    golden = json.loads((GOLDEN / "interventions.json").read_text(encoding="utf-8"))
    stored, _ = read_safetensors(GOLDEN / "interventions.safetensors")
    assert list(stored) == list(tensors)
    for name, array in tensors.items():
        assert stored[name].shape == array.shape, name
        assert np.allclose(stored[name], array, rtol=0, atol=1e-12), name
    # the average over the validation split's copy positions (--copy-average) takes minutes:
    # checked for its positions only
    average = golden.pop("copy_average")
    quality = json.loads((MODEL / "quality.json").read_text(encoding="utf-8"))
    assert average["positions"] == quality["copy"]["counterfactual_positions"]
    assert len(average["head_patching_mean"]) == 4 and list(average["dla_mean"]) == iv.component_labels(4, 4)
    assert json.loads(json.dumps(record)).keys() == golden.keys()

    def close(a, b, path="record"):
        if isinstance(a, dict):
            assert a.keys() == b.keys(), path
            for k in a:
                close(a[k], b[k], f"{path}.{k}")
        elif isinstance(a, list):
            assert len(a) == len(b), path
            for i, (x, y) in enumerate(zip(a, b)):
                close(x, y, f"{path}[{i}]")
        elif isinstance(a, float):
            assert abs(a - b) <= 1e-10 * max(1.0, abs(b)), path
        else:
            assert a == b, path
    close(json.loads(json.dumps(record)), golden)
    ex = golden["exemplar"]
    assert [row["component"] for row in ex["dla"]] == iv.component_labels(4, 4)
    assert abs(ex["dla_sum"] - (ex["m_clean"])) <= 1e-10
    assert len(ex["residual_patching"]) == 4 and len(ex["residual_patching"][0]) == 26
