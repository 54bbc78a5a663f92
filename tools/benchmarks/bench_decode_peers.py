#!/usr/bin/env python3
"""Decoding the store model with a key/value cache: the peers of attn's generator, one run.

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tools/benchmarks/bench_decode_peers.py \\
      [--threads 2] [--rounds 3] [--out docs/bench/<date>-<machine>/decode_peers.json]

Peers, float32, on 1 … --threads threads:
  * pytorch-eager: tools/references/generate.py's CachedDecoder (the StoreModel's own modules on a
    preallocated cache, written in place) under torch.inference_mode();
  * pytorch-script: the same module through torch.jit.script and torch.jit.freeze;
  * pytorch-recompute: StoreModel.forward over every id so far for each token (no cache);
    "step at cache length L" is then the forward of L + 1 positions;
  * numpy: bench_model_peers.NumpyForward's layers on a preallocated cache.
Measurements: one step at cache lengths 16, 32, 64, 128, 159 (the step adds position L);
prefill of 16, 32, 64, 128, 160 positions; tokens per second writing 128 tokens greedily
(argmax, never stopping) after a 12-id prompt, prefill included.
Each (peer, threads) runs in a process of its own (idle OpenMP threads would slow the next
peer; OpenBLAS takes its thread count at start). Rounds interleave the peers; each number
is the median over the rounds of per-round medians (timeit-style repetition, ≥ --budget s).
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages
from references import generate  # noqa: E402
from common.model import from_exported  # noqa: E402
from benchmarks.bench_model_peers import NumpyForward, median_seconds  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages
from common import peer_threads  # noqa: E402
from common.run_folder import run_folder  # noqa: E402
CACHE_LENGTHS = [16, 32, 64, 128, 159]
PREFILLS = [16, 32, 64, 128, 160]
WRITTEN = 128
PEERS = ["pytorch-eager", "pytorch-script", "pytorch-recompute", "numpy"]


class NumpyDecoder(NumpyForward):
    """NumPy float32 on a cache (layers x heads x context x head_size), the same steps."""

    def new_cache(self):
        s = self.s
        shape = (s["layers"], s["heads"], s["longest"], s["head_size"])
        return np.zeros(shape, np.float32), np.zeros(shape, np.float32)

    def rope_at(self, x, start):
        half = x.shape[-1] // 2
        a, b = x[..., :half], x[..., half:]
        cos, sin = self.cos[start:start + x.shape[-2]], self.sin[start:start + x.shape[-2]]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)

    def __call__(self, ids, start, keys, values):
        s, w = self.s, self.w
        m, heads, d = len(ids), s["heads"], s["head_size"]
        end = start + m
        x = w["embedding"][ids]
        allowed = np.arange(end)[None, :] <= np.arange(start, end)[:, None]
        for layer in range(s["layers"]):
            p = f"layers.{layer}."
            h = self.norm(x, p + "attention_norm")
            split = lambda t: t.reshape(m, heads, d).transpose(1, 0, 2)  # noqa: E731
            q = self.rope_at(split(h @ w[p + "attention.query"]), start)
            keys[layer, :, start:end] = self.rope_at(split(h @ w[p + "attention.key"]), start)
            values[layer, :, start:end] = split(h @ w[p + "attention.value"])
            scores = q @ keys[layer, :, :end].transpose(0, 2, 1) / np.float32(np.sqrt(d))
            if m > 1:
                scores = np.where(allowed, scores, -np.inf)
            weights = np.exp(scores - scores.max(-1, keepdims=True))
            weights /= weights.sum(-1, keepdims=True)
            o = (weights @ values[layer, :, :end]).transpose(1, 0, 2).reshape(m, heads * d)
            x = x + o @ w[p + "attention.output"]
            u = self.norm(x, p + "mlp_norm") @ w[p + "mlp.up.weight"] + w[p + "mlp.up.bias"]
            u = 0.5 * u * (1.0 + torch.erf(torch.from_numpy(u / np.float32(np.sqrt(2.0)))).numpy())
            x = x + u @ w[p + "mlp.down.weight"] + w[p + "mlp.down.bias"]
        return self.norm(x, "final_norm") @ w["embedding"].T


class Recompute:
    """No cache: every call runs StoreModel.forward over all ids up to its last position."""

    def __init__(self, model, text):
        self.model, self.text = model, list(text)

    def new_cache(self):
        return None, None

    def __call__(self, ids, start, keys, values):
        ids = [int(i) for i in ids]
        self.text[start:start + len(ids)] = ids
        return self.model(torch.tensor(self.text[:start + len(ids)]))[start:]


def text_ids():
    golden = json.loads((ROOT / "tests/data/store/golden.json").read_text())
    return next(p["ids"] for p in golden if len(p["ids"]) == 160)


def build(peer):
    """-> (decoder(ids, start, keys, values) -> logits (m x V), its new_cache, to_ids)."""
    manifest, weights = generate.load_weights(ROOT / "models/store", np.float32)
    if peer == "numpy":
        decoder = NumpyDecoder(manifest["settings"], weights)
        return decoder, decoder.new_cache, lambda ids: np.asarray(ids)
    model = from_exported(manifest["settings"], weights)
    if peer == "pytorch-recompute":
        decoder = Recompute(model, text_ids())
        return decoder, decoder.new_cache, lambda ids: list(ids)
    decoder = generate.CachedDecoder(model).eval()
    if peer == "pytorch-script":
        decoder = torch.jit.freeze(torch.jit.script(decoder), preserved_attrs=["new_cache"])
    return decoder, decoder.new_cache, lambda ids: torch.tensor(ids)


def generate_greedily(decoder, new_cache, to_ids, prompt, count):
    """`count` ids by argmax after `prompt`, prefill included; never stops early."""
    keys, values = new_cache()
    logits = decoder(to_ids(prompt), 0, keys, values)
    written = []
    for position in range(len(prompt), len(prompt) + count):
        written.append(int(logits[-1].argmax()))
        if position < len(prompt) + count - 1:
            logits = decoder(to_ids(written[-1:]), position, keys, values)
    return written


def time_peer(peer, threads, budget):
    """{"step": {L: s}, "prefill": {n: s}, "tokens_per_second": x} for one peer, in this process."""
    peer_threads.limit_this_process(threads)  # OpenBLAS's threads too (NumPy's and PyTorch's products)
    torch.set_num_threads(threads)
    decoder, new_cache, to_ids = build(peer)
    text = text_ids()
    prompt = text[:12]
    result = {"step": {}, "prefill": {}}
    with torch.inference_mode():
        for length in CACHE_LENGTHS:
            keys, values = new_cache()
            decoder(to_ids(text[:length]), 0, keys, values)
            step = to_ids(text[length:length + 1])
            # the step rewrites position `length`, so every repetition sees the same cache
            result["step"][length] = median_seconds(lambda: decoder(step, length, keys, values), budget, least=5)
        for n in PREFILLS:
            keys, values = new_cache()
            ids = to_ids(text[:n])
            result["prefill"][n] = median_seconds(lambda: decoder(ids, 0, keys, values), budget, least=5)
        seconds = median_seconds(lambda: generate_greedily(decoder, new_cache, to_ids, prompt, WRITTEN),
                                 budget, least=2)
        result["tokens_per_second"] = WRITTEN / seconds
    return result


def build_exact():
    """-> the float64 CachedDecoder as build() returns a peer."""
    exact, _, _ = generate.load(ROOT / "models/store")
    return exact, exact.new_cache, lambda ids: torch.tensor(ids)


def check_agreement():
    """Every peer's float32 logits, prefilled and stepped, against the float64 decoder."""
    text = text_ids()
    exact, _, _ = build_exact()
    keys, values = exact.new_cache()
    with torch.inference_mode():
        expected = exact(torch.tensor(text), 0, keys, values).numpy()
        for peer in PEERS:
            decoder, new_cache, to_ids = build(peer)
            keys, values = new_cache()
            got = np.concatenate([np.asarray(decoder(to_ids(text[:100]), 0, keys, values)),
                                  *[np.asarray(decoder(to_ids(text[i:i + 1]), i, keys, values))
                                    for i in range(100, len(text))]])
            worst = float(np.abs(got - expected).max())
            if not worst < 1e-3:
                raise SystemExit(f"{peer}: logits differ from float64 by {worst:.2e}")
            print(f"{peer}: max |logit - float64| {worst:.1e}")


def peer_in_subprocess(peer, threads, budget):
    env = peer_threads.thread_env(threads)
    started = time.time()
    out = subprocess.run([sys.executable, __file__, "--peer", peer, "--threads", str(threads),
                          "--budget", str(budget)], check=True, capture_output=True, text=True,
                         env=env).stdout
    r = json.loads(out)
    print(f"  {peer}, {threads} thread(s): {time.time() - started:.0f} s", flush=True)
    return {"step": {int(k): v for k, v in r["step"].items()},
            "prefill": {int(k): v for k, v in r["prefill"].items()},
            "tokens_per_second": r["tokens_per_second"]}


def median_over_rounds(runs):
    return {"step": {n: statistics.median(r["step"][n] for r in runs) for n in CACHE_LENGTHS},
            "prefill": {n: statistics.median(r["prefill"][n] for r in runs) for n in PREFILLS},
            "tokens_per_second": statistics.median(r["tokens_per_second"] for r in runs)}


def table(results, thread_counts):
    columns = [(peer, t) for peer in PEERS for t in thread_counts]
    lines = ["| | " + " | ".join(f"{peer}, {t} thr" for peer, t in columns) + " |",
             "|---|" + "---:|" * len(columns)]

    def row(label, value, better):
        cells = {c: value(results[c[0]][c[1]]) for c in columns}
        pytorch_cached = [c for c in columns if c[0] in ("pytorch-eager", "pytorch-script")]
        best = better(pytorch_cached, key=lambda c: cells[c])
        lines.append(f"| {label} | " + " | ".join(
            (f"**{cells[c]:.3f}**" if c == best else f"{cells[c]:.3f}") for c in columns) + " |")

    for n in CACHE_LENGTHS:
        row(f"step at cache {n}, ms", lambda r, n=n: r["step"][n] * 1e3, min)
    for n in PREFILLS:
        row(f"prefill {n}, ms", lambda r, n=n: r["prefill"][n] * 1e3, min)
    row(f"tokens/s writing {WRITTEN}", lambda r: r["tokens_per_second"], max)
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2, help="peers run on 1 … threads (default 2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=0.15, help="seconds of repetition per number")
    parser.add_argument("--out", default=str(run_folder(ROOT) / "decode_peers.json"))
    parser.add_argument("--peer", choices=PEERS, help=argparse.SUPPRESS)  # internal: time one peer
    args = parser.parse_args()
    if args.peer:
        print(json.dumps(time_peer(args.peer, args.threads, args.budget)))
        return
    started = time.time()
    check_agreement()
    thread_counts = list(range(1, args.threads + 1))
    runs = {peer: {t: [] for t in thread_counts} for peer in PEERS}
    for round_index in range(args.rounds):
        for peer in PEERS:
            for t in thread_counts:
                runs[peer][t].append(peer_in_subprocess(peer, t, args.budget))
        print(f"round {round_index + 1} of {args.rounds} done, {time.time() - started:.0f} s", flush=True)
        # written after every round, so an interrupted run leaves its finished rounds
        results = {peer: {t: median_over_rounds(runs[peer][t]) for t in thread_counts} for peer in PEERS}
        text = table(results, thread_counts)
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps({
            "torch": torch.__version__, "numpy": np.__version__, "rounds": round_index + 1,
            "budget_seconds": args.budget, "written": WRITTEN, "prompt_ids": 12,
            "units": {"step": "seconds", "prefill": "seconds"},
            "results": results, "runs": runs, "table": text,
            "wall_seconds": round(time.time() - started, 1)}, indent=1) + "\n")
    print("store model decoding, float32; medians over rounds; bold: the faster cached PyTorch")
    print(text)

if __name__ == "__main__":
    main()
