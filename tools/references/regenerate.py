#!/usr/bin/python3
"""Regenerates every committed golden file, each by the script that writes it:

    /usr/bin/python3 tools/references/regenerate.py             # all (~10 minutes on 2 cores)
    /usr/bin/python3 tools/references/regenerate.py --list      # what writes what
    /usr/bin/python3 tools/references/regenerate.py --only hf store_generation

The float64 PyTorch goldens depend in their last bits on the machine's BLAS (another CPU sums
in another order: 2e-14 on the store model's logits). A regenerated file that differs from
the one it replaces only by such rounding (every number within 1e-9 of the old one, relative
to the largest magnitude of its array, or 1e-5 for interventions.json's float32 averages, and
nothing else changed) is put back as it was, so that on any machine an unchanged tree
regenerates to `git status` clean; --overwrite keeps this machine's bytes instead. Any other
difference is left in the tree and reported, and the exit status is 1.

Not written by a script, so not here: tests/data/tokenizer and tests/data/hf_tokenizer (made
by hand, see their READMEs and tests), tests/data/examples/*.2026.txt (the book's printed
output, which example_expectations.py only checks) and tests/data/examples/previous_token_head.txt
(the example's own output, reviewed when committed). The models these goldens read,
models/store and models/store-llama, are trained: tools/training/make_store_model.sh and
make_store_llama.sh rebuild them (tens of minutes each) and then their goldens.
"""

import argparse
import json
import math
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: the role packages

from common import safetensors_io  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PYTHON = "/usr/bin/python3"


@dataclass
class Golden:
    name: str
    command: object  # argv run from the repository's root, or a function of the options giving it
    outputs: list  # glob patterns, relative to the root
    floats: bool = False  # float results of PyTorch/BLAS: rounding may differ by machine
    tolerance: float = 1e-9  # the largest difference taken for rounding (relative to the array's magnitude)


def store_llama_command(args):
    """The command golden.json records for itself (the ids and the comment live there)."""
    recorded = json.loads((ROOT / "tests/data/store_llama/golden.json").read_text(encoding="utf-8"))["regenerate"]
    return shlex.split(recorded)


def tokenizer_corpus_command(args):
    return [PYTHON, "tools/references/tokenizer_corpus.py", str(args.seeds)]


GOLDENS = [
    Golden("numpy_random", [PYTHON, "tools/references/numpy_random_golden.py"], ["tests/data/numpy_random/*.txt"]),
    Golden("examples", [PYTHON, "tools/references/example_expectations.py"], ["tests/data/examples/*.txt"]),
    Golden("nfc", [PYTHON, "tools/references/nfc_cases.py"], ["tests/data/nfc/*"]),
    Golden("unicode_tables", [PYTHON, "tools/references/unicode_tables.py"],
           ["include/attn/detail/text/unicode_tables.hpp", "include/attn/detail/text/nfc_tables.hpp"]),
    Golden("ziggurat_tables", [PYTHON, "tools/references/ziggurat_tables.py"],
           ["include/attn/detail/ziggurat_tables.hpp"]),
    Golden("gguf_quants", [PYTHON, "tools/references/gguf_quants.py"], ["tests/data/gguf/*.txt"]),
    Golden("gguf_models", [PYTHON, "tools/references/gguf_models.py"],
           ["tests/data/gguf/models/*.gguf", "tests/data/gguf/models/*.safetensors"], floats=True),
    # after gguf_models: quantizes its F32 files with llama.cpp's llama_model_quantize (the peer)
    Golden("gguf_kquant_models", [PYTHON, "tools/references/gguf_kquant_models.py"],
           ["tests/data/gguf/models/llama_kquant.*", "tests/data/gguf/models/gpt2_prefixed_f32.Q8_0.gguf",
            "tests/data/gguf/models/gpt_neox_parallel.Q8_0.gguf", "tests/data/gguf/models/phi3_fused_partial.Q8_0.gguf"],
           floats=True),
    Golden("tokenizer_corpus", tokenizer_corpus_command,
           ["tests/tokenizer_reference/corpus.jsonl"]),
    Golden("gguf_tokenizers", [PYTHON, "tools/references/gguf_tokenizers.py"],
           ["tests/data/gguf/tokenizer/*.gguf", "tests/data/gguf/tokenizer/*.ids"]),
    Golden("hf", [PYTHON, "tools/references/hf_reference.py", "--regenerate"],
           ["tests/data/hf/*/*.json", "tests/data/hf/*/*.safetensors"], floats=True),
    Golden("store_llama", store_llama_command, ["tests/data/store_llama/golden.*"], floats=True),
    Golden("store_reference", [PYTHON, "tools/references/reference.py", "--model", "models/store", "--data",
                               "models/store", "--out", "tests/data/store"],
           ["tests/data/store/golden.*", "tests/data/store/validation_ids.txt"], floats=True),
    Golden("store_generation", [PYTHON, "tools/references/generate.py", "--model", "models/store", "--golden",
                                "tests/data/store/generation.json"], ["tests/data/store/generation.json"], floats=True),
    Golden("store_interventions", [PYTHON, "tools/references/interventions.py", "--model", "models/store",
                                   "--data", "models/store", "--golden", "tests/data/store", "--copy-average"],
           ["tests/data/store/interventions.*"], floats=True, tolerance=1e-5),  # copy_average is float32
]


# ----------------------------------------------------------------------------
# rounding: how far two versions of a file are apart, if they differ only in their numbers


class Different(Exception):
    """The two versions differ in more than the values of their floats."""


def json_distance(a, b, where="$"):
    """The largest |a - b| / max(1, |a|, |b|) over the numbers of two JSON values of one shape."""
    if isinstance(a, bool) or isinstance(b, bool) or isinstance(a, str) or a is None:
        if a != b:
            raise Different(f"{where}: {a!r} != {b!r}")
        return 0.0
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            if a != b:
                raise Different(f"{where}: {a} != {b}")
            return 0.0
        if not (math.isfinite(a) and math.isfinite(b)):
            if a != b and not (math.isnan(a) and math.isnan(b)):
                raise Different(f"{where}: {a} != {b}")
            return 0.0
        return abs(a - b) / max(1.0, abs(a), abs(b))
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return max((json_distance(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b))), default=0.0)
    if isinstance(a, dict) and isinstance(b, dict) and list(a) == list(b):
        return max((json_distance(a[k], b[k], f"{where}.{k}") for k in a), default=0.0)
    raise Different(f"{where}: differs in shape or type")


def safetensors_distance(old, new):
    """The largest |a - b| / max |a| over each float tensor; integers, names, shapes must be equal."""
    import numpy as np

    with tempfile.TemporaryDirectory() as scratch:
        versions = []
        for label, data in (("old", old), ("new", new)):
            path = Path(scratch) / f"{label}.safetensors"
            path.write_bytes(data)
            versions.append(safetensors_io.read_float64(path))
    (a, a_meta), (b, b_meta) = versions
    if a_meta != b_meta or list(a) != list(b):
        raise Different("metadata or tensor names differ")
    worst = 0.0
    for name in a:
        x, y = a[name], b[name]
        if x.shape != y.shape or x.dtype != y.dtype:
            raise Different(f"tensor {name}: shape or type differs")
        if x.dtype.kind != "f":
            if not np.array_equal(x, y):
                raise Different(f"tensor {name}: integers differ")
            continue
        if not np.array_equal(np.isfinite(x), np.isfinite(y)) or not np.array_equal(x[~np.isfinite(x)],
                                                                                    y[~np.isfinite(y)]):
            raise Different(f"tensor {name}: infinities differ")
        finite = np.isfinite(x)
        scale = max(float(np.abs(x[finite]).max(initial=0.0)), float(np.abs(y[finite]).max(initial=0.0)), 1e-300)
        worst = max(worst, float(np.abs(x[finite] - y[finite]).max(initial=0.0)) / scale)
    return worst


def rounding_distance(path, old, new):
    """How far new is from old if they differ only by rounding, else raises Different."""
    if path.suffix == ".json":
        return json_distance(json.loads(old), json.loads(new))
    if path.suffix == ".safetensors":
        return safetensors_distance(old, new)
    raise Different("not a file of numbers")


# ----------------------------------------------------------------------------


def files_of(golden):
    return sorted({path for pattern in golden.outputs for path in ROOT.glob(pattern)})


def regenerate(golden, args):
    """Runs one golden's script; returns (report lines, whether anything changed)."""
    if golden.command is tokenizer_corpus_command and not Path(args.seeds).is_dir():
        print(f"== {golden.name}: skipped, no seeds directory {args.seeds} (--seeds)", flush=True)
        return [], False
    command = golden.command(args) if callable(golden.command) else golden.command
    before = {path: path.read_bytes() for path in files_of(golden)}
    print(f"== {golden.name}: {shlex.join(command)}", flush=True)
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        return [f"   FAILED (exit {result.returncode}):\n{result.stdout}{result.stderr}"], True
    lines, changed = [], False
    for path in files_of(golden):
        name, new = path.relative_to(ROOT), path.read_bytes()
        old = before.get(path)
        if old is None:
            lines.append(f"   new       {name}")
            changed = True
        elif old == new:
            lines.append(f"   identical {name}")
        elif not golden.floats:
            lines.append(f"   CHANGED   {name}")
            changed = True
        else:
            try:
                distance = rounding_distance(path, old, new)
            except Different as difference:
                distance, why = math.inf, str(difference)
            if distance <= golden.tolerance and not args.overwrite:
                path.write_bytes(old)
                lines.append(f"   kept      {name} (this machine's numbers within {distance:.1e} of it)")
            elif distance <= golden.tolerance:
                lines.append(f"   rewritten {name} (within {distance:.1e}: rounding)")
            else:
                lines.append(f"   CHANGED   {name} ({'by %.1e' % distance if math.isfinite(distance) else why})")
                changed = True
    return lines, changed


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=[g.name for g in GOLDENS], help="just these goldens")
    parser.add_argument("--list", action="store_true", help="print each golden's command and files, and stop")
    parser.add_argument("--seeds", type=Path, default=ROOT.parent / "shared" / "seeds",
                        help="the prose seeds of tests/tokenizer_reference/corpus.jsonl (default: ../shared/seeds)")
    parser.add_argument("--overwrite", action="store_true",
                        help="keep this machine's bytes even where they differ from the old ones only by rounding")
    args = parser.parse_args(argv)
    chosen = [g for g in GOLDENS if not args.only or g.name in args.only]
    if args.list:
        for golden in chosen:
            command = golden.command(args) if callable(golden.command) else golden.command
            print(f"{golden.name}: {shlex.join(command)}\n    {' '.join(golden.outputs)}")
        return 0
    changed = False
    for golden in chosen:
        lines, golden_changed = regenerate(golden, args)
        print("\n".join(lines), flush=True)
        changed |= golden_changed
    print("some goldens changed (see above)" if changed else "every golden is as committed (or within rounding)")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
