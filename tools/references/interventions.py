"""Interpretability references on the store model, in float64 PyTorch, by forward hooks.

    python3 tools/references/interventions.py [--model models/store] [--data models/store]
                                   [--golden tests/data/store]

tools/common/model.py's StoreModel, loaded with the exported weights (models/store) and cast to
float64, is run with hooks registered on its modules (register_forward_hook /
register_forward_pre_hook), the way TransformerLens runs a HookedTransformer underneath.
The activation points carry TransformerLens's names; each is cached as a 2-D float64
array with positions as rows (l = layer, 0-based; n positions):

  hook_embed                  n x C     the embedding's output (= blocks.0.hook_resid_pre)
  blocks.l.hook_resid_pre     n x C     the block's input
  blocks.l.ln1.hook_scale     n x 1     sqrt(var + eps) of attention_norm's input rows
  blocks.l.attn.hook_z        n x H*d   attention.output's input (heads side by side)
  blocks.l.attn.hook_result   n x H*C   z_h @ Wo[h*d:(h+1)*d, :], heads side by side
  blocks.l.attn.hook_pattern  H*n x n   the attention weights, head after head
  blocks.l.hook_attn_out      n x C     attention.output's output
  blocks.l.hook_resid_mid     n x C     mlp_norm's input (after attention is added)
  blocks.l.ln2.hook_scale     n x 1     sqrt(var + eps) of mlp_norm's input rows
  blocks.l.mlp.hook_pre       n x M     mlp.up's output (before the GELU)
  blocks.l.mlp.hook_post      n x M     mlp.down's input (after the GELU)
  blocks.l.hook_mlp_out       n x C     mlp.down's output (with its bias)
  blocks.l.hook_resid_post    n x C     the block's output
  ln_final.hook_scale         n x 1     sqrt(var + eps) of final_norm's input rows

On top of the cache: direct logit attribution (final LayerNorm's scale frozen at the clean
run's), the logit lens, activation patching of heads (hook_z) and of residual rows
(hook_resid_pre), ablations, and TransformerLens's head detectors (error measure "mul").

With --golden the C++ goldens are written: interventions.json (ids, metadata and every
table of the exemplar, head detector scores) and interventions.safetensors (float64, every
point of every case as "<case>.<point>", the logits of interventions a, b, c).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages

from training.quality import EXEMPLAR_NAME, PREFIX_WORDS, alternatives_from, load_exported, match_positions  # noqa: E402,E501
from common.tokenizer import END_OF_WORD, read_products  # noqa: E402

# The exemplar, fixed: the description cut after "… patio furniture cover.",
# the corrupted name ends in "set" (same length, differs at position 6 only).
EXEMPLAR_DESCRIPTION = ("protect your outdoor patio furniture from harsh elements with this "
                        "outdoor patio furniture cover.")
CORRUPTED_NAME = "double chaise patio furniture set"
EXEMPLAR_POSITION = 22  # the description's second "furniture"
VALIDATION_PRODUCTS = 3  # validation.tsv's first products, for the head detectors and the cache
# The points n x 512 wide are stored for cases of at most WIDE_ROWS positions only, which keeps
# interventions.safetensors under 15 MB instead of 26 MB (validation2/3 have 112 and 109 ids);
# the exemplar pair and validation1 test them.
WIDE_POINTS = ("attn.hook_result", "mlp.hook_pre", "mlp.hook_post")
WIDE_ROWS = 32

LAYER_POINTS = ("hook_resid_pre", "ln1.hook_scale", "attn.hook_z", "attn.hook_result",
                "attn.hook_pattern", "hook_attn_out", "hook_resid_mid", "ln2.hook_scale",
                "mlp.hook_pre", "mlp.hook_post", "hook_mlp_out", "hook_resid_post")
DETECTORS = ("previous_token", "duplicate_token", "induction")


def point_names(layers):
    """Every cached point, in forward order."""
    return (["hook_embed"] + [f"blocks.{l}.{p}" for l in range(layers) for p in LAYER_POINTS]
            + ["ln_final.hook_scale"])


def load_model(folder="models/store"):
    """-> (StoreModel in float64, eval mode, tokenizer, manifest) from the exported files.
    The file's float32 weights are exact in float64."""
    model, tokenizer, manifest = load_exported(folder)
    return model.double().eval(), tokenizer, manifest


# ----------------------------------------------------------------------------
# hook points: where each activation lives on StoreModel's modules


def editable_points(model):
    """name -> (module, "pre" | "out"): the tensor is the module's first input ("pre") or its
    output (or its output's first element, for the blocks' (x, weights) tuples). Only points
    whose replacement flows on through the forward are editable (resid_mid is not: replacing
    mlp_norm's input would not change the residual stream it is added to)."""
    points = OrderedDict([("hook_embed", (model.embedding, "out"))])
    for l, block in enumerate(model.layers):
        b = f"blocks.{l}."
        points[b + "hook_resid_pre"] = (block, "pre")
        points[b + "attn.hook_z"] = (block.attention.output, "pre")
        points[b + "hook_attn_out"] = (block.attention.output, "out")
        points[b + "mlp.hook_pre"] = (block.mlp.up, "out")
        points[b + "mlp.hook_post"] = (block.mlp.down, "pre")
        points[b + "hook_mlp_out"] = (block.mlp.down, "out")
        points[b + "hook_resid_post"] = (block, "out")
    return points


def _scale(x, eps):
    """sqrt(mean((x - mean x)^2) + eps) over the last axis, kept as a column."""
    centred = x - x.mean(dim=-1, keepdim=True)
    return torch.sqrt((centred * centred).mean(dim=-1, keepdim=True) + eps)


def _head_results(z, output, heads):
    """z (b x n x H*d) -> (b x n x H*C): what each head writes, z_h @ Wo_h (Wo = weight^T)."""
    b, n, _ = z.shape
    wo = output.weight.t().reshape(heads, -1, output.weight.shape[0])  # H x d x C
    return torch.einsum("bnhd,hdc->bnhc", z.view(b, n, heads, -1), wo).reshape(b, n, -1)


@contextlib.contextmanager
def hooked(model, edits=(), cache=None):
    """Registers the hooks for one forward: `edits` is a sequence of (point, function), each
    function taking the point's batched tensor (b x n x ...) and returning its replacement
    (TransformerLens's fwd_hooks); `cache` (a dict) receives every point of batch row 0,
    2-D, after the edits. Removes all hooks on exit."""
    points = editable_points(model)
    handles = []
    by_point = OrderedDict()
    for name, function in edits:
        if name not in points:
            raise ValueError(f"hooked: point {name!r} cannot be edited; editable: {list(points)}")
        by_point.setdefault(name, []).append(function)

    def store(name, tensor):
        if cache is not None:
            cache[name] = tensor[0].detach()  # no copy, as TransformerLens: nothing edits in place

    def pre_hook(name):
        def hook(module, args):
            x = args[0]
            for function in by_point.get(name, ()):
                x = function(x)
            store(name, x)
            return (x,) + tuple(args[1:])
        return hook

    def out_hook(name):
        def hook(module, args, output):
            pair = isinstance(output, tuple)
            x = output[0] if pair else output
            for function in by_point.get(name, ()):
                x = function(x)
            store(name, x)
            return (x,) + tuple(output[1:]) if pair else x
        return hook

    def watch(module, kind, hook):
        register = module.register_forward_pre_hook if kind == "pre" else module.register_forward_hook
        handles.append(register(hook))

    try:
        for name, (module, kind) in points.items():
            if name in by_point or cache is not None:
                watch(module, kind, pre_hook(name) if kind == "pre" else out_hook(name))
        if cache is not None:
            s = model.settings
            for l, block in enumerate(model.layers):
                b = f"blocks.{l}."

                def scale_of(name, eps):
                    return lambda module, args: store(name, _scale(args[0], eps))

                watch(block.attention_norm, "pre", scale_of(b + "ln1.hook_scale", block.attention_norm.eps))
                watch(block.mlp_norm, "pre", scale_of(b + "ln2.hook_scale", block.mlp_norm.eps))
                watch(block.mlp_norm, "pre",
                      lambda module, args, name=b + "hook_resid_mid": store(name, args[0]))
                watch(block.attention.output, "pre",
                      lambda module, args, name=b + "attn.hook_result", output=block.attention.output:
                      store(name, _head_results(args[0], output, s.heads)))
                # the pattern is returned only with keep_attention: the pre-hook asks for it
                # (Block passes it positionally), the forward hook keeps it
                watch(block.attention, "pre", lambda module, args: tuple(args[:4]) + (True,))
                watch(block.attention, "out",
                      lambda module, args, output, name=b + "attn.hook_pattern":
                      store(name, output[1].reshape(output[1].shape[0], -1, output[1].shape[-1])))
            watch(model.final_norm, "pre",
                  lambda module, args: store("ln_final.hook_scale", _scale(args[0], model.final_norm.eps)))
        yield
    finally:
        for handle in handles:
            handle.remove()


def as_batch(ids):
    ids = torch.as_tensor(ids, dtype=torch.long)
    return ids[None] if ids.dim() == 1 else ids


def run_with_hooks(model, ids, edits=()):
    """ids (n) or (b x n) -> logits (b x n x V) of the forward with the edits applied."""
    with torch.no_grad(), hooked(model, edits):
        return model(as_batch(ids))


def run_with_cache(model, ids, edits=()):
    """ids (n) -> (logits n x V, OrderedDict point -> 2-D float64 tensor, in forward order)."""
    cache = {}
    with torch.no_grad(), hooked(model, edits, cache):
        logits = model(as_batch(ids))[0]
    ordered = OrderedDict((name, cache[name]) for name in point_names(model.settings.layers))
    return logits, ordered


# ----------------------------------------------------------------------------
# edits


def head_columns(model, head):
    d = model.settings.head_size
    return slice(head * d, (head + 1) * d)


def replace_head(model, head, value, rows=None):
    """An edit of hook_z: head `head`'s columns become `value` (anything broadcasting to
    (rows x d)), on batch rows `rows` (all when None)."""
    columns = head_columns(model, head)

    def edit(z):
        z = z.clone()
        z[rows if rows is not None else slice(None), :, columns] = value
        return z
    return edit


def replace_rows(positions, value):
    """An edit of a residual point: rows `positions` become `value` (their clean rows)."""
    def edit(x):
        x = x.clone()
        x[:, positions] = value
        return x
    return edit


def zero_ablate(model, layer, head):
    return (f"blocks.{layer}.attn.hook_z", replace_head(model, head, 0.0))


def mean_ablate(model, layer, head, mean):
    """mean (d): the caller's mean of the head's z over positions, put at every position."""
    return (f"blocks.{layer}.attn.hook_z", replace_head(model, head, torch.as_tensor(mean)))


def head_mean(model, cache, layer, head):
    return cache[f"blocks.{layer}.attn.hook_z"][:, head_columns(model, head)].mean(dim=0)


# ----------------------------------------------------------------------------
# analyses


def direction(model, t1, t2=None):
    e = model.embedding.weight.detach()
    return e[t1] - e[t2] if t2 is not None else e[t1]


def logit_difference(logits, position, t1, t2=None):
    row = logits[..., position, :]
    return row[..., t1] - (row[..., t2] if t2 is not None else 0.0)


def component_labels(layers, heads):
    labels = ["embed"]
    for l in range(layers):
        labels += [f"L{l}H{h}" for h in range(heads)] + [f"mlp{l}"]
    return labels + ["bias"]


def direct_logit_attribution(model, cache, position, t1, t2=None):
    """-> OrderedDict label -> contribution to logit(t1) - logit(t2) at `position`: embed,
    then per layer its heads and its MLP, then the final LayerNorm's bias. Each component c
    contributes (((c_p - mean c_p) / sigma_p) * gamma) . u with sigma_p the clean run's
    ln_final.hook_scale; the contributions sum to the logit difference."""
    s = model.settings
    u = direction(model, t1, t2)
    sigma = cache["ln_final.hook_scale"][position, 0]
    gamma, beta = model.final_norm.weight.detach(), model.final_norm.bias.detach()

    def contribution(c):
        return float((((c - c.mean()) / sigma) * gamma) @ u)

    out = OrderedDict([("embed", contribution(cache["hook_embed"][position]))])
    for l in range(s.layers):
        result = cache[f"blocks.{l}.attn.hook_result"][position].view(s.heads, -1)
        for h in range(s.heads):
            out[f"L{l}H{h}"] = contribution(result[h])
        out[f"mlp{l}"] = contribution(cache[f"blocks.{l}.hook_mlp_out"][position])
    out["bias"] = float(beta @ u)
    return out


def logit_lens(model, cache, position, token, top=5):
    """-> list of {"layer", "p", "top"}: the final LayerNorm (each row's own scale) and the tied
    unembedding on hook_embed and on every layer's hook_resid_post row `position`."""
    rows = [("embed", cache["hook_embed"])] + [
        (l, cache[f"blocks.{l}.hook_resid_post"]) for l in range(model.settings.layers)]
    out = []
    for layer, x in rows:
        with torch.no_grad():
            probs = torch.softmax(model.final_norm(x[position]) @ model.embedding.weight.t(), dim=-1)
        out.append(OrderedDict([("layer", layer), ("p", float(probs[token])),
                                ("top", [int(i) for i in torch.topk(probs, top).indices])]))
    return out


def patching_score(m_patched, m_clean, m_corrupted):
    return (m_patched - m_corrupted) / (m_clean - m_corrupted)


def metrics(model, clean_ids, corrupted_ids, position, t1, t2):
    """(m_clean, m_corrupted): logit(t1) - logit(t2) at `position` of the two plain forwards."""
    return tuple(float(logit_difference(run_with_hooks(model, ids)[0], position, t1, t2))
                 for ids in (clean_ids, corrupted_ids))


def _patching_sweep(model, clean_ids, corrupted_ids, position, t1, t2, edits):
    """Scores of the corrupted forward under each edit list of the nested lists `edits`."""
    m_clean, m_corrupted = metrics(model, clean_ids, corrupted_ids, position, t1, t2)
    return torch.tensor([[patching_score(float(logit_difference(
        run_with_hooks(model, corrupted_ids, cell)[0], position, t1, t2)), m_clean, m_corrupted)
        for cell in row] for row in edits], dtype=torch.float64)


def head_patching(model, clean_ids, corrupted_ids, position, t1, t2, clean_cache):
    """-> (layers x heads) scores: the corrupted run with one head's z replaced at every position
    by the clean run's, one forward per head."""
    s = model.settings

    def edit(l, h):
        clean_z = clean_cache[f"blocks.{l}.attn.hook_z"][:, head_columns(model, h)]
        return [(f"blocks.{l}.attn.hook_z", replace_head(model, h, clean_z))]
    return _patching_sweep(model, clean_ids, corrupted_ids, position, t1, t2,
                           [[edit(l, h) for h in range(s.heads)] for l in range(s.layers)])


def patched_head_logits(model, clean_cache, corrupted_ids):
    """-> logits (layers*heads x n x V): one forward of a batch of the corrupted ids in which row
    l*heads + h has head (l, h)'s z replaced at every position by the clean run's."""
    s = model.settings
    edits = [(f"blocks.{l}.attn.hook_z",
              replace_head(model, h, clean_cache[f"blocks.{l}.attn.hook_z"][:, head_columns(model, h)],
                           rows=[l * s.heads + h]))
             for l in range(s.layers) for h in range(s.heads)]
    return run_with_hooks(model, as_batch(corrupted_ids).expand(s.layers * s.heads, -1), edits)


def patched_head_metrics(model, clean_cache, corrupted_ids, position, t1, t2):
    """-> (layers x heads) logit(t1) - logit(t2) at `position` of the corrupted run with head
    (l, h)'s z patched from the clean run, computed without redoing what the patch leaves alone:
    one corrupted forward keeps each block's input, then per layer l one batch of `heads` rows
    (row h patches head h) runs blocks l.. only, and the unembedding runs at `position` only."""
    s = model.settings
    n = len(corrupted_ids)
    dtype = model.embedding.weight.dtype
    cos, sin = model.rope_cos[:n].to(dtype), model.rope_sin[:n].to(dtype)
    mask = torch.ones(n, n, dtype=torch.bool).triu(1)
    out = torch.empty(s.layers, s.heads, dtype=dtype)
    with torch.no_grad():
        inputs = [model.embedding(as_batch(corrupted_ids))]  # the corrupted run's block inputs
        for block in model.layers[:-1]:
            inputs.append(block(inputs[-1], cos, sin, mask)[0])
        for l in range(s.layers):
            clean_z = clean_cache[f"blocks.{l}.attn.hook_z"]
            edits = [(f"blocks.{l}.attn.hook_z",
                      replace_head(model, h, clean_z[:, head_columns(model, h)], rows=[h]))
                     for h in range(s.heads)]
            x = inputs[l].expand(s.heads, -1, -1)
            with hooked(model, edits):
                for block in model.layers[l:]:
                    x, _ = block(x, cos, sin, mask)
            u = direction(model, t1, t2)
            out[l] = model.final_norm(x[:, position]) @ u
    return out


def residual_patching(model, clean_ids, corrupted_ids, position, t1, t2, clean_cache):
    """-> (layers x n) scores: the corrupted run with hook_resid_pre row i of layer l replaced by
    the clean run's."""
    def edit(l, i):
        name = f"blocks.{l}.hook_resid_pre"
        return [(name, replace_rows([i], clean_cache[name][i]))]
    return _patching_sweep(model, clean_ids, corrupted_ids, position, t1, t2,
                           [[edit(l, i) for i in range(len(corrupted_ids))]
                            for l in range(model.settings.layers)])


def detection_pattern(kind, ids):
    """TransformerLens head_detector.py's patterns (n x n) for token ids."""
    ids = torch.as_tensor(ids)
    n = len(ids)
    same = (ids[:, None] == ids[None, :]).double()
    if kind == "previous_token":
        return torch.diag(torch.ones(n - 1, dtype=torch.float64), -1)
    duplicate = torch.tril(same, -1)  # j < i, ids[j] == ids[i]
    if kind == "duplicate_token":
        return duplicate
    if kind == "induction":  # D[i, j] = duplicate[i, j - 1] for j >= 1, kept lower-triangular
        shifted = torch.zeros_like(duplicate)
        shifted[:, 1:] = duplicate[:, :-1]
        return torch.tril(shifted)
    raise ValueError(f"detection_pattern: unknown kind {kind!r}; expected one of {DETECTORS}")


def head_detector_scores(model, cache, ids):
    """-> {kind: (layers x heads)}: sum(A * D) / sum(A) per head (error measure "mul", BOS and
    the current token included)."""
    s = model.settings
    n = len(ids)
    out = OrderedDict()
    for kind in DETECTORS:
        d = detection_pattern(kind, ids)
        scores = torch.zeros(s.layers, s.heads, dtype=torch.float64)
        for l in range(s.layers):
            pattern = cache[f"blocks.{l}.attn.hook_pattern"].view(s.heads, n, n)
            for h in range(s.heads):
                scores[l, h] = (pattern[h] * d).sum() / pattern[h].sum()
        out[kind] = scores
    return out


# ----------------------------------------------------------------------------
# copying over the validation split


def counterfactual_copy_cases(tokenizer, validation, train, longest):
    """tools/training/quality.py's counterfactual copy positions, main variant: at a copy position t whose
    name token (a whole word after a whole word) the description is about to repeat, that word is
    replaced in the name only by the word the training names most often put after the same
    prefix of >= 2 whole words. -> list of (clean ids[:t+1], corrupted ids[:t+1], t, original
    id, alternative id), in quality.py's order."""
    follow = alternatives_from(train)
    whole = lambda i: tokenizer.token(i).endswith(END_OF_WORD)  # noqa: E731
    cases = []
    for name_text, description in validation:
        ids = tokenizer.product_ids(name_text, description, longest)
        if tokenizer.separator not in ids:
            continue
        for t, j, sep in match_positions(ids, tokenizer.separator):
            name = ids[1:sep]
            if t + 1 >= len(ids) or ids[t + 1] != name[j + 1] or not (whole(name[j + 1]) and whole(name[j])):
                continue
            original = tokenizer.token(name[j + 1])[:-len(END_OF_WORD)]
            run = 0
            while run <= j and t - run > sep and ids[t - run] == name[j - run]:
                run += 1
            first = j - run + 1
            while first > 0 and not whole(name[first - 1]):
                first -= 1
            prefix = tuple(tokenizer.decode(name[first:j + 1]).split(" "))[-PREFIX_WORDS:]
            options = [(-c, w) for w, c in follow.get(prefix, {}).items()
                       if w != original and (w + END_OF_WORD) in tokenizer.ids] if len(prefix) >= 2 else []
            if options:
                alternative = tokenizer.ids[min(options)[1] + END_OF_WORD]
                changed = list(ids)
                changed[j + 2] = alternative
                cases.append((ids[:t + 1], changed[:t + 1], t, name[j + 1], alternative))
    return cases


def copy_averages(model, cases):
    """Head patching (one batch of 16 per case) and DLA of logit(original) - logit(alternative),
    each averaged over the cases: mean and median per head / component."""
    s = model.settings
    scores, dla, gaps = [], [], []
    for clean, corrupted, t, t1, t2 in cases:
        logits, cache = run_with_cache(model, clean)
        m_clean = float(logit_difference(logits, t, t1, t2))
        m_corrupted = float(logit_difference(run_with_hooks(model, corrupted)[0], t, t1, t2))
        patched = patched_head_metrics(model, cache, corrupted, t, t1, t2)
        scores.append(patching_score(patched, m_clean, m_corrupted))
        dla.append(torch.tensor(list(direct_logit_attribution(model, cache, t, t1, t2).values()),
                                dtype=torch.float64))
        gaps.append((m_clean, m_corrupted))
    scores, dla, gaps = torch.stack(scores), torch.stack(dla), torch.tensor(gaps, dtype=torch.float64)
    return OrderedDict([
        ("positions", len(cases)),
        ("what", "tools/training/quality.py's counterfactual copy positions (prefix of >= 2 whole words); "
                 "metric logit(name's word) - logit(the catalogue's alternative) at the position"),
        ("m_clean_mean", float(gaps[:, 0].mean())), ("m_corrupted_mean", float(gaps[:, 1].mean())),
        ("head_patching_mean", scores.mean(0).tolist()),
        ("head_patching_median", scores.median(0).values.tolist()),
        ("dla_mean", OrderedDict(zip(component_labels(s.layers, s.heads), dla.mean(0).tolist()))),
        ("dla_median", OrderedDict(zip(component_labels(s.layers, s.heads), dla.median(0).values.tolist())))])


# ----------------------------------------------------------------------------
# the goldens


def exemplar_ids(tokenizer, longest):
    clean = tokenizer.product_ids(EXEMPLAR_NAME, EXEMPLAR_DESCRIPTION, longest)
    corrupted = tokenizer.product_ids(CORRUPTED_NAME, EXEMPLAR_DESCRIPTION, longest)
    differ = [i for i, (a, b) in enumerate(zip(clean, corrupted)) if a != b]
    if len(clean) != len(corrupted) or differ != [6]:
        raise ValueError(f"exemplar: clean and corrupted must differ at position 6 only, got {differ}")
    return clean, corrupted


def analyse(model, tokenizer, manifest, data_folder):
    """Everything the goldens hold: (json record, OrderedDict name -> float64 array)."""
    s = model.settings
    longest = s.longest
    t1, t2 = tokenizer.ids["cover" + END_OF_WORD], tokenizer.ids["set" + END_OF_WORD]
    furniture = tokenizer.ids["furniture" + END_OF_WORD]
    clean, corrupted = exemplar_ids(tokenizer, longest)
    if clean[EXEMPLAR_POSITION] != furniture:
        raise ValueError(f"exemplar: position {EXEMPLAR_POSITION} is not furniture</w>")
    p = EXEMPLAR_POSITION

    cases = [("exemplar", EXEMPLAR_NAME, EXEMPLAR_DESCRIPTION, clean),
             ("corrupted", CORRUPTED_NAME, EXEMPLAR_DESCRIPTION, corrupted)]
    validation = read_products(Path(data_folder) / "validation.tsv")[:VALIDATION_PRODUCTS]
    for k, (name, description) in enumerate(validation, start=1):
        cases.append((f"validation{k}", name, description, tokenizer.product_ids(name, description, longest)))

    tensors = OrderedDict()
    caches, records = {}, []
    for key, name, description, ids in cases:
        logits, cache = run_with_cache(model, ids)
        caches[key] = cache
        omitted = [point for point in cache
                   if len(ids) > WIDE_ROWS and point.split(".", 2)[-1] in WIDE_POINTS]
        for point, value in cache.items():
            if point not in omitted:
                tensors[f"{key}.{point}"] = value.numpy()
        records.append(OrderedDict([
            ("key", key), ("name", name), ("description", description), ("ids", ids),
            ("omitted_points", omitted),
            ("head_detectors", OrderedDict((kind, scores.tolist()) for kind, scores
                                           in head_detector_scores(model, cache, ids).items()))]))

    clean_cache = caches["exemplar"]
    m_clean, m_corrupted = metrics(model, clean, corrupted, p, t1, t2)
    dla = direct_logit_attribution(model, clean_cache, p, t1, t2)
    exemplar = OrderedDict([
        ("clean", "exemplar"), ("corrupted", "corrupted"), ("corrupted_position", 6),
        ("position", p), ("t1", t1), ("t2", t2),
        ("t1_token", tokenizer.token(t1)), ("t2_token", tokenizer.token(t2)),
        ("m_clean", m_clean), ("m_corrupted", m_corrupted),
        ("dla", [OrderedDict([("component", c), ("value", v)]) for c, v in dla.items()]),
        ("dla_sum", sum(dla.values())),
        ("logit_lens", logit_lens(model, clean_cache, p, t1)),
        ("head_patching", head_patching(model, clean, corrupted, p, t1, t2, clean_cache).tolist()),
        ("residual_patching", residual_patching(model, clean, corrupted, p, t1, t2, clean_cache).tolist()),
    ])

    mean = head_mean(model, clean_cache, 2, 0)
    interventions = OrderedDict([
        ("intervention_a", OrderedDict([
            ("what", "zero-ablation of head (3, 1)'s hook_z at every position"),
            ("case", "exemplar"), ("layer", 3), ("head", 1)])),
        ("intervention_b", OrderedDict([
            ("what", "mean-ablation of head (2, 0)'s hook_z: every position gets `mean`, "
                     "its mean over the clean exemplar's positions"),
            ("case", "exemplar"), ("layer", 2), ("head", 0), ("mean", mean.tolist())])),
        ("intervention_c", OrderedDict([
            ("what", "blocks.2.hook_resid_pre row 6 patched from the clean exemplar into the corrupted run"),
            ("case", "corrupted"), ("source", "exemplar"), ("layer", 2), ("row", 6)])),
    ])
    runs = {"intervention_a": (clean, [zero_ablate(model, 3, 1)]),
            "intervention_b": (clean, [mean_ablate(model, 2, 0, mean)]),
            "intervention_c": (corrupted, [("blocks.2.hook_resid_pre",
                                            replace_rows([6], clean_cache["blocks.2.hook_resid_pre"][6]))])}
    for key, (ids, edits) in runs.items():
        logits = run_with_hooks(model, ids, edits)[0]
        tensors[key + ".logits"] = logits.numpy()
        interventions[key]["logits"] = key + ".logits"
        interventions[key][f"m_at_{p}"] = float(logit_difference(logits, p, t1, t2))

    record = OrderedDict([
        ("format", "attn-store-interventions"), ("version", 1),
        ("model", "models/store/model.safetensors"),
        ("points", point_names(s.layers)),
        ("layouts", OrderedDict([
            ("attn.hook_z", "n x H*d, [pos, head, d_head] row-major"),
            ("attn.hook_result", "n x H*C, [pos, head, d_model] row-major"),
            ("attn.hook_pattern", "H*n x n, [head, query, key] row-major"),
            ("hook_scale", "n x 1, sqrt(mean((x - mean x)^2) + eps) of the LayerNorm's input")])),
        ("dla_components", component_labels(s.layers, s.heads)),
        ("detectors", list(DETECTORS)),
        ("cases", records), ("exemplar", exemplar), ("interventions", interventions)])
    return record, tensors


def print_tables(record, tokenizer):
    ex = record["exemplar"]
    print(f"exemplar at position {ex['position']}: m = logit({ex['t1_token']}) - logit({ex['t2_token']}): "
          f"clean {ex['m_clean']:.4f}, corrupted {ex['m_corrupted']:.4f}")
    print("direct logit attribution (clean):")
    for row in ex["dla"]:
        print(f"  {row['component']:>6} {row['value']:+9.4f}")
    print(f"  sum    {ex['dla_sum']:+9.4f}")
    print("logit lens (clean): p(t1), top-5")
    for row in ex["logit_lens"]:
        print(f"  {str(row['layer']):>5} {row['p']:.4f} {[tokenizer.token(i) for i in row['top']]}")
    print("head patching (rows: layers, columns: heads; 1 = clean's decision restored):")
    for l, row in enumerate(ex["head_patching"]):
        print(f"  L{l} " + " ".join(f"{v:+.3f}" for v in row))
    carriers = sorted(((v, l, h) for l, row in enumerate(ex["head_patching"]) for h, v in enumerate(row)),
                      reverse=True)
    print("heads that carry the decision (patching score >= 0.05): "
          + ", ".join(f"L{l}H{h} {v:.3f}" for v, l, h in carriers if v >= 0.05))
    print("residual patching (hook_resid_pre; rows: layers, columns: positions):")
    clean_ids = record["cases"][0]["ids"]
    print("     " + " ".join(f"{i:>5}" for i in range(len(clean_ids))))
    for l, row in enumerate(ex["residual_patching"]):
        print(f"  L{l} " + " ".join(f"{v:+.2f}" for v in row))
    for case in record["cases"]:
        print(f"head detectors, {case['key']} ({len(case['ids'])} ids): best head per kind:")
        for kind, scores in case["head_detectors"].items():
            t = torch.tensor(scores)
            l, h = divmod(int(t.argmax()), t.shape[1])
            print(f"  {kind:>15}: L{l}H{h} {float(t.max()):.3f}")


def print_copy_average(average):
    print(f"over {average['positions']} counterfactual copy positions of the validation split: "
          f"m clean {average['m_clean_mean']:.3f}, corrupted {average['m_corrupted_mean']:.3f} (means)")
    print("head patching, mean (median) per head:")
    for l, (means, medians) in enumerate(zip(average["head_patching_mean"], average["head_patching_median"])):
        print(f"  L{l} " + " ".join(f"{a:+.3f} ({b:+.3f})" for a, b in zip(means, medians)))
    print("DLA, mean (median):")
    for label, value in average["dla_mean"].items():
        print(f"  {label:>6} {value:+8.3f} ({average['dla_median'][label]:+8.3f})")


def main(argv=None):
    from common.safetensors_io import read_safetensors, write_safetensors

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="models/store")
    p.add_argument("--data", default="models/store", help="folder with validation.tsv")
    p.add_argument("--golden", default="", help="folder to write interventions.{json,safetensors} to")
    p.add_argument("--copy-average", action="store_true",
                   help="also average head patching and DLA over the validation split's counterfactual "
                        "copy positions (float32, several minutes), as interventions.json's copy_average")
    args = p.parse_args(argv)
    torch.set_num_threads(1)  # the goldens do not depend on the thread count

    model, tokenizer, manifest = load_model(args.model)
    record, tensors = analyse(model, tokenizer, manifest, args.data)
    print_tables(record, tokenizer)
    if args.copy_average:
        cases = counterfactual_copy_cases(tokenizer, read_products(Path(args.data) / "validation.tsv"),
                                          read_products(Path(args.data) / "train.tsv"), model.settings.longest)
        # float32: an average over 1,701 positions, not a reference for the C++ (agrees with
        # float64 to ~1e-6)
        average = copy_averages(load_model(args.model)[0].float(), cases)
        record["copy_average"] = OrderedDict([("dtype", "float32")] + list(average.items()))
        print_copy_average(record["copy_average"])
    if args.golden:
        out = Path(args.golden)
        out.mkdir(parents=True, exist_ok=True)
        size = write_safetensors(out / "interventions.safetensors",
                                 OrderedDict((k, ("F64", v)) for k, v in tensors.items()),
                                 metadata={"format": "attn-store-interventions", "version": "1",
                                           "model": "models/store/model.safetensors"})
        (out / "interventions.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        back, _ = read_safetensors(out / "interventions.safetensors")
        for name, array in tensors.items():
            assert np.array_equal(back[name], array), name
        print(f"wrote {out / 'interventions.safetensors'} ({size / 1e6:.2f} MB, {len(tensors)} tensors), "
              f"{out / 'interventions.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
