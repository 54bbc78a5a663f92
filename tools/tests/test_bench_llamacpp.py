"""tools/benchmarks/bench_llamacpp.py: what it makes of its systems' JSON (no system is run here)."""
import sys
from pathlib import Path

import pytest

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


def test_a_step_share_pairs_each_repetition_with_the_read_bandwidth_timed_beside_it():
    first, second = run([0.30], [0.16, 0.20], 500 << 20), run([0.30], [0.32], 500 << 20)
    first["step_weights_bytes"] = second["step_weights_bytes"] = 400e6
    first["decode"][0]["read_bytes_per_second"] = [50e9, 40e9]
    second["decode"][0]["read_bytes_per_second"] = [20e9]
    merged = bl.merge_raw([first, second])
    assert merged["decode"][0]["read_bytes_per_second"] == [50e9, 40e9, 20e9]
    summary = bl.summarize(merged)
    # 16 steps of 400 MB: 40 GB/s over 50 (0.8), 32 over 40 (0.8), 20 over 20 (1.0); median 0.8
    assert summary["decode_128_read_share"] == pytest.approx(0.8)
    assert summary["decode_128_read_gb_per_second"] == pytest.approx(40.0)
    # the cache's bytes count too: 100 MB more a step is 1.25× the bytes
    first["decode"][0]["cache_bytes_per_step"] = 100e6
    assert bl.summarize(bl.merge_raw([first, second]))["decode_128_read_share"] == pytest.approx(1.0)
    # without the reads (llama.cpp, or an older attn run): no share
    assert "decode_128_read_share" not in bl.summarize(run([0.30], [0.16], 500 << 20))


def test_each_weight_choice_names_its_row_and_flags_and_the_rounding_rows_get_bfloat16s_tolerance():
    assert bl.weights_argument("converted") == "converted"
    assert bl.weights_argument("bfloat16_activations") == "stored_16_bit --bfloat16-activations"
    assert bl.weights_argument("bfloat16_attention") == "converted --bfloat16-attention"
    assert bl.attn_name("converted") == "attn"
    assert bl.attn_name("stored_16_bit") == "attn, 16-bit weights"
    assert bl.attn_name("bfloat16_attention") == "attn, bfloat16 attention"
    assert bl.attn_name("bfloat16_activations") == "attn, 16-bit weights, bfloat16 activations"
    # an F32 checkpoint: float rows keep F32's tolerance, rows that round to bfloat16 get BF16's
    assert bl.agreement_tolerance("attn", "F32") == bl.TOLERANCE["F32"]
    assert bl.agreement_tolerance("llama.cpp", "F32") == bl.TOLERANCE["F32"]
    # llama.cpp's defaults keep keys and values in float16
    assert bl.agreement_tolerance("llama.cpp defaults", "F32") == bl.TOLERANCE["F16"]
    assert bl.agreement_tolerance("llama.cpp defaults", "BF16") == bl.TOLERANCE["BF16"]
    assert bl.agreement_tolerance(bl.attn_name("bfloat16_attention"), "F32") == bl.TOLERANCE["BF16"]
    assert bl.agreement_tolerance(bl.attn_name("bfloat16_activations"), "BF16") == bl.TOLERANCE["BF16"]


def test_a_held_isa_gives_llama_cpp_a_folder_of_that_variant_alone(tmp_path):
    import pytest
    from benchmarks.peers import llamacpp_setup as ls

    prebuilt = tmp_path / "prebuilt"
    prebuilt.mkdir()
    for name in ("libggml-base.so", "libggml-cpu-haswell.so", "libggml-cpu-zen4.so"):
        (prebuilt / name).write_text(name)
    llama = ls.LlamaCpp(tmp_path / "source", prebuilt, tmp_path / "harness", "v0", "c" * 40)
    assert ls.held_to(llama, "native", tmp_path) is llama
    held = ls.held_to(llama, "avx2", tmp_path / "cache")
    assert held.backends == tmp_path / "cache" / "backends-avx2" and held.harness == llama.harness
    assert [p.name for p in held.backends.iterdir()] == ["libggml-cpu-haswell.so"]
    assert (held.backends / "libggml-cpu-haswell.so").read_text() == "libggml-cpu-haswell.so"
    assert ls.held_to(llama, "avx2", tmp_path / "cache") == held  # a second run finds the link there
    (prebuilt / "libggml-cpu-haswell.so").unlink()
    with pytest.raises(FileNotFoundError, match="avx2"):
        ls.held_to(llama, "avx2", tmp_path / "other")
    assert set(bl.TORCH_ISA_ENV) == set(bl.ATTN_BUILD_OF_ISA) == {"native", "avx2"}
    assert bl.TORCH_ISA_ENV["avx2"] == {"ATEN_CPU_CAPABILITY": "avx2", "OPENBLAS_CORETYPE": "Haswell"}
