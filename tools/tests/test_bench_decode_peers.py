"""tools/benchmarks/bench_decode_peers.py's peers decode what tools/references/generate.py's float64 decoder does."""

import os
import sys

import numpy as np
import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from benchmarks import bench_decode_peers  # noqa: E402


@pytest.mark.parametrize("peer", bench_decode_peers.PEERS)
def test_peer_writes_the_float64_greedy_tokens(peer):
    torch.set_num_threads(2)
    exact = bench_decode_peers.build_exact()
    prompt = bench_decode_peers.text_ids()[:12]
    with torch.inference_mode():
        expected = bench_decode_peers.generate_greedily(*exact, prompt, 24)
        decoder, new_cache, to_ids = bench_decode_peers.build(peer)
        got = bench_decode_peers.generate_greedily(decoder, new_cache, to_ids, prompt, 24)
        keys, values = new_cache()
        logits = np.asarray(decoder(to_ids(prompt[:5]), 0, keys, values))
        step = np.asarray(decoder(to_ids(prompt[5:6]), 5, keys, values))
        exact_keys, exact_values = exact[1]()
        full = exact[0](exact[2](prompt[:6]), 0, exact_keys, exact_values).numpy()
    assert got == expected
    assert np.abs(np.concatenate([logits, step]) - full).max() < 1e-3
