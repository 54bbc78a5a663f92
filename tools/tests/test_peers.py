"""tools/benchmarks/peers: the rotary permutation, safetensors I/O, the PyTorch peer, and (when llama.cpp's
tree is installed) the GGUF conversion and bench_llamacpp.py's agreement check on every shape, shrunk."""

import contextlib
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))
from benchmarks import bench_llamacpp  # noqa: E402
from benchmarks.peers import hf_random  # noqa: E402
from benchmarks.peers import hf_to_gguf  # noqa: E402
from common import safetensors_io  # noqa: E402
from benchmarks.peers import torch_peer  # noqa: E402
from references import hf_checkpoints, hf_reference, validate_llamacpp  # noqa: E402

TINY_LLAMA = {"hidden_size": 8, "intermediate_size": 6, "num_hidden_layers": 2, "num_attention_heads": 2,
              "num_key_value_heads": 1, "head_dim": 4, "vocab_size": 11, "max_position_embeddings": 16,
              "rope_theta": 100.0}
TINY_GPT2 = {"n_embd": 8, "n_layer": 2, "n_head": 2, "n_positions": 16, "n_ctx": 16, "vocab_size": 11}
# Pythia-160m's and Qwen3-0.6B's features at a few values: a partial rotary (8 of 16 per head), 2 heads;
# head_dim 8 over a width of 12 (q is 4 × 8 = 32 wide), 2 query heads per key-value head.
TINY_NEOX = {"hidden_size": 32, "intermediate_size": 24, "num_hidden_layers": 2, "num_attention_heads": 2,
             "vocab_size": 13, "max_position_embeddings": 16, "rotary_pct": 0.5, "rotary_emb_base": 100}
TINY_QWEN3 = {"hidden_size": 12, "intermediate_size": 10, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 17, "max_position_embeddings": 16,
              "rope_theta": 1000.0}
# gemma-3-270m's and the Mistral shape's features with windows of 5 under the agreement check's 16-token prompt:
# 5 sliding layers and a full one (two θ), query_pre_attn_scalar = head_dim as in gemma-3-270m (llama.cpp
# scales by 1/√head_dim); a window on every Mistral layer.
TINY_GEMMA3 = {"hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 6, "num_attention_heads": 4,
               "num_key_value_heads": 1, "head_dim": 16, "query_pre_attn_scalar": 16, "vocab_size": 40,
               "max_position_embeddings": 32, "sliding_window": 5,
               "layer_types": ["sliding_attention"] * 5 + ["full_attention"]}
TINY_MISTRAL = {"hidden_size": 32, "intermediate_size": 40, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 48, "max_position_embeddings": 32,
                "sliding_window": 5}
TINY = {"smollm2-135m": TINY_LLAMA, "gpt2-small": TINY_GPT2, "pythia-160m": TINY_NEOX, "qwen3-0.6b": TINY_QWEN3,
        "gemma3-270m": TINY_GEMMA3, "mistral-small": TINY_MISTRAL}


def rotate_half_split(x, position, theta):
    """Hugging Face's layout, element by element: pair (i, i + d/2) turns by position·theta^(-2i/d)."""
    d, out = len(x), x.astype(np.float64).copy()
    for i in range(d // 2):
        angle = position * theta ** (-2.0 * i / d)
        out[i] = x[i] * math.cos(angle) - x[i + d // 2] * math.sin(angle)
        out[i + d // 2] = x[i + d // 2] * math.cos(angle) + x[i] * math.sin(angle)
    return out


def rotate_adjacent(x, position, theta):
    """ggml's normal rope, element by element: pair (2i, 2i + 1) turns by position·theta^(-2i/d)."""
    d, out = len(x), x.astype(np.float64).copy()
    for i in range(d // 2):
        angle = position * theta ** (-2.0 * i / d)
        out[2 * i] = x[2 * i] * math.cos(angle) - x[2 * i + 1] * math.sin(angle)
        out[2 * i + 1] = x[2 * i + 1] * math.cos(angle) + x[2 * i] * math.sin(angle)
    return out


def test_permuted_rows_under_adjacent_rotary_give_the_half_split_scores():
    rng = np.random.default_rng(1)
    heads, d, width = 3, 8, 5
    wq, wk = rng.standard_normal((heads * d, width)), rng.standard_normal((heads * d, width))
    x, y = rng.standard_normal(width), rng.standard_normal(width)
    pq, pk = hf_to_gguf.rotary_pairs_permutation(wq, heads), hf_to_gguf.rotary_pairs_permutation(wk, heads)
    for h in range(heads):
        rows = slice(h * d, (h + 1) * d)
        q_hf, k_hf = rotate_half_split(wq[rows] @ x, 5, 100.0), rotate_half_split(wk[rows] @ y, 2, 100.0)
        q_gg, k_gg = rotate_adjacent(pq[rows] @ x, 5, 100.0), rotate_adjacent(pk[rows] @ y, 2, 100.0)
        assert q_gg[0::2] == pytest.approx(q_hf[: d // 2]) and q_gg[1::2] == pytest.approx(q_hf[d // 2:])
        assert float(q_gg @ k_gg) == pytest.approx(float(q_hf @ k_hf))
    # without the permutation the scores differ: the check above can fail
    q_wrong = rotate_adjacent(wq[:d] @ x, 5, 100.0)
    assert not np.allclose(q_wrong, rotate_half_split(wq[:d] @ x, 5, 100.0))


def test_permutation_rejects_rows_that_do_not_split_into_heads():
    with pytest.raises(ValueError, match="10 rows do not split into 3 heads"):
        hf_to_gguf.rotary_pairs_permutation(np.zeros((10, 4)), 3)


def loop_llama_logits(folder, tokens):
    """A float64 Llama forward with loops over positions and heads, from the modelling formulas."""
    c = json.loads((folder / "config.json").read_text())
    w = {k: v.astype(np.float64) for k, v in safetensors_io.read_float32(folder / "model.safetensors")[0].items()}
    heads, kv_heads, d = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]

    def rms(x, g):
        return x / math.sqrt(float(np.mean(x * x)) + c["rms_norm_eps"]) * g

    xs = [w["model.embed_tokens.weight"][t].copy() for t in tokens]
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        hs = [rms(x, w[p + "input_layernorm.weight"]) for x in xs]
        qs = [(w[p + "self_attn.q_proj.weight"] @ h).reshape(heads, d) for h in hs]
        ks = [(w[p + "self_attn.k_proj.weight"] @ h).reshape(kv_heads, d) for h in hs]
        vs = [(w[p + "self_attn.v_proj.weight"] @ h).reshape(kv_heads, d) for h in hs]
        qs = [np.stack([rotate_half_split(q[h], i, c["rope_theta"]) for h in range(heads)]) for i, q in enumerate(qs)]
        ks = [np.stack([rotate_half_split(k[h], i, c["rope_theta"]) for h in range(kv_heads)]) for i, k in enumerate(ks)]
        for i in range(len(xs)):
            out = []
            for h in range(heads):
                g = h // (heads // kv_heads)
                scores = [float(qs[i][h] @ ks[j][g]) / math.sqrt(d) for j in range(i + 1)]
                top = max(scores)
                e = [math.exp(s - top) for s in scores]
                out.append(sum(e[j] / sum(e) * vs[j][g] for j in range(i + 1)))
            xs[i] = xs[i] + w[p + "self_attn.o_proj.weight"] @ np.concatenate(out)
        for i in range(len(xs)):
            h = rms(xs[i], w[p + "post_attention_layernorm.weight"])
            gate = w[p + "mlp.gate_proj.weight"] @ h
            xs[i] = xs[i] + w[p + "mlp.down_proj.weight"] @ (gate / (1 + np.exp(-gate)) * (w[p + "mlp.up_proj.weight"] @ h))
    return w["model.embed_tokens.weight"] @ rms(xs[-1], w["model.norm.weight"])


def test_torch_peer_llama_matches_a_loop_reference(tmp_path):
    folder = hf_random.write_checkpoint("smollm2-135m", "F32", tmp_path / "llama", seed=3, overrides=TINY_LLAMA)
    tokens = [1, 5, 10, 0, 7, 7]
    got = torch_peer.last_logits(torch_peer.load(folder, torch.float64), tokens, torch.float64).numpy()
    np.testing.assert_allclose(got, loop_llama_logits(folder, tokens), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape, overrides", [("pythia-160m", TINY_NEOX),
                                               ("pythia-160m", {**TINY_NEOX, "use_parallel_residual": False}),
                                               ("qwen3-0.6b", TINY_QWEN3), ("smollm2-135m", TINY_LLAMA)])
@pytest.mark.parametrize("writer", ["hf_random", "hf_checkpoints"])
def test_torch_peer_matches_the_float64_reference(tmp_path, shape, overrides, writer):
    """The PyTorch peer against tools/references/hf_reference.py, written independently, on both
    checkpoint writers' files (bench_llamacpp.py takes hf_checkpoints.py's where it exists)."""
    if writer == "hf_random":
        folder = hf_random.write_checkpoint(shape, "F32", tmp_path / shape, seed=5, overrides=overrides)
    else:
        architecture, config = hf_checkpoints.SHAPES[shape]
        folder = tmp_path / shape
        hf_checkpoints.write_checkpoint(folder, architecture, {**config, **overrides}, "F32", seed=5)
    tokens = [1, 5, 10, 0, 7, 7, 3, 2]
    got = torch_peer.last_logits(torch_peer.load(folder, torch.float64), tokens, torch.float64).numpy()
    expected = np.asarray(hf_reference.run(hf_reference.load(folder), tokens)[0][-1])
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())


def test_random_checkpoints_hold_the_published_tensor_names():
    for shape, names in (("pythia-160m", ["gpt_neox.embed_in.weight", "gpt_neox.layers.11.attention.query_key_value.bias",
                                          "gpt_neox.layers.0.mlp.dense_4h_to_h.weight", "embed_out.weight",
                                          "gpt_neox.final_layer_norm.bias"]),
                         ("qwen3-0.6b", ["model.embed_tokens.weight", "model.layers.27.self_attn.k_norm.weight",
                                         "model.layers.0.mlp.gate_proj.weight", "model.norm.weight"])):
        config = dict(hf_random.CONFIGS[shape])
        shapes = hf_random.SHAPES_OF[config["model_type"]](config)
        assert all(name in shapes for name in names), shape
        architecture, published = hf_checkpoints.SHAPES[shape]
        full = hf_checkpoints.make_config(architecture, published, "F32")
        assert {spec.name: spec.shape for spec in hf_checkpoints.tensor_plan(full, "F32")} == dict(shapes), shape
    neox = hf_random.CONFIGS["pythia-160m"]
    assert hf_random.gpt_neox_shapes(neox)["gpt_neox.layers.0.attention.query_key_value.weight"] == (3 * 768, 768)
    assert "lm_head.weight" not in hf_random.llama_shapes(hf_random.CONFIGS["qwen3-0.6b"])


@pytest.mark.parametrize("shape, overrides", [("smollm2-135m", TINY_LLAMA), ("gpt2-small", TINY_GPT2),
                                               ("pythia-160m", TINY_NEOX), ("qwen3-0.6b", TINY_QWEN3)])
def test_torch_peer_decoding_with_the_cache_matches_one_pass(tmp_path, shape, overrides):
    folder = hf_random.write_checkpoint(shape, "BF16", tmp_path / shape, seed=4, overrides=overrides)
    model, tokens = torch_peer.load(folder, torch.float64), [3, 1, 4, 1, 5, 9, 2]
    cache = torch_peer.new_cache(model, len(tokens), torch.float64)
    with torch.inference_mode():
        model.forward(torch.tensor(tokens[:3]), cache)
        for t in tokens[3:]:
            stepped = model.forward(torch.tensor([t]), cache)[0]
    whole = torch_peer.last_logits(model, tokens, torch.float64)
    torch.testing.assert_close(stepped, whole, rtol=1e-12, atol=1e-12)


def test_torch_peer_rejects_other_architectures(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
    with pytest.raises(ValueError, match="architecture 'BertModel' is neither"):
        torch_peer.load(tmp_path, torch.float32)


def test_relative_difference_and_summary():
    assert bench_llamacpp.relative_difference([1.0, -2.5], [1.5, -2.0]) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="3 logits against 2"):
        bench_llamacpp.relative_difference([1, 2, 3], [1, 2])
    raw = {"prefill": [{"tokens": 128, "seconds": [2.0, 1.0, 4.0]}],
           "decode": [{"context": 512, "steps": 32, "seconds": [0.64, 0.32]}], "peak_rss_bytes": 3 * 2**20}
    s = bench_llamacpp.summarize(raw)
    assert s["prefill_128_tokens_per_second"] == 64 and s["prefill_128_tokens_per_second_best"] == 128
    assert s["decode_512_ms_per_token"] == pytest.approx(15) and s["decode_512_ms_per_token_best"] == 10
    assert s["peak_rss_mib"] == 3


def installed_gguf_py():
    cache = Path(os.environ.get("ATTN_PEERS_CACHE", Path.home() / ".cache" / "attn-peers"))
    found = sorted(cache.glob("llama.cpp-*/gguf-py"))
    return found[0] if found else None


@pytest.mark.skipif(installed_gguf_py() is None, reason="llama.cpp's tree is not installed (llamacpp_setup.py)")
@pytest.mark.parametrize("dtype", ["F32", "BF16"])
def test_gguf_holds_llama_cpp_layout(tmp_path, dtype):
    gguf_py = installed_gguf_py()
    gguf = hf_to_gguf.load_gguf(gguf_py)
    gpt2 = hf_random.write_checkpoint("gpt2-small", dtype, tmp_path / "gpt2", overrides=TINY_GPT2)
    llama = hf_random.write_checkpoint("smollm2-135m", dtype, tmp_path / "llama", overrides=TINY_LLAMA)
    hf_to_gguf.convert(gpt2, tmp_path / "gpt2.gguf", dtype, gguf_py)
    hf_to_gguf.convert(llama, tmp_path / "llama.gguf", dtype, gguf_py)

    def read(path):
        reader = gguf.GGUFReader(path)
        tensors = {}
        for t in reader.tensors:
            rows = [int(n) for n in reversed(t.shape)]
            data = np.asarray(t.data)
            values = safetensors_io.bfloat16_bits_to_float32(data.view(np.uint16)) if t.tensor_type.name == "BF16" \
                else data.astype(np.float32)
            tensors[t.name] = (t.tensor_type.name, values.reshape(rows))
        return reader, tensors

    source, _ = safetensors_io.read_float32(gpt2 / "model.safetensors")
    reader, tensors = read(tmp_path / "gpt2.gguf")
    assert reader.fields["general.architecture"].contents() == "gpt2"
    assert reader.fields["tokenizer.ggml.model"].contents() == "none"
    assert reader.fields["gpt2.vocab_size"].contents() == 11
    kind, qkv = tensors["blk.1.attn_qkv.weight"]
    assert kind == dtype and qkv.shape == (24, 8)
    np.testing.assert_array_equal(qkv, source["h.1.attn.c_attn.weight"].T)
    assert tensors["position_embd.weight"][0] == "F32" and tensors["blk.0.attn_norm.bias"][0] == "F32"

    source, _ = safetensors_io.read_float32(llama / "model.safetensors")
    reader, tensors = read(tmp_path / "llama.gguf")
    assert reader.fields["llama.attention.head_count_kv"].contents() == 1
    assert reader.fields["llama.rope.freq_base"].contents() == pytest.approx(100.0)
    q = source["model.layers.0.self_attn.q_proj.weight"]
    expected = np.concatenate([np.stack([q[h * 4 + i // 2 + (i % 2) * 2] for i in range(4)]) for h in range(2)])
    np.testing.assert_array_equal(tensors["blk.0.attn_q.weight"][1], expected)
    np.testing.assert_array_equal(tensors["blk.0.attn_v.weight"][1], source["model.layers.0.self_attn.v_proj.weight"])


def test_converter_rejects_other_architectures(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    safetensors_io.write_streamed(tmp_path / "model.safetensors", {"w": (1,)}, "F32", lambda n, s: np.zeros(s))
    gguf_py = installed_gguf_py()
    if gguf_py is None:
        pytest.skip("llama.cpp's tree is not installed (llamacpp_setup.py)")
    with pytest.raises(ValueError, match="architecture 'BertModel' is neither"):
        hf_to_gguf.convert(tmp_path, tmp_path / "x.gguf", "F32", gguf_py)
    with pytest.raises(ValueError, match="--type 'Q4'"):
        hf_to_gguf.convert(tmp_path, tmp_path / "x.gguf", "Q4", gguf_py)


def test_markdown_rows_show_medians_and_best():
    raw = {"prefill": [{"tokens": 128, "seconds": [2.0, 1.0, 4.0]}, {"tokens": 512, "seconds": [4.0]}],
           "decode": [{"context": 128, "steps": 32, "seconds": [0.32]}, {"context": 512, "steps": 32,
                                                                       "seconds": [0.64, 0.96, 1.28]}],
           "peak_rss_bytes": 100 * 2**20}
    entry = {"model": "gpt2-small", "dtype": "F32", "date": "d",
             "agreement": {"reference": "r", "max_relative_difference": {"llama.cpp": 3e-4}},
             "rows": [{"system": "llama.cpp", "threads": 2, "load_average": 1.25,
                       "summary": bench_llamacpp.summarize(raw)}]}
    cpu = {"model_name": "cpu", "cores": 2, "vector_extensions": ["avx2"]}
    llama = type("L", (), {"release": "v0", "commit": "0123456789abcdef"})
    args = type("A", (), {"steps": 32, "reps": 3, "omp_wait_policy": "PASSIVE", "isa": "native"})
    text = bench_llamacpp.markdown([entry], cpu, llama, args)
    assert "| llama.cpp | 2 | 64 (128) | 128 (128) | 10.00 (10.00) | 30.00 (20.00) | 100 | 1.2 |" in text
    assert "llama.cpp 3.0e-04" in text and "## gpt2-small F32" in text


@pytest.mark.skipif(installed_gguf_py() is None, reason="llama.cpp's tree is not installed (llamacpp_setup.py)")
@pytest.mark.parametrize("dtype", ["F32", "BF16"])
def test_gguf_of_the_new_shapes(tmp_path, dtype):
    gguf_py = installed_gguf_py()
    gguf = hf_to_gguf.load_gguf(gguf_py)
    neox = hf_random.write_checkpoint("pythia-160m", dtype, tmp_path / "neox", overrides=TINY_NEOX)
    qwen3 = hf_random.write_checkpoint("qwen3-0.6b", dtype, tmp_path / "qwen3", overrides=TINY_QWEN3)
    written = hf_to_gguf.convert(neox, tmp_path / "neox.gguf", dtype, gguf_py)
    reader = gguf.GGUFReader(tmp_path / "neox.gguf")
    assert reader.fields["general.architecture"].contents() == "gptneox"
    assert reader.fields["gptneox.rope.dimension_count"].contents() == 8  # rotary_pct 0.5 of 16
    assert reader.fields["gptneox.rope.freq_base"].contents() == pytest.approx(100.0)
    assert reader.fields["gptneox.use_parallel_residual"].contents() is True
    assert written["blk.1.attn_qkv.weight"] == (dtype, (96, 32)) and written["output.weight"] == (dtype, (13, 32))
    assert written["blk.0.attn_qkv.bias"][0] == "F32" and written["output_norm.bias"][0] == "F32"
    qkv = {t.name: np.asarray(t.data) for t in reader.tensors}["blk.0.attn_qkv.bias"]
    source = safetensors_io.read_float32(neox / "model.safetensors")[0]["gpt_neox.layers.0.attention.query_key_value.bias"]
    # per head [q_h; k_h; v_h] -> [q_0; q_1; k_0; k_1; v_0; v_1]
    np.testing.assert_array_equal(qkv[16:32], source[16 * 3:16 * 4])  # q of head 1
    np.testing.assert_array_equal(qkv[32:48], source[16:32])  # k of head 0

    written = hf_to_gguf.convert(qwen3, tmp_path / "qwen3.gguf", dtype, gguf_py)
    reader = gguf.GGUFReader(tmp_path / "qwen3.gguf")
    assert reader.fields["general.architecture"].contents() == "qwen3"
    assert reader.fields["qwen3.attention.key_length"].contents() == 8
    assert reader.fields["qwen3.attention.head_count_kv"].contents() == 2
    assert reader.fields["qwen3.rope.freq_base"].contents() == pytest.approx(1000.0)
    assert written["blk.1.attn_q.weight"] == (dtype, (32, 12)) and written["blk.1.attn_q_norm.weight"] == ("F32", (8,))
    assert "output.weight" not in written  # tied: llama.cpp reads token_embd


@pytest.mark.skipif(validate_llamacpp.installed() is None,
                    reason="the pinned llama.cpp is not installed (tools/benchmarks/peers/llamacpp_setup.py)")
@pytest.mark.parametrize("shape", list(TINY))
@pytest.mark.parametrize("dtype", ["F32", "BF16"])
def test_bench_agreement_check_passes_on_every_shape(tmp_path, shape, dtype):
    """bench_llamacpp.py's agreement step (llama.cpp twice, PyTorch in float32 and float64, against
    hf_reference.py) on each shape's checkpoint, shrunk, as the harness writes and converts it."""
    llama = validate_llamacpp.installed()
    architecture, config = hf_checkpoints.SHAPES[shape]
    hf_dir = tmp_path / shape
    hf_checkpoints.write_checkpoint(hf_dir, architecture, {**config, **TINY[shape]}, dtype)
    gguf = tmp_path / f"{shape}.gguf"
    hf_to_gguf.convert(hf_dir, gguf, dtype, llama.source / "gguf-py", mistral_swa=True)  # as prepare() does
    result = bench_llamacpp.agreement(hf_dir, gguf, dtype, llama, None, ["converted"])
    assert result["reference"] == "tools/references/hf_reference.py"
    assert set(result["max_relative_difference"]) == {"pytorch-eager float32", "pytorch-eager float64", "llama.cpp",
                                                      "llama.cpp defaults"}
    assert result["max_relative_difference"]["pytorch-eager float64"] < 1e-12


HF_TEST_DATA = TOOLS.parent / "tests" / "data" / "hf"
WINDOWED = ["gemma3_pattern", "gemma3_layer_types", "gemma2_softcap_window", "mistral_window"]


def window_prompt(folder):
    """A prompt as long as the checkpoint's context (24 positions): several windows long."""
    config = json.loads((folder / "config.json").read_text())
    return [(7 * i + 3) % config["vocab_size"] for i in range(config["max_position_embeddings"])]


@pytest.mark.parametrize("name", WINDOWED)
def test_torch_peer_gemma_and_mistral_match_the_float64_reference(name):
    """Gemma 3 (both layouts), Gemma 2 and Mistral in the PyTorch peer against hf_reference.py, on the
    tiny checkpoints whose windows (4 to 7) are far shorter than the 24-token prompt."""
    folder = HF_TEST_DATA / name
    tokens = window_prompt(folder)
    got = torch_peer.last_logits(torch_peer.load(folder, torch.float64), tokens, torch.float64).numpy()
    expected = np.asarray(hf_reference.run(hf_reference.load(folder), tokens)[0][-1])
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())
    # the window matters: the reference without it is far away
    unwindowed = np.asarray(hf_reference.run(hf_reference.load(folder, ["no_window"]), tokens)[0][-1])
    assert np.abs(unwindowed - expected).max() > 1e-3 * np.abs(expected).max()


@pytest.mark.parametrize("name", WINDOWED)
def test_torch_peer_windowed_decoding_with_the_cache_matches_one_pass(name):
    """Decoding step by step past the window (the last w keys sliced off the cache) gives the one-pass
    logits at every step."""
    folder = HF_TEST_DATA / name
    model, tokens = torch_peer.load(folder, torch.float64), window_prompt(folder)
    cache = torch_peer.new_cache(model, len(tokens), torch.float64)
    with torch.inference_mode():
        model.forward(torch.tensor(tokens[:2]), cache)
        for end in range(3, len(tokens) + 1):
            stepped = model.forward(torch.tensor(tokens[end - 1:end]), cache)[0]
            torch.testing.assert_close(stepped, torch_peer.last_logits(model, tokens[:end], torch.float64),
                                       rtol=1e-12, atol=1e-12)


def test_markdown_columns_follow_the_lengths_and_show_the_window_saving():
    def raw(prefill_seconds, decode_seconds):
        return {"prefill": [{"tokens": 512, "seconds": [prefill_seconds[0]]},
                            {"tokens": 4096, "seconds": [prefill_seconds[1]]}],
                "decode": [{"context": 4096, "steps": 16, "seconds": [decode_seconds]}], "peak_rss_bytes": 2**20}

    rows = [{"system": "attn", "threads": 1, "load_average": 2.0, "summary": bench_llamacpp.summarize(raw((1, 4), 0.32))},
            {"system": "attn, no window", "threads": 1, "load_average": 2.0,
             "summary": bench_llamacpp.summarize(raw((1, 6), 0.48))}]
    entry = {"model": "mistral-small", "dtype": "F32", "date": "d", "prefill": [512, 4096], "decode": [4096],
             "agreement": {"reference": "r", "max_relative_difference": {"attn": 1e-6}}, "rows": rows}
    cpu = {"model_name": "cpu", "cores": 2, "vector_extensions": ["avx2"]}
    llama = type("L", (), {"release": "v0", "commit": "0123456789abcdef"})
    args = type("A", (), {"steps": 16, "reps": 1, "omp_wait_policy": "PASSIVE", "isa": "native"})
    text = bench_llamacpp.markdown([entry], cpu, llama, args)
    assert "| system | threads | prefill 512 tok/s | prefill 4096 tok/s | decode @4096 ms/tok | peak RSS MiB | load |" \
        in text
    assert "| attn | 1 | 512 (512) | 1024 (1024) | 20.00 (20.00) | 1 | 2.0 |" in text
    assert "| threads | prefill 512 | prefill 4096 | decode @4096 |" in text
    assert "| 1 | 1.00× | 1.50× | 1.50× |" in text


def test_unwindowed_copy_keeps_the_weights_and_lifts_the_window(tmp_path):
    for shape, tiny in (("mistral-small", TINY_MISTRAL), ("gemma3-270m", TINY_GEMMA3), ("qwen3-0.6b", TINY_QWEN3)):
        architecture, config = hf_checkpoints.SHAPES[shape]
        folder = tmp_path / shape
        hf_checkpoints.write_checkpoint(folder, architecture, {**config, **tiny}, "F32")
        copy = bench_llamacpp.unwindowed_copy(folder, 20)
        if shape == "qwen3-0.6b":
            assert copy is None
            continue
        lifted = json.loads((copy / "config.json").read_text())
        original = json.loads((folder / "config.json").read_text())
        changed = {k for k in original if lifted[k] != original[k]}
        assert changed == {"sliding_window"} and set(lifted) == set(original)
        assert lifted["sliding_window"] == (None if shape == "mistral-small" else 32)
        assert (copy / "model.safetensors").resolve() == (folder / "model.safetensors").resolve()
        # the same weights, full attention: the reference without its window gives the copy's logits
        tokens = list(range(1, 17))
        expected = hf_reference.run(hf_reference.load(folder, ["no_window"]), tokens)[0][-1]
        np.testing.assert_allclose(hf_reference.run(hf_reference.load(copy), tokens)[0][-1], expected, rtol=1e-12)
        with pytest.raises(ValueError, match="below the 40 positions") if shape == "gemma3-270m" else \
                contextlib.nullcontext():
            bench_llamacpp.unwindowed_copy(folder, 40)


def test_kept_rows_are_skipped_where_they_would_not_fit(tmp_path):
    for shape, expected_4096 in (("gemma3-270m", [0]), ("mistral-small", [0])):
        folder = tmp_path / shape
        architecture, config = hf_checkpoints.SHAPES[shape]
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(hf_checkpoints.make_config(architecture, config, "F32")))
        args = type("A", (), {"attn_keep_rows": "auto", "prefill": "512,4096"})
        assert bench_llamacpp.keep_rows_choices(folder, args) == expected_4096
        args.prefill = "128,512"
        assert bench_llamacpp.keep_rows_choices(folder, args) == [0, 1]
        args.attn_keep_rows = "1"
        assert bench_llamacpp.keep_rows_choices(folder, args) == [1]


@pytest.mark.skipif(validate_llamacpp.installed() is None,
                    reason="the pinned llama.cpp is not installed (tools/benchmarks/peers/llamacpp_setup.py)")
@pytest.mark.parametrize("shape", ["gemma3-270m", "mistral-small"])
def test_long_agreement_sees_the_windows(tmp_path, shape):
    """The long-prompt check past the windows: llama.cpp (Mistral as granite_swa) within tolerance of the
    PyTorch peer, and a system without the windows (here the PyTorch peer itself on the unwindowed copy,
    standing in for attn) far off, so that the check would catch a system ignoring them."""
    llama = validate_llamacpp.installed()
    architecture, config = hf_checkpoints.SHAPES[shape]
    hf_dir = tmp_path / shape
    hf_checkpoints.write_checkpoint(hf_dir, architecture, {**config, **TINY[shape]}, "F32")
    gguf = tmp_path / f"{shape}.gguf"
    hf_to_gguf.convert(hf_dir, gguf, "F32", llama.source / "gguf-py", mistral_swa=True)
    stand_in = f"{sys.executable} {TOOLS / 'benchmarks' / 'peers' / 'torch_peer.py'} {{hf_dir}} logits --tokens {{tokens}}"
    no_window = bench_llamacpp.unwindowed_copy(hf_dir, 24)
    result = bench_llamacpp.long_agreement(hf_dir, gguf, "F32", llama, stand_in, ["converted"], no_window, 24)
    differences = result["max_relative_difference"]
    assert set(differences) == {"llama.cpp", "llama.cpp defaults", "attn", "attn, no window"}
    assert differences["attn"] == 0 and differences["attn, no window"] > 2e-2


def test_pytorch_up_to_drops_its_longest_lengths_only(tmp_path):
    args = type("A", (), {"prefill": "512,4096", "decode": "4096", "steps": 16, "reps": 1, "pytorch_up_to": 0,
                          "attn_bench": None, "omp_wait_policy": "PASSIVE", "isa": "native"})
    llama = type("L", (), {"harness": "llama_peer", "backends": "b"})
    commands = dict(bench_llamacpp.bench_commands(tmp_path, "m.gguf", 1, args, llama))
    assert commands["pytorch-eager"][-8:] == ["--prefill", "512,4096", "--decode", "4096", "--steps", "16", "--reps", "1"]
    args.pytorch_up_to = 512
    commands = dict(bench_llamacpp.bench_commands(tmp_path, "m.gguf", 1, args, llama))
    assert commands["pytorch-eager"][-8:] == ["--prefill", "512", "--decode", "", "--steps", "16", "--reps", "1"]
    assert commands["llama.cpp"][-8:-4] == ["--prefill", "512,4096", "--decode", "4096"]
    args.decode = "512,4096"
    commands = dict(bench_llamacpp.bench_commands(tmp_path, "m.gguf", 1, args, llama))
    assert commands["pytorch-eager"][-8:] == ["--prefill", "512", "--decode", "512", "--steps", "16", "--reps", "1"]
    summary = bench_llamacpp.summarize({"prefill": [{"tokens": 512, "seconds": [1.0]}],
                                        "decode": [{"context": 512, "steps": 16, "seconds": [0.16]}],
                                        "peak_rss_bytes": 2**20})
    entry = {"model": "m", "dtype": "F32", "prefill": [512, 4096], "decode": [512, 4096],
             "agreement": {"max_relative_difference": {}},
             "rows": [{"system": "pytorch-eager", "threads": 1, "load_average": 1.0, "summary": summary}]}
    text = bench_llamacpp.markdown([entry], {"model_name": "c", "cores": 2, "vector_extensions": []},
                                   type("L", (), {"release": "v", "commit": "0" * 12}), args)
    assert "| pytorch-eager | 1 | 512 (512) | not run | 10.00 (10.00) | not run | 1 | 1.0 |" in text
    assert "held to" not in text
    args.isa = "avx2"  # --isa avx2: the table says what every system was held to
    text = bench_llamacpp.markdown([entry], {"model_name": "c", "cores": 2, "vector_extensions": []},
                                   type("L", (), {"release": "v", "commit": "0" * 12}), args)
    assert "Every system held to AVX2 on this CPU (--isa avx2)" in text and "libggml-cpu-haswell.so alone" in text


def test_quantized_models_parse_and_run_on_the_quantized_file(tmp_path):
    assert bench_llamacpp.parse_model("gpt2-small:Q4_K_M") == ("gpt2-small", "Q4_K_M")
    assert bench_llamacpp.parse_model("smollm2-135m:BF16") == ("smollm2-135m", "BF16")
    for bad in ("gpt2-small", "gpt2-small:Q3_K_S", ":Q8_0"):
        with pytest.raises(SystemExit, match="expected shape:dtype"):
            bench_llamacpp.parse_model(bad)
    args = type("A", (), {"prefill": "128", "decode": "128", "steps": 16, "reps": 1, "pytorch_up_to": 0,
                          "attn_keep_rows": "0", "attn_weights": "stored_quantized,converted",
                          "attn_bench": "attn {model} peer --weights {weights} --hf {hf_dir}"})
    llama = type("L", (), {"harness": "llama_peer", "backends": "b"})
    commands = dict(bench_llamacpp.bench_commands(tmp_path, "m.Q8_0.gguf", 1, args, llama, quantized=True))
    assert set(commands) == {"llama.cpp", "llama.cpp defaults", "attn, kept quantized", "attn, dequantized at load"}
    assert commands["attn, kept quantized"] == ["attn", "m.Q8_0.gguf", "peer", "--weights", "stored_quantized",
                                                "--hf", str(tmp_path)]
    assert commands["attn, dequantized at load"][1] == "m.Q8_0.gguf"
    assert commands["llama.cpp"][4] == "m.Q8_0.gguf"
    args.attn_weights = "converted"  # an F32 checkpoint: attn loads the directory, PyTorch runs
    commands = dict(bench_llamacpp.bench_commands(tmp_path, "m.gguf", 1, args, llama))
    assert commands["attn"][1] == str(tmp_path) and "pytorch-eager" in commands


def test_markdown_of_a_quantized_file_names_its_types_the_skipped_peer_and_the_instruction_sets():
    raw = {"prefill": [{"tokens": 128, "seconds": [1.0]}], "decode": [{"context": 128, "steps": 16,
                                                                       "seconds": [0.16]}], "peak_rss_bytes": 2**20}
    rows = [{"system": "llama.cpp", "threads": 1, "load_average": 1.0, "summary": bench_llamacpp.summarize(raw),
             "raw": {**raw, "cpu_backend": "AVX2 FMA"}},
            {"system": "attn, kept quantized", "threads": 1, "load_average": 1.0,
             "summary": bench_llamacpp.summarize(raw), "raw": {**raw, "isa": "AVX512, FMA"}}]
    entry = {"model": "gpt2-small", "dtype": "Q4_K_M", "prefill": [128], "decode": [128], "file": "g.Q4_K_M.gguf",
             "tensor_types": {"F32": 98, "Q4_K": 40}, "skipped": {"PyTorch eager": "not run: because"},
             "agreement": {"reference": "r", "max_relative_difference": {"attn, kept quantized": 1e-6}},
             "rows": rows}
    args = type("A", (), {"steps": 16, "reps": 1, "omp_wait_policy": "PASSIVE", "isa": "native"})
    text = bench_llamacpp.markdown([entry], {"model_name": "c", "cores": 2, "vector_extensions": []},
                                   type("L", (), {"release": "v", "commit": "0" * 12}), args)
    assert "## gpt2-small Q4_K_M" in text and "tensors: 98 F32, 40 Q4_K." in text
    assert "PyTorch eager: not run: because." in text
    assert "Instruction sets: llama.cpp: AVX2 FMA; attn, kept quantized: AVX512, FMA." in text


@pytest.mark.skipif(validate_llamacpp.installed() is None,
                    reason="the pinned llama.cpp is not installed (tools/benchmarks/peers/llamacpp_setup.py)")
@pytest.mark.parametrize("shape, overrides", [
    ("gpt2-small", {"n_embd": 64, "n_layer": 2, "n_head": 2, "n_positions": 32, "n_ctx": 32, "vocab_size": 40}),
    ("smollm2-135m", {"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 2,
                      "num_key_value_heads": 1, "head_dim": 32, "vocab_size": 40, "max_position_embeddings": 32})])
def test_quantized_agreement_against_the_files_dequantized_weights(tmp_path, shape, overrides):
    """A quantized row's check: the F32 GGUF quantized by llama_model_quantize (quantized_file), the
    reference the float64 forward of its dequantized weights (gguf_models.dequantized_checkpoint, which
    gives an F32 file's weights back exactly, GPT-2's transposed Conv1D weights included); attn stood in
    for by hf_reference on those weights, so it agrees to float64 rounding."""
    from references import gguf_models

    llama = validate_llamacpp.installed()
    architecture, config = hf_checkpoints.SHAPES[shape]
    hf_dir = tmp_path / shape
    hf_checkpoints.write_checkpoint(hf_dir, architecture, {**config, **overrides}, "F32", seed=3)
    f32 = tmp_path / f"{shape}.gguf"
    hf_to_gguf.convert(hf_dir, f32, "F32", llama.source / "gguf-py")
    gguf = hf_to_gguf.load_gguf(llama.source / "gguf-py")
    gguf_models.dequantized_checkpoint(gguf, f32, hf_dir, tmp_path / "back")
    original = safetensors_io.read_float32(hf_dir / "model.safetensors")[0]
    back = safetensors_io.read_float32(tmp_path / "back" / "model.safetensors")[0]
    assert set(back) == set(original)
    for name, values in original.items():
        np.testing.assert_array_equal(back[name], values, err_msg=name)
    quantized = bench_llamacpp.quantized_file(f32, "Q8_0", llama)
    assert quantized.name == f"{shape}.Q8_0.gguf"
    assert "Q8_0" in bench_llamacpp.tensor_types(quantized, llama)
    result = bench_llamacpp.quantized_agreement(hf_dir, quantized, llama, None, [])
    assert set(result["max_relative_difference"]) == {"llama.cpp", "llama.cpp defaults"}
    assert result["reference"] == "tools/references/hf_reference.py on the file's dequantized weights"
