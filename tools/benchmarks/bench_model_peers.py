#!/usr/bin/env python3
"""The store model's forward pass: attn (C++) against PyTorch and NumPy, same run.

  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tools/benchmarks/bench_model_peers.py \
      [--bench build/bench/bench/attn_bench_kernels] [--threads 2] [--out docs/bench/<date>-<machine>/model_forward_threads2.json]

Peers, float32, logits only, on the first n ids of one 160-token text:
  * PyTorch: tools/common/model.py's StoreModel (nn.Module) with the exported weights, the two
    ways its users would run it: eager under torch.inference_mode(), and TorchScript
    (traced per length, frozen, torch.jit.optimize_for_inference); the faster counts;
  * NumPy: a forward written the way the chapter's lib.transformer recomputes the model
    (matrix products, np.where causal mask, exp/sum softmax, per layer).
attn runs on an attn::Workers kept across calls (model_forward/workers:t), as the peers keep
their thread pools; with threads started in every call (model_forward/threads:t) it is in the
table too, and its ratio to PyTorch in brackets.
Each peer runs in a process of its own, once per thread count 1 … --threads, and counts
at its best. --rounds (3) rounds interleave attn and the peers; times are medians over them. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are set on these machines and slow the
peers; unset both in this command only (as above).
"""
import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages
from common.model import from_exported  # noqa: E402
from references.generate import load_weights as exported_weights  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages
from common.peer_threads import limit_this_process  # noqa: E402
from common.run_folder import run_folder  # noqa: E402
POSITIONS = [16, 32, 64, 128, 160]
PEERS = ["pytorch-eager", "pytorch-script", "numpy"]


def load_weights(folder):
    """(the manifest's settings, name -> float32 array) of an exported model folder."""
    manifest, weights = exported_weights(folder, np.float32)
    return manifest["settings"], weights


def torch_model(settings, w):
    return from_exported(settings, w).float()


class NumpyForward:
    """The chapter's lib.transformer style: plain NumPy, one layer after another."""

    def __init__(self, settings, w):
        self.s, self.w = settings, w
        d, half = settings["head_size"], settings["head_size"] // 2
        angle = np.arange(settings["longest"])[:, None] * settings["rope_base"] ** (-2.0 * np.arange(half) / d)
        self.cos, self.sin = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)

    def norm(self, x, prefix):
        mean = x.mean(-1, keepdims=True)
        variance = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(variance + self.s["norm_epsilon"]) * self.w[prefix + ".weight"] \
            + self.w[prefix + ".bias"]

    def rope(self, x, n):
        half = x.shape[-1] // 2
        a, b = x[..., :half], x[..., half:]
        cos, sin = self.cos[:n], self.sin[:n]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)

    def forward(self, ids):
        s, w = self.s, self.w
        n, heads, d = len(ids), s["heads"], s["head_size"]
        x = w["embedding"][ids]
        allowed = np.tril(np.ones((n, n), dtype=bool))
        for layer in range(s["layers"]):
            p = f"layers.{layer}."
            h = self.norm(x, p + "attention_norm")
            split = lambda m: m.reshape(n, heads, d).transpose(1, 0, 2)  # noqa: E731
            q = self.rope(split(h @ w[p + "attention.query"]), n)
            k = self.rope(split(h @ w[p + "attention.key"]), n)
            v = split(h @ w[p + "attention.value"])
            scores = q @ k.transpose(0, 2, 1) / np.sqrt(d)
            scores = np.where(allowed, scores, -np.inf)
            weights = np.exp(scores - scores.max(-1, keepdims=True))
            weights /= weights.sum(-1, keepdims=True)
            x = x + (weights @ v).transpose(1, 0, 2).reshape(n, heads * d) @ w[p + "attention.output"]
            u = self.norm(x, p + "mlp_norm") @ w[p + "mlp.up.weight"] + w[p + "mlp.up.bias"]
            # NumPy has no erf; the chapter's code borrows one (here torch's, on the array)
            u = 0.5 * u * (1.0 + torch.erf(torch.from_numpy(u / np.float32(math.sqrt(2.0)))).numpy())
            x = x + u @ w[p + "mlp.down.weight"] + w[p + "mlp.down.bias"]
        return self.norm(x, "final_norm") @ w["embedding"].T


def scripted(model, n, text):
    """TorchScript for n positions: traced, frozen and optimised for inference."""
    with torch.inference_mode():
        example = torch.tensor(text[:n])
        traced = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(model, example)))
        assert torch.allclose(traced(example), model(example), atol=1e-4)
    return traced


def median_seconds(call, budget=0.5, least=20):
    call()  # warm up
    times, start = [], time.perf_counter()
    while len(times) < least or time.perf_counter() - start < budget:
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def ours(bench, threads):
    """Medians in seconds per position count, {"workers": …, "threads": …}: the pass on an
    attn::Workers kept across calls (as PyTorch and OpenBLAS keep their thread pools), and
    with threads started and joined in every call (ForwardOptions::threads)."""
    out = subprocess.run([bench, f"--benchmark_filter=^model_forward/(threads|workers):{threads}/",
                          "--benchmark_format=json", "--benchmark_repetitions=5",
                          "--benchmark_report_aggregates_only=true"],
                         check=True, capture_output=True, text=True).stdout
    result = {"workers": {}, "threads": {}}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") == "median":
            form = b["run_name"].split("/")[1].split(":")[0]
            n = int(b["run_name"].split("positions:")[1].split("/")[0])
            result[form][n] = b["real_time"] * {"ms": 1e-3, "us": 1e-6, "ns": 1e-9}[b["time_unit"]]
    return result


def time_peer(peer, threads):
    """Medians in seconds per position count for one peer on `threads` threads, in this process."""
    limit_this_process(threads)  # OpenBLAS's threads too (NumPy's and PyTorch's products)
    torch.set_num_threads(threads)
    settings, w = load_weights(ROOT / "models/store")
    text = longest_golden_text()
    result = {}
    if peer == "numpy":
        numpy_model = NumpyForward(settings, w)
        for n in POSITIONS:
            result[n] = median_seconds(lambda: numpy_model.forward(np.array(text[:n])))
        return result
    model = torch_model(settings, w)
    for n in POSITIONS:
        ids = torch.tensor(text[:n])
        if peer == "pytorch-eager":
            with torch.inference_mode():
                result[n] = median_seconds(lambda: model(ids))
        else:
            traced = scripted(model, n, text)
            with torch.inference_mode():
                result[n] = median_seconds(lambda: traced(ids))
    return result


def longest_golden_text():
    golden = json.loads((ROOT / "tests/data/store/golden.json").read_text())
    return next(p["ids"] for p in golden if len(p["ids"]) == 160)


def peer_in_subprocess(peer, threads):
    """Each peer runs in a process of its own: PyTorch's idle OpenMP threads spin for a while
    after each call and would slow whatever ran next in the same process."""
    out = subprocess.run([sys.executable, __file__, "--peer", peer, "--threads", str(threads)],
                         check=True, capture_output=True, text=True).stdout
    return {int(n): t for n, t in json.loads(out).items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default=str(ROOT / "build/bench/bench/attn_bench_kernels"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=None, help="JSON results (default docs/bench/<date>-<machine>/model_forward_threads<t>.json)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of attn + every peer (default 3)")
    parser.add_argument("--peer", choices=PEERS, help=argparse.SUPPRESS)  # internal: time one peer
    args = parser.parse_args()
    if args.peer:
        print(json.dumps(time_peer(args.peer, args.threads)))
        return

    settings, w = load_weights(ROOT / "models/store")  # the peers agree before they are timed
    text = longest_golden_text()
    with torch.inference_mode():
        full = torch_model(settings, w)(torch.tensor(text)).numpy()
    assert np.abs(full - NumpyForward(settings, w).forward(np.array(text))).max() < 1e-3

    # Rounds interleave attn and the peers, so a slow spell on these shared machines
    # touches every contender alike; each time is the median over the rounds.
    ours_runs, peer_runs = [], {peer: [] for peer in PEERS}
    for _ in range(args.rounds):
        ours_runs.append(ours(args.bench, args.threads))
        for peer in PEERS:  # at its best of 1 … threads threads
            runs = [peer_in_subprocess(peer, t) for t in range(1, args.threads + 1)]
            peer_runs[peer].append({n: min((r[n], t + 1) for t, r in enumerate(runs)) for n in POSITIONS})
    cpp = {n: statistics.median(run["workers"][n] for run in ours_runs) for n in POSITIONS}
    cpp_per_call = {n: statistics.median(run["threads"][n] for run in ours_runs) for n in POSITIONS}
    peers = {peer: {n: statistics.median(run[n][0] for run in peer_runs[peer]) for n in POSITIONS} for peer in PEERS}
    peer_threads = {peer: {n: [run[n][1] for run in peer_runs[peer]] for n in POSITIONS} for peer in PEERS}
    rows = []
    for n in POSITIONS:
        t_torch = min(peers["pytorch-eager"][n], peers["pytorch-script"][n])
        rows.append({"positions": n, "attn_ms": cpp[n] * 1e3, "attn_threads_per_call_ms": cpp_per_call[n] * 1e3,
                     "pytorch_eager_ms": peers["pytorch-eager"][n] * 1e3,
                     "pytorch_script_ms": peers["pytorch-script"][n] * 1e3,
                     "pytorch_ms": t_torch * 1e3, "numpy_ms": peers["numpy"][n] * 1e3,
                     "peer_threads": {peer: peer_threads[peer][n] for peer in PEERS},
                     "vs_pytorch": t_torch / cpp[n], "vs_numpy": peers["numpy"][n] / cpp[n],
                     "vs_pytorch_threads_per_call": t_torch / cpp_per_call[n]})
    print(f"store model forward, float32, logits only, attn on {args.threads} thread(s), "
          f"each peer its best of 1 … {args.threads}, medians over {args.rounds} rounds")
    print("| positions | attn, kept Workers | attn, threads per call | PyTorch eager (inference_mode) "
          "| PyTorch TorchScript (frozen) | NumPy (chapter style) | vs PyTorch's faster | vs NumPy |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['positions']} | {r['attn_ms']:.3f} ms | {r['attn_threads_per_call_ms']:.3f} ms "
              f"| {r['pytorch_eager_ms']:.3f} ms | {r['pytorch_script_ms']:.3f} ms | {r['numpy_ms']:.3f} ms "
              f"| {r['vs_pytorch']:.1f}× ({r['vs_pytorch_threads_per_call']:.1f}×) | {r['vs_numpy']:.1f}× |")
    out = Path(args.out) if args.out else run_folder(ROOT) / f"model_forward_threads{args.threads}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"threads": args.threads, "rounds": args.rounds, "torch": torch.__version__,
                               "numpy": np.__version__, "rows": rows,
                               "runs": {"attn": ours_runs, **{p: [{n: r[n][0] for n in POSITIONS} for r in peer_runs[p]]
                                                             for p in PEERS}}}, indent=2) + "\n")


if __name__ == "__main__":
    main()
