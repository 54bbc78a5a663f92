"""tools/benchmarks/bench_llamacpp.py: what it makes of its systems' JSON (no system is run here)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import bench_llamacpp as bl  # noqa: E402


def run(prefill_seconds, decode_seconds, rss):
    return {"threads": 2, "prefill": [{"tokens": 128, "seconds": list(prefill_seconds)}],
            "decode": [{"context": 128, "steps": 16, "seconds": list(decode_seconds)}], "peak_rss_bytes": rss}


def test_rounds_merge_every_repetition_and_keep_the_highest_peak():
    first, second = run([0.30, 0.32], [0.16], 500 << 20), run([0.20], [0.48, 0.32], 600 << 20)
    merged = bl.merge_raw([first, second])
    assert merged["prefill"] == [{"tokens": 128, "seconds": [0.30, 0.32, 0.20]}]
    assert merged["decode"] == [{"context": 128, "steps": 16, "seconds": [0.16, 0.48, 0.32]}]
    assert merged["peak_rss_bytes"] == 600 << 20 and merged["threads"] == 2
    assert first["prefill"][0]["seconds"] == [0.30, 0.32]  # the runs themselves are left as they were
    summary = bl.summarize(merged)
    assert summary["prefill_128_tokens_per_second"] == 128 / 0.30  # the median of the three
    assert summary["decode_128_ms_per_token_best"] == 1e3 * 0.16 / 16
    assert bl.merge_raw([first]) == first
