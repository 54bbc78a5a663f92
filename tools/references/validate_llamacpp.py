#!/usr/bin/python3
"""The float64 reference (hf_reference.py) against llama.cpp, on every tiny checkpoint of tests/data/hf.

    /usr/bin/python3 tools/references/validate_llamacpp.py --out docs/bench/validation/reference_vs_llamacpp.md

For each checkpoint: convert to an F32 GGUF (tools/benchmarks/peers/hf_to_gguf.py, with the pinned
llama.cpp tree's gguf-py), run the llama.cpp peer (tools/benchmarks/peers/llama_peer.cpp: one
thread, flash attention off, f32 KV cache) on each golden prompt and compare its last-position
logits with the golden's: distance = max |Δ| / max |reference logit|, the largest over the prompts.

Teeth: the same distance for deliberately wrong readings of the reference (hf_reference.READINGS:
adjacent rotary pairs, no 1/√d, rope scaling ignored, q/k norms skipped, whole-head rotary,
sequential for parallel residual, norms before instead of after, a window one wider or none, Gemma's
soft caps, (1 + weight), √C, query_pre_attn_scalar and local θ ignored, ...), and its ratio to the
correct reference's; each must be ≥ 100.

Gemma runs as an equivalent model (query_pre_attn_scalar and the dtype-rounded √C folded into the
weights: llama.cpp's graphs have neither), Mistral through arch granite_swa (the pinned converter's
arch llama has no window; that file's distance is reported too).

What llama.cpp cannot express is said, not hidden: GPT-2's scale_attn_weights false and
scale_attn_by_inverse_layer_idx are not in its gpt2 graph, so those checkpoints run as an
equivalent model (the query weights and bias multiplied by √d, or divided by layer + 1, which
its 1/√d restores); its GELU is the tanh form read from an F16 table (ggml_vec_gelu_f32), so for
"gelu" (erf) checkpoints the distance is also given for the reference with the tanh form.

Needs the pinned llama.cpp (tools/benchmarks/peers/llamacpp_setup.py installs it); nothing is built here.
"""

import argparse
import datetime
import json
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages
from benchmarks.peers import hf_to_gguf, llamacpp_setup  # noqa: E402
from common import safetensors_io  # noqa: E402
from references import hf_reference  # noqa: E402

DATA = hf_reference.TEST_DATA
RATIO = 100  # a wrong reading must be this many times further from llama.cpp than the right one

# checkpoint -> the wrong readings that apply to it (GPT-2's "no_scale" is its config's scaling toggled)
READINGS = {
    "gpt2_prefixed_f32": ["no_scale"],
    "gpt2_f16": ["no_scale"],
    "gpt2_unscaled_f32": ["no_scale"],
    "llama_gqa_bf16_shards": ["adjacent_pairs", "no_scale"],
    "llama_head_dim_untied": ["adjacent_pairs", "no_scale"],
    "qwen2_bias": ["adjacent_pairs", "no_scale"],
    "gpt_neox_parallel": ["adjacent_pairs", "no_scale", "full_rotary", "swap_residual", "qkv_blocked"],
    "gpt_neox_sequential": ["adjacent_pairs", "no_scale", "full_rotary", "swap_residual", "qkv_blocked"],
    "llama3_rope_scaling": ["adjacent_pairs", "no_scale", "no_rope_scaling"],
    "llama_linear_rope_parameters": ["adjacent_pairs", "no_scale", "no_rope_scaling"],
    "llama_linear_rope_scaling_type": ["adjacent_pairs", "no_scale", "no_rope_scaling"],
    "qwen3_qk_norm": ["adjacent_pairs", "no_scale", "no_qk_norm"],
    "olmo2_post_norm": ["adjacent_pairs", "no_scale", "no_qk_norm", "norm_before"],
    "phi3_fused_partial": ["adjacent_pairs", "no_scale", "full_rotary", "gate_up_swapped"],
    "gemma2_softcap_window": ["adjacent_pairs", "head_dim_scale", "no_attn_softcap", "no_final_softcap",
                              "window_wider", "no_window", "norm_no_offset", "embed_unscaled"],
    "gemma3_pattern": ["adjacent_pairs", "head_dim_scale", "no_qk_norm", "global_theta", "window_wider",
                       "no_window", "norm_no_offset", "embed_unscaled"],
    "gemma3_layer_types": ["adjacent_pairs", "head_dim_scale", "no_qk_norm", "global_theta", "window_wider",
                           "no_window", "norm_no_offset", "embed_unscaled"],
    "mistral_window": ["adjacent_pairs", "no_scale", "window_wider", "no_window"],
}


def installed(cache=llamacpp_setup.DEFAULT_CACHE):
    """The installed llama.cpp peer (source tree, prebuilt libraries, harness), or None: found, never
    installed or built here."""
    cache = Path(cache).expanduser()
    source = cache / f"llama.cpp-{llamacpp_setup.LLAMA_CPP_COMMIT[:12]}"
    backends = cache / "npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
    harness = llamacpp_setup.harness_path(cache)
    if not ((source / "gguf-py").is_dir() and harness.is_file()
            and all((backends / name).is_file() for name in llamacpp_setup.LIBRARIES)):
        return None
    return llamacpp_setup.LlamaCpp(source, backends, harness, llamacpp_setup.LLAMA_CPP_RELEASE,
                                   llamacpp_setup.LLAMA_CPP_COMMIT)


def distance(logits, reference):
    return float(np.abs(np.asarray(logits) - reference).max() / np.abs(reference).max())


def llama_logits(llama, gguf_path, ids):
    command = [str(llama.harness), "--backends", str(llama.backends), "--model", str(gguf_path), "--threads", "1",
               "--kv-type", "f32", "--flash-attn", "off", "logits", "--tokens", ",".join(map(str, ids))]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"llama_peer failed on {gguf_path}: {done.stderr.strip()[-400:]}")
    return np.asarray(json.loads(done.stdout)["logits"], dtype=np.float64)


def gpt2_as_llama_cpp_runs(directory, out):
    """A copy of a GPT-2 checkpoint llama.cpp's gpt2 graph computes the same function of: the scalings
    it lacks (scale_attn_weights false, scale_attn_by_inverse_layer_idx) folded into the query
    weights and bias. Returns (directory, what was folded)."""
    config = json.loads((directory / "config.json").read_text())
    heads, width = config["n_head"], config["n_embd"]
    unscaled = not config.get("scale_attn_weights", True)
    by_layer = config.get("scale_attn_by_inverse_layer_idx", False)
    if not unscaled and not by_layer:
        return directory, None
    tensors, _ = safetensors_io.read_float32(directory / "model.safetensors")
    prefix = "transformer." if any(n.startswith("transformer.") for n in tensors) else ""
    for layer in range(config["n_layer"]):
        factor = (math.sqrt(width // heads) if unscaled else 1.0) / ((layer + 1) if by_layer else 1.0)
        for name in (f"{prefix}h.{layer}.attn.c_attn.weight", f"{prefix}h.{layer}.attn.c_attn.bias"):
            values = tensors[name].astype(np.float64)
            values[..., :width] *= factor  # Conv1D columns [q | k | v]
            tensors[name] = values.astype(np.float32)
    out.mkdir(parents=True, exist_ok=True)
    safetensors_io.write_safetensors(out / "model.safetensors", {n: ("F32", v) for n, v in tensors.items()})
    config.update(scale_attn_weights=True, scale_attn_by_inverse_layer_idx=False)
    (out / "config.json").write_text(json.dumps(config))
    folded = " and ".join(text for flag, text in ((unscaled, "√d"), (by_layer, "1/(layer + 1)")) if flag)
    return out, f"query weights and bias × {folded}"


def gemma_as_llama_cpp_runs(directory, out):
    """A copy of a Gemma checkpoint llama.cpp's gemma2 / gemma3 graph computes the same function of,
    written in F32. Returns (directory, what was folded).

    - Those graphs scale q by 1/√head_dim: f = √(head_dim / query_pre_attn_scalar) is folded into
      the query (Gemma 2: q_proj rows × f; Gemma 3, whose q_norm follows q_proj: 1 + q_norm.weight
      × f, i.e. weight' = (1 + weight)·f - 1).
    - They scale the embedding by sqrtf(hidden_size), where transformers rounds √hidden_size to the
      model's dtype (BF16 here): r = rounded / sqrtf is folded into the tied embedding (× r) and,
      since the same matrix unembeds, undone by the final norm (1 + model.norm.weight) × 1/r (the
      final RMSNorm is linear in its weight)."""
    config = json.loads((directory / "config.json").read_text())
    head_dim, scalar = config["head_dim"], config["query_pre_attn_scalar"]
    rounded = hf_reference.load(directory).normalizer
    ratio = rounded / float(np.float32(math.sqrt(config["hidden_size"])))
    if scalar == head_dim and ratio == 1:
        return directory, None
    factor = math.sqrt(head_dim / scalar)
    tensors = {}
    for path in sorted(directory.glob("model*.safetensors")):
        tensors.update(safetensors_io.read_float64(path)[0])
    for layer in range(config["num_hidden_layers"]):
        a = f"model.layers.{layer}.self_attn."
        if config["model_type"] == "gemma3_text":
            tensors[a + "q_norm.weight"] = (1 + tensors[a + "q_norm.weight"]) * factor - 1
        else:
            tensors[a + "q_proj.weight"] = tensors[a + "q_proj.weight"] * factor
    tensors["model.embed_tokens.weight"] = tensors["model.embed_tokens.weight"] * ratio
    tensors["model.norm.weight"] = (1 + tensors["model.norm.weight"]) / ratio - 1
    out.mkdir(parents=True, exist_ok=True)
    safetensors_io.write_safetensors(out / "model.safetensors",
                                     {n: ("F32", v.astype(np.float32)) for n, v in tensors.items()})
    dtype = config.get("torch_dtype", "float32")
    config.update(query_pre_attn_scalar=head_dim, torch_dtype="float32")
    (out / "config.json").write_text(json.dumps(config))
    where = "q_norm: 1 + weight" if config["model_type"] == "gemma3_text" else "q_proj rows"
    folded = [f"{where} × √(head_dim / query_pre_attn_scalar) = √({head_dim}/{scalar})"] if scalar != head_dim else []
    if ratio != 1:
        folded.append(f"the embedding × {rounded:g} / sqrtf({config['hidden_size']}) and 1 + model.norm.weight "
                      f"divided by it, for transformers' {dtype}-rounded normalizer {rounded:g}")
    return out, "; ".join(folded)


def reference_logits(directory, ids, readings=(), config_edit=None, scratch=None):
    """Last-position logits of the reference, possibly in a wrong reading (GPT-2: a config edit)."""
    if config_edit:
        copy = Path(scratch) / f"{directory.name}-edited"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(directory, copy)
        config = json.loads((copy / "config.json").read_text())
        config_edit(config)
        (copy / "config.json").write_text(json.dumps(config))
        directory = copy
    logits, _, _ = hf_reference.run(hf_reference.load(directory, readings), ids)
    return logits[-1]


def gpt2_toggle_scale(config):
    config["scale_attn_weights"] = not config.get("scale_attn_weights", True)


def gpt2_tanh_gelu(config):
    config["activation_function"] = "gelu_new"


def validate(llama, names=None, scratch=None):
    """One row per checkpoint: {"name", "architecture", "agreement", "llama_gelu" (or None), "note",
    "readings": {reading: (distance, ratio)}}."""
    scratch = Path(scratch or tempfile.mkdtemp(prefix="validate-llamacpp-"))
    rows = []
    for name in names or READINGS:
        directory = DATA / name
        config = json.loads((directory / "config.json").read_text())
        golden = json.loads((directory / "golden.json").read_text())
        tensors = safetensors_io.read_float64(directory / "golden.safetensors")[0]
        source, note, as_converted = directory, None, None
        if config["model_type"] == "gpt2":
            source, note = gpt2_as_llama_cpp_runs(directory, scratch / f"{name}-equivalent")
        if config["model_type"] in ("gemma2", "gemma3_text"):
            source, note = gemma_as_llama_cpp_runs(directory, scratch / f"{name}-equivalent")
        gguf_path = scratch / f"{name}.gguf"
        mistral = config["model_type"] == "mistral"
        hf_to_gguf.convert(source, gguf_path, "F32", llama.source / "gguf-py", mistral_swa=mistral)
        prompts = [(p["ids"], tensors[f"{p['key']}.logits"][-1]) for p in golden["prompts"]]
        ours = [llama_logits(llama, gguf_path, ids) for ids, _ in prompts]
        agreement = max(distance(got, want) for got, (_, want) in zip(ours, prompts))
        if mistral:  # as the pinned converter writes it: arch llama, no window
            plain = scratch / f"{name}-llama.gguf"
            hf_to_gguf.convert(source, plain, "F32", llama.source / "gguf-py")
            theirs = [llama_logits(llama, plain, ids) for ids, _ in prompts]
            as_converted = (max(distance(got, want) for got, (_, want) in zip(theirs, prompts)),
                            max(distance(got, reference_logits(directory, ids, ("no_window",)))
                                for got, (ids, _) in zip(theirs, prompts)))
        gelu = None
        if config.get("hidden_act", config.get("activation_function")) == "gelu":
            edit = gpt2_tanh_gelu if config["model_type"] == "gpt2" else None
            readings = () if edit else ("gelu_tanh",)
            gelu = max(distance(got, reference_logits(directory, ids, readings, edit, scratch))
                       for got, (ids, _) in zip(ours, prompts))
        wrong = {}
        for reading in READINGS[name]:
            edit = gpt2_toggle_scale if config["model_type"] == "gpt2" else None
            readings = () if edit else (reading,)
            far = max(distance(got, reference_logits(directory, ids, readings, edit, scratch))
                      for got, (ids, _) in zip(ours, prompts))
            wrong[reading] = (far, far / agreement)
        rows.append({"name": name, "architecture": golden["architecture"], "agreement": agreement,
                     "llama_gelu": gelu, "note": note, "readings": wrong, "as_converted": as_converted})
    return rows


def lscpu_model():
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def markdown(rows, llama):
    ok = all(ratio >= RATIO for row in rows for _, ratio in row["readings"].values())
    lines = [
        "# The float64 reference against llama.cpp",
        "",
        f"Run {datetime.date.today().isoformat()} on {lscpu_model()}, by",
        "`/usr/bin/python3 tools/references/validate_llamacpp.py --out docs/bench/validation/reference_vs_llamacpp.md`.",
        f"llama.cpp {llama.release} (commit {llama.commit[:12]}), prebuilt CPU libraries of "
        "@node-llama-cpp/linux-x64, through tools/benchmarks/peers/llama_peer.cpp: one thread, flash attention off, "
        "f32 KV cache, F32 GGUF from tools/benchmarks/peers/hf_to_gguf.py.",
        "",
        "Distance: max |llama.cpp − reference| / max |reference| over the last position's logits, the largest over "
        "the three golden prompts (1, 9 and the whole context). *agreement*: the reference as committed "
        "(golden.safetensors). Each wrong reading (tools/references/hf_reference.py READINGS; GPT-2's no_scale is "
        "its config's scale_attn_weights toggled) is run through the same reference and compared with the same "
        f"llama.cpp logits; *ratio* = its distance / the agreement; every ratio must be ≥ {RATIO}: "
        f"{'all are' if ok else 'NOT all are'}.",
        "",
        "| checkpoint | architecture | agreement | wrong reading: distance (ratio) |",
        "|---|---|---|---|",
    ]
    for row in rows:
        readings = "; ".join(f"{reading} {far:.2g} ({ratio:.3g}×)" for reading, (far, ratio) in row["readings"].items())
        agreement = f"{row['agreement']:.2e}"
        if row["llama_gelu"] is not None:
            agreement += f" (tanh GELU: {row['llama_gelu']:.2e})"
        lines.append(f"| {row['name']} | {row['architecture']} | {agreement} | {readings} |")
    lines += ["", "## What llama.cpp does differently, or cannot run", ""]
    for row in rows:
        if row["note"] and row["architecture"] == "GPT2LMHeadModel":
            lines.append(f"- {row['name']}: llama.cpp's gpt2 graph always divides scores by √d and has no "
                         f"scale_attn_weights false or scale_attn_by_inverse_layer_idx, so the checkpoint runs as an "
                         f"equivalent model ({row['note']}; exact up to float32 rounding of the scaled weights).")
        elif row["note"]:
            lines.append(f"- {row['name']}: runs as an equivalent model ({row['note']}; in F32, exact up to float32 "
                         f"rounding of the scaled weights).")
        if row.get("as_converted"):
            full, plain = row["as_converted"]
            lines.append(f"- {row['name']}: the pinned converter maps MistralForCausalLM to arch llama "
                         f"(conversion/llama.py), which writes no sliding_window, and llama.cpp's llama graph has no "
                         f"window: that GGUF attends to the whole causal prefix, {full:.2g} from the reference "
                         f"and {plain:.2g} from the reference's no_window reading. The row above is llama.cpp on "
                         f"`hf_to_gguf.py --mistral-swa`: arch granite_swa, llama's graph (the same permuted q / k "
                         f"rows, 1/√d) with llama.cpp's standard sliding window on every layer, logit_scale 1 and "
                         f"the per-head attention sinks it requires set to -1e30 (they add exp(-1e30 - max) = 0 to "
                         f"the softmax).")
    lines += [
        "- Gemma: llama.cpp's gemma2 and gemma3 graphs (src/models/gemma2.cpp, gemma3.cpp) scale q by "
        "f_attention_scale = 1/√head_dim (1/√(hidden_size / heads) for 46- or 62-layer models), never by "
        "query_pre_attn_scalar^-1/2, which the pinned converter does not write; and scale the embedding by "
        "sqrtf(n_embd) unrounded, where transformers rounds √hidden_size to the model's dtype. Both are folded "
        "into the weights as said above. Their GeGLU is ggml_geglu_split, whose GELU is read from the same F16 "
        "table (ggml-cpu/vec.h, ggml_vec_geglu_f32; below), so Gemma agrees to about 1e-4, as the other GELU models. llama.cpp's sliding window (llama_hparams::is_masked_swa, "
        "LLAMA_SWA_TYPE_STANDARD: key p0 is masked from query p1 when p1 - p0 ≥ n_swa) is transformers' "
        "p - w < j ≤ p. Gemma 2 slides the even layers (set_swa_pattern(2): layer i slides iff i % 2 < 1), "
        "as transformers; for Gemma 3 hf_to_gguf.py writes attention.sliding_window_pattern (the pinned "
        "converter writes none and llama.cpp assumes 6, which would make all 3 layers slide here).",
        "- GELU: llama.cpp's GPT-2, GPT-NeoX and Gemma graphs use ggml_gelu (Gemma: ggml_geglu_split), the tanh "
        "approximation read from a table indexed by the F16-rounded input (ggml-cpu/vec.h, GGML_GELU_FP16), so the GELU models (GPT-2, "
        "GPT-NeoX, Gemma) agree to a few 1e-4 where the others agree to float32 rounding. The reference keeps Hugging Face's "
        "activation (\"gelu\" = erf for GPT-NeoX and gpt2_f16; gelu_new / gelu_pytorch_tanh = tanh, Gemma's too); the figure in "
        "parentheses is the reference with the tanh form: erf against tanh is the smaller part of the "
        "difference, the F16 table the larger.",
        "- GPT-NeoX: the pinned convert_hf_to_gguf.py (conversion/gptneox.py) writes no rope.freq_base, so "
        "llama.cpp takes 10000 whatever rotary_emb_base says; hf_to_gguf.py writes it (gpt_neox_sequential has "
        "rotary_emb_base 1000).",
        "- Phi-3 with rope_scaling (longrope) is not converted here (hf_to_gguf.py refuses it); llama.cpp's phi3 "
        "graph needs head_dim = hidden_size / num_attention_heads (its attn_output is n_embd × n_embd). OLMo-2's "
        "graph needs q_norm of width hidden_size (num_attention_heads · head_dim = hidden_size).",
        "- Every other checkpoint and option (partial rotary, GPT-NeoX's parallel and sequential residual, "
        "Llama 3's rope_freqs, linear scaling in all three config spellings, Qwen3's per-head and OLMo-2's "
        "whole-projection q/k norms, OLMo-2's post-norms, Phi-3's fused projections, Gemma's soft caps, "
        "(1 + weight) norms, pre and post norms and per-layer rope base, Gemma 3's q/k norms) runs as is.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the markdown table here")
    parser.add_argument("--cache", type=Path, default=llamacpp_setup.DEFAULT_CACHE)
    parser.add_argument("names", nargs="*", help="checkpoints (default: all)")
    args = parser.parse_args(argv)
    llama = installed(args.cache)
    if llama is None:
        sys.exit(f"llama.cpp is not installed under {args.cache}: run tools/benchmarks/peers/llamacpp_setup.py")
    with tempfile.TemporaryDirectory(prefix="validate-llamacpp-") as scratch:
        rows = validate(llama, args.names or None, scratch)
    text = markdown(rows, llama)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    if any(ratio < RATIO for row in rows for _, ratio in row["readings"].values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
