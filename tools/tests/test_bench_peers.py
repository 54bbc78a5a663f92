"""tools/benchmarks/bench_peers.py's statistics peers compute what attn's kernel measures (head_statistics.hpp)."""

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchmarks import bench_peers  # noqa: E402


def loop_statistics(q, k, back=4, markers=(0, 1)):
    """Per head and row, in double with loops: previous, first, self, back, markers, largest, entropy, distance."""
    heads, n, size = q.shape
    out = {name: np.zeros((heads, n)) for name in
           ("previous", "first", "self", "back", "markers", "largest", "entropy", "distance")}
    for h in range(heads):
        for i in range(n):
            s = [float(np.dot(q[h, i].astype(np.float64), k[h, j].astype(np.float64))) / math.sqrt(size)
                 for j in range(i + 1)]
            m = max(s)
            w = [math.exp(x - m) for x in s]
            total = sum(w)
            w = [x / total for x in w]
            out["previous"][h, i] = w[i - 1] if i > 0 else 0.0
            out["first"][h, i] = w[0]
            out["self"][h, i] = w[i]
            out["back"][h, i] = sum(w[j] for j in range(i + 1) if j <= i - back)
            out["markers"][h, i] = sum(w[j] for j in markers if j <= i)
            out["largest"][h, i] = max(w)
            out["entropy"][h, i] = -sum(x * math.log(x) for x in w if x > 0)
            out["distance"][h, i] = sum(x * (i - j) for j, x in enumerate(w))
    return out


def test_numpy_statistics_match_a_loop_reference():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 40, 16)).astype(np.float32) for _ in range(3))
    _, got = bench_peers.numpy_statistics(q, k, v)
    expected = loop_statistics(q, k)
    for name, values in expected.items():
        got_values = got[name]
        if name == "previous":  # numpy's diagonal(-1) starts at row 1
            got_values = np.concatenate([np.zeros((2, 1)), got_values], axis=1)
        assert np.allclose(got_values, values, atol=1e-5), name
