#!/usr/bin/python3
"""Causal multi-head attention in the peers attn is compared with: PyTorch and NumPy.

The same problem as attn's `heads/...` benchmarks: `heads` heads of `size` numbers,
queries = keys = values shape (heads, positions, size), float32, causal, scale 1/sqrt(size).
Each formulation a PyTorch user would try is timed (the fastest is what attn is compared
with), and NumPy the way the chapter writes it. Medians of repeated runs, after warm-up.

Run it with the machine's OpenBLAS free to pick its own kernels:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE /usr/bin/python3 tools/benchmarks/bench_peers.py --threads 2

(OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are set on the project's machines and slow both
peers; they are unset for this command only.) Writes JSON to --json (default stdout).
"""

import argparse
import ctypes
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages
from common.peer_threads import limit_this_process  # noqa: E402


def blas_info():
    """Which BLAS numpy (and PyTorch) use and which kernels it picked."""
    info = {"OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE"),
            "OPENBLAS_L2_SIZE": os.environ.get("OPENBLAS_L2_SIZE")}
    try:
        import threadpoolctl
        info["threadpoolctl"] = threadpoolctl.threadpool_info()
        return info
    except ImportError:
        pass
    # Without threadpoolctl: ask OpenBLAS itself, through the library numpy loaded.
    for name in ("libblas.so.3", "libopenblas.so.0"):
        try:
            lib = ctypes.CDLL(name)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            lib.openblas_get_config.restype = ctypes.c_char_p
            info["openblas"] = {"library": name, "corename": lib.openblas_get_corename().decode(),
                                "config": lib.openblas_get_config().decode()}
            return info
        except (OSError, AttributeError):
            continue
    info["numpy_config"] = "see numpy.show_config()"
    return info


def median_time(function, min_runs, min_seconds, max_runs=50):
    """Median wall time of function() in milliseconds, after two warm-up calls."""
    function()
    function()
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or (time.perf_counter() - start < min_seconds and len(times) < max_runs):
        t0 = time.perf_counter()
        function()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), len(times)


def numpy_chapter(q, k, v, keep_weights):
    """The chapter's NumPy listing: one score matrix per head, np.where with np.tril, exp, sum."""
    positions, size = q.shape[1], q.shape[2]
    scores = q @ k.transpose(0, 2, 1) / np.sqrt(size).astype(q.dtype)
    scores = np.where(np.tril(np.ones((positions, positions), dtype=bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    output = weights @ v
    return (output, weights) if keep_weights else output


def statistics_marks(n, back=4, markers=(0, 1)):
    """The masks the statistics need, (n x n) float32: keys >= back before the query, markers,
    and the distance query - key (0 above the diagonal)."""
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    far = (j <= i - back).astype(np.float32)
    marked = np.zeros((n, n), dtype=np.float32)
    marked[:, list(markers)] = 1.0
    distance = np.where(j <= i, i - j, 0).astype(np.float32)
    return far, marked, distance


def torch_statistics(torch, heads, size):
    """Head statistics the way a PyTorch user computes them: materialise the weights (the fastest
    formulation returning them: baddbmm + additive mask under inference_mode), then reduce."""
    scale = 1.0 / math.sqrt(size)

    def setup(q, k, v):
        n = q.shape[1]
        additive = torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        bias = additive.expand(heads, n, n)
        far, marked, distance = (torch.from_numpy(m) for m in statistics_marks(n))

        def run():
            with torch.inference_mode():
                weights = torch.softmax(torch.baddbmm(bias, q, k.transpose(-2, -1), alpha=scale), dim=-1)
                out = torch.bmm(weights, v)
                stats = {
                    "previous": torch.diagonal(weights, offset=-1, dim1=-2, dim2=-1),
                    "first": weights[..., 0],
                    "self": torch.diagonal(weights, dim1=-2, dim2=-1),
                    "back": (weights * far).sum(-1),
                    "markers": (weights * marked).sum(-1),
                    "largest": weights.max(-1),
                    "entropy": -torch.special.xlogy(weights, weights).sum(-1),
                    "distance": (weights * distance).sum(-1),
                }
                return out, stats
        return run
    return setup


def numpy_statistics(q, k, v):
    """The chapter's NumPy listing, then the same reductions on its weights."""
    out, weights = numpy_chapter(q, k, v, True)
    n = q.shape[1]
    far, marked, distance = statistics_marks(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(weights > 0, weights * np.log(weights), 0.0)
    return out, {
        "previous": np.diagonal(weights, offset=-1, axis1=-2, axis2=-1),
        "first": weights[..., 0], "self": np.diagonal(weights, axis1=-2, axis2=-1),
        "back": (weights * far).sum(-1), "markers": (weights * marked).sum(-1),
        "largest": weights.max(-1), "argmax": weights.argmax(-1), "entropy": -plogp.sum(-1),
        "distance": (weights * distance).sum(-1),
    }


def torch_formulations(torch, heads, size):
    """name -> (setup(q, k, v) -> callable(keep_weights)). Each returns the output (and weights)."""
    F = torch.nn.functional
    scale = 1.0 / math.sqrt(size)
    forms = {}

    def textbook(q, k, v, grad):
        # what a model's forward does with autograd on: matmul -> masked_fill -> softmax -> matmul
        if grad:
            q, k, v = (t.clone().requires_grad_(True) for t in (q, k, v))
        n = q.shape[1]
        mask = torch.ones(n, n, dtype=torch.bool).triu(1)

        def run(keep):
            scores = (q @ k.transpose(-2, -1)) * scale
            scores = scores.masked_fill(mask, float("-inf"))
            weights = torch.softmax(scores, dim=-1)
            out = weights @ v
            return (out, weights) if keep else out
        return run

    forms["textbook, autograd on"] = lambda q, k, v: textbook(q, k, v, True)

    def under(context, make):  # run make(q, k, v)'s function inside `with context():`
        def setup(q, k, v):
            run = make(q, k, v)

            def wrapped(keep):
                with context():
                    return run(keep)
            return wrapped
        return setup

    forms["textbook, torch.no_grad()"] = under(torch.no_grad, lambda q, k, v: textbook(q, k, v, False))
    forms["textbook, torch.inference_mode()"] = under(torch.inference_mode, lambda q, k, v: textbook(q, k, v, False))

    def baddbmm(q, k, v):
        n = q.shape[1]
        additive = torch.zeros(n, n).masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
        bias = additive.expand(heads, n, n)

        def run(keep):
            scores = torch.baddbmm(bias, q, k.transpose(-2, -1), alpha=scale)
            weights = torch.softmax(scores, dim=-1)
            out = torch.bmm(weights, v)
            return (out, weights) if keep else out
        return run

    forms["baddbmm + additive mask, torch.inference_mode()"] = under(torch.inference_mode, baddbmm)

    def mha(q, k, v):
        # nn.MultiheadAttention includes its input and output projections (4 extra
        # (positions x width) x (width x width) products); batch_first so its fast path may apply.
        width = heads * size
        layer = torch.nn.MultiheadAttention(width, heads, bias=False, batch_first=True).eval()
        x = q.transpose(0, 1).reshape(1, q.shape[1], width).contiguous()
        n = q.shape[1]
        mask = torch.ones(n, n, dtype=torch.bool).triu(1)

        def run(keep):
            out, weights = layer(x, x, x, attn_mask=mask, need_weights=keep, average_attn_weights=False)
            return (out, weights) if keep else out
        return run

    forms["nn.MultiheadAttention (with its projections), torch.inference_mode()"] = under(torch.inference_mode, mha)

    if hasattr(F, "scaled_dot_product_attention"):
        def sdpa(q, k, v):
            def run(keep):
                if keep:
                    return None  # the fused op does not return weights
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return run
        forms["F.scaled_dot_product_attention(is_causal=True), torch.inference_mode()"] = under(torch.inference_mode,
                                                                                                sdpa)
    return forms


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--positions", type=int, nargs="+", default=[160, 512, 2048, 4096])
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--min-runs", type=int, default=5)
    parser.add_argument("--min-seconds", type=float, default=1.0, help="keep repeating until this long (per case)")
    parser.add_argument("--no-weights", action="store_true", help="skip the runs that return the weights")
    parser.add_argument("--json", help="write the results here (default: stdout)")
    parser.add_argument("--statistics", action="store_true",
                        help="time head statistics by materialising the weights (PyTorch, NumPy) instead")
    return parser.parse_args()


def time_statistics(args, torch, rng, report):
    """--statistics: head statistics from materialised weights, PyTorch and NumPy, per shape."""
    import resource
    for n in args.positions:
        q, k, v = (rng.standard_normal((args.heads, n, args.size)).astype(np.float32) for _ in range(3))
        tq, tk, tv = (torch.from_numpy(t.copy()) for t in (q, k, v))
        run = torch_statistics(torch, args.heads, args.size)(tq, tk, tv)
        ms, runs = median_time(run, args.min_runs, args.min_seconds)
        report["results"].append({"library": "pytorch", "formulation": "statistics from materialised weights "
                                  "(baddbmm + additive mask, softmax, reductions; inference_mode)",
                                  "positions": n, "statistics": True, "median_ms": ms, "runs": runs})
        print(f"pytorch  {n:6d} statistics {ms:10.3f} ms", file=sys.stderr)
        ms, runs = median_time(lambda: numpy_statistics(q, k, v), args.min_runs, args.min_seconds)
        report["results"].append({"library": "numpy", "formulation": "statistics from the chapter's weights",
                                  "positions": n, "statistics": True, "median_ms": ms, "runs": runs})
        print(f"numpy    {n:6d} statistics {ms:10.3f} ms", file=sys.stderr)
    report["maxrss_MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def time_attention(args, torch, forms, rng, report):
    """Each PyTorch formulation (checked against the chapter's NumPy listing first) and the
    listing itself, per shape, without and (unless --no-weights) with the weights returned."""
    for n in args.positions:
        q, k, v = (rng.standard_normal((args.heads, n, args.size)).astype(np.float32) for _ in range(3))
        tq, tk, tv = (torch.from_numpy(t.copy()) for t in (q, k, v))
        reference = numpy_chapter(q, k, v, False)
        for keep in ([False] if args.no_weights else [False, True]):
            for name, setup in forms.items():
                run = setup(tq, tk, tv)
                out = run(keep)
                if out is None:
                    continue
                got = (out[0] if keep else out)
                if "MultiheadAttention" not in name:  # check it computes the same thing
                    err = float(np.max(np.abs(got.detach().numpy() - reference)))
                    assert err < 1e-3, (name, n, err)
                ms, runs = median_time(lambda: run(keep), args.min_runs, args.min_seconds)
                report["results"].append({"library": "pytorch", "formulation": name, "positions": n,
                                          "weights": keep, "median_ms": ms, "runs": runs})
                print(f"pytorch  {n:6d} weights={keep!s:5} {ms:10.3f} ms  {name}", file=sys.stderr)
            ms, runs = median_time(lambda: numpy_chapter(q, k, v, keep), args.min_runs, args.min_seconds)
            report["results"].append({"library": "numpy", "formulation": "the chapter's listing (np.where, np.tril, "
                                      "exp, sum; float32)", "positions": n, "weights": keep, "median_ms": ms,
                                      "runs": runs})
            print(f"numpy    {n:6d} weights={keep!s:5} {ms:10.3f} ms", file=sys.stderr)


def main():
    args = parse_args()
    limit_this_process(args.threads)  # NumPy's OpenBLAS, and PyTorch's once imported
    import torch
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    F = torch.nn.functional
    report = {
        "threads": args.threads, "heads": args.heads, "size": args.size, "dtype": "float32",
        "python": sys.version.split()[0], "numpy": np.__version__, "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "torch_has_scaled_dot_product_attention": hasattr(F, "scaled_dot_product_attention"),
        "machine": platform.processor() or platform.machine(), "blas": blas_info(), "results": [],
    }
    forms = torch_formulations(torch, args.heads, args.size)
    rng = np.random.default_rng(0)
    if args.statistics:
        time_statistics(args, torch, rng, report)
    else:
        time_attention(args, torch, forms, rng, report)
    write_report(report, args.json)


def write_report(report, path):
    """The report as JSON, to path or (None) stdout."""
    text = json.dumps(report, indent=1, default=str)
    if path:
        with open(path, "w") as out:
            out.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
