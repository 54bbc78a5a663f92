#!/usr/bin/env python3
"""What interpretability costs in PyTorch: the store model's forward, cached, and patched.

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tools/benchmarks/bench_interp_peers.py \
      [--rounds 3] [--out docs/bench/<date>-<machine>/interp_peers.json]

tools/common/model.py's StoreModel with the exported weights, float32, under torch.inference_mode(),
on 160 positions (the longest validation product, 140 ids, padded to 160 by repeating its
description; the corrupted text changes its name's last token), on 1 and 2 threads:

  plain         the forward, logits only;
  cache         the forward with every activation point of tools/references/interventions.py cached by
                forward hooks (what TransformerLens's run_with_cache does: 4 + 12 per layer points);
  sweep_eager   the head patching sweep as TransformerLens users write it: 16 hooked forwards
                of the corrupted text, each with one head's hook_z replaced at every position
                by the clean run's, the metric read from each run's logits;
  sweep_batch   the same 16 runs as one forward of a batch of 16 (row 4l+h patches head (l, h));
  sweep_skip    one corrupted forward keeping each block's input, then per layer l one batch of
                4 (one per head) through blocks l..3 only, from the corrupted input of block l,
                then the final LayerNorm at the metric's position only, dotted with
                E[t1] - E[t2] (tools/references/interventions.py's patched_head_metrics).
The clean run's hook_z (the sweeps' input) is cached once, outside the timings. The three sweeps
agree with tools/references/interventions.py's float64 scores (checked before timing). Each thread count
runs in a process of its own, in which the forms interleave (5 passes); --rounds rounds
interleave the processes; times are medians over the rounds of medians of repeated runs, and
each form is also given in plain forwards, a ratio taken within each process. `pgrep cc1plus` is recorded before every round (the machine
is shared with compilers); OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset in this command only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages
from references import interventions as iv  # noqa: E402
from benchmarks.bench_model_peers import median_seconds  # noqa: E402
from common.tokenizer import read_products  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages
from common import peer_threads  # noqa: E402
from common.run_folder import run_folder  # noqa: E402
POSITIONS = 160
FORMS = ["plain", "cache", "sweep_eager", "sweep_batch", "sweep_skip"]
REPEATS = 5  # interleaved passes over the forms in each process


def texts(tokenizer, longest=POSITIONS):
    """(clean, corrupted, metric position, t1, t2): the longest validation product, padded to
    `longest` by repeating its description; the corrupted name's last token t1 becomes t2."""
    products = read_products(ROOT / "models/store/validation.tsv")
    ids = max((tokenizer.product_ids(n, d, longest) for n, d in products), key=len)
    sep = ids.index(tokenizer.separator)
    description = ids[sep + 1:]
    while len(ids) < longest:
        ids = ids + description[:longest - len(ids)]
    ids = ids[:longest]
    last = sep - 1
    other = next(t for t in (tokenizer.ids["set</w>"], tokenizer.ids["cover</w>"]) if t != ids[last])
    corrupted = list(ids)
    corrupted[last] = other
    # the metric where the description is about to repeat the name's last token (if it does)
    position = next((i for i in range(sep + 1, longest - 1) if ids[i + 1] == ids[last]), longest - 1)
    return ids, corrupted, position, ids[last], other


def sweep_eager(model, corrupted, clean_z, position, t1, t2):
    s = model.settings
    out = torch.empty(s.layers, s.heads)
    for l in range(s.layers):
        for h in range(s.heads):
            z = clean_z[f"blocks.{l}.attn.hook_z"]
            edit = iv.replace_head(model, h, z[:, iv.head_columns(model, h)])
            logits = iv.run_with_hooks(model, corrupted, [(f"blocks.{l}.attn.hook_z", edit)])[0]
            out[l, h] = iv.logit_difference(logits, position, t1, t2)
    return out


def sweep_batch(model, corrupted, clean_z, position, t1, t2):
    logits = iv.patched_head_logits(model, clean_z, corrupted)
    return iv.logit_difference(logits, position, t1, t2).view(model.settings.layers, model.settings.heads)


def sweep_skip(model, corrupted, clean_z, position, t1, t2):
    return iv.patched_head_metrics(model, clean_z, corrupted, position, t1, t2)


def clean_hook_z(model, clean):
    """The clean run's hook_z of every layer, by name (the sweeps' input)."""
    _, cache = iv.run_with_cache(model, clean)
    return {name: z for name, z in cache.items() if name.endswith("attn.hook_z")}


def time_forms(threads):
    """Medians in seconds of every form on `threads` threads, in this process."""
    peer_threads.limit_this_process(threads)  # OpenBLAS's threads too, not only OpenMP's
    torch.set_num_threads(threads)
    model, tokenizer, _ = iv.load_model(ROOT / "models/store")
    model = model.float()
    clean, corrupted, position, t1, t2 = texts(tokenizer)
    ids = torch.tensor(clean)
    with torch.inference_mode():
        clean_z = clean_hook_z(model, clean)
        calls = {
            "plain": lambda: model(ids),
            "cache": lambda: iv.run_with_cache(model, clean),
            "sweep_eager": lambda: sweep_eager(model, corrupted, clean_z, position, t1, t2),
            "sweep_batch": lambda: sweep_batch(model, corrupted, clean_z, position, t1, t2),
            "sweep_skip": lambda: sweep_skip(model, corrupted, clean_z, position, t1, t2),
        }
        # the forms interleave, so a slow spell on this shared machine touches them alike
        times = {form: [] for form in FORMS}
        for _ in range(REPEATS):
            for form in FORMS:
                times[form].append(median_seconds(calls[form], budget=0.3, least=3))
        return {form: statistics.median(t) for form, t in times.items()}


def check_agreement():
    """The float32 sweeps against each other and the float64 reference's scores."""
    model, tokenizer, _ = iv.load_model(ROOT / "models/store")
    clean, corrupted, position, t1, t2 = texts(tokenizer)
    with torch.no_grad():
        _, cache = iv.run_with_cache(model, clean)
        reference = iv.head_patching(model, clean, corrupted, position, t1, t2, cache)
        m_clean, m_corrupted = iv.metrics(model, clean, corrupted, position, t1, t2)
        small = iv.load_model(ROOT / "models/store")[0].float()
        clean_z = clean_hook_z(small, clean)
        worst = 0.0
        for sweep in (sweep_eager, sweep_batch, sweep_skip):
            scores = (sweep(small, corrupted, clean_z, position, t1, t2).double() - m_corrupted) \
                / (m_clean - m_corrupted)
            worst = max(worst, float((scores - reference).abs().max()))
    assert worst < 1e-3, f"float32 sweeps differ from the float64 scores by {worst}"
    return {"m_clean": m_clean, "m_corrupted": m_corrupted, "scores": reference.tolist(),
            "max_score_difference_float32": worst}


def in_subprocess(threads):
    """Each thread count in a process of its own: PyTorch's idle OpenMP threads spin for a
    while after each call and would slow whatever ran next in the same process."""
    out = subprocess.run([sys.executable, __file__, "--time", str(threads)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def compilers():
    """The compilers running now (gcc's cc1plus, clang) and the load average over the last minute."""
    running = subprocess.run(["pgrep", "-a", "cc1plus|clang"], capture_output=True, text=True).stdout.strip()
    return {"compilers": running, "load_1min": os.getloadavg()[0]}


def markdown(result):
    lines = [
        "# Interpretability in PyTorch: forward, cache, head patching sweep",
        "",
        f"tools/benchmarks/bench_interp_peers.py: StoreModel, float32, torch.inference_mode(), {POSITIONS} positions, "
        f"torch {result['torch']}; medians over {result['rounds']} rounds (each a median of repeated runs). "
        "Regenerate with `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 "
        "tools/benchmarks/bench_interp_peers.py`.",
        "",
        "| threads | plain forward | forward + cache (hooks) | sweep: 16 hooked forwards "
        "| sweep: one batch of 16 | sweep: skip unchanged layers |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['threads']} | {row['plain_ms']:.2f} ms | {row['cache_ms']:.2f} ms "
            f"| {row['sweep_eager_ms']:.2f} ms | {row['sweep_batch_ms']:.2f} ms | {row['sweep_skip_ms']:.2f} ms |")
    lines += ["", "The same, in plain forwards (ratios taken within each process, medians over the rounds):", "",
              "| threads | forward + cache | sweep: 16 hooked forwards | sweep: one batch of 16 "
              "| sweep: skip unchanged layers |", "|---:|---:|---:|---:|---:|"]
    for row in result["rows"]:
        lines.append(f"| {row['threads']} | " + " | ".join(f"{row[f + '_over_plain']:.2f}×" for f in FORMS[1:]) + " |")
    busy = [c for c in result["compilers_seen"] if c["compilers"]]
    loads = ", ".join(f"{c['load_1min']:.1f}" for c in result["compilers_seen"])
    lines += [
        "",
        "The sweeps' scores agree with tools/references/interventions.py's float64 head patching to "
        f"{result['agreement']['max_score_difference_float32']:.1e}.",
        "",
        ("Compilers (cc1plus, clang) were running at the start of " + f"{len(busy)} of "
         f"{len(result['compilers_seen'])} rounds" if busy else "No compiler (cc1plus, clang) ran at the start "
         "of any round") + f"; the load averages (1 minute, 2 cores) at the rounds' starts: {loads}. "
        "On a busy machine the absolute times are noisy; the ratios to the plain forward, measured side by "
        "side, are the figures to read.",
        "",
    ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--out", default=str(run_folder(ROOT) / "interp_peers.json"))
    parser.add_argument("--time", type=int, help=argparse.SUPPRESS)  # internal: one thread count
    args = parser.parse_args()
    if args.time:
        print(json.dumps(time_forms(args.time)))
        return

    agreement = check_agreement()
    runs = {t: [] for t in args.threads}
    seen = []
    for _ in range(args.rounds):
        seen.append(compilers())
        for t in args.threads:
            runs[t].append(in_subprocess(t))
    rows = []
    for t in args.threads:
        row = {"threads": t}
        row.update({f + "_ms": statistics.median(r[f] for r in runs[t]) * 1e3 for f in FORMS})
        # ratios within each process (measured side by side), then their median over the rounds
        row.update({f + "_over_plain": statistics.median(r[f] / r["plain"] for r in runs[t]) for f in FORMS[1:]})
        rows.append(row)
    result = {"positions": POSITIONS, "dtype": "float32", "torch": torch.__version__, "rounds": args.rounds,
              "rows": rows, "agreement": agreement, "compilers_seen": seen,
              "runs": {str(t): runs[t] for t in args.threads}}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    md = markdown(result)
    out.with_suffix(".md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
