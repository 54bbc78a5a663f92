#!/usr/bin/python3
"""Write tests/data/gguf/<type>.txt: ggml block-format bytes and the floats llama.cpp's
gguf-py decodes them to, for tests/test_gguf.cpp to compare attn's dequantization with
(include/attn/detail/kernels/quantized.hpp).

    /usr/bin/python3 tools/references/gguf_quants.py [--gguf-py DIR]

gguf-py is the pinned llama.cpp peer's (tools/benchmarks/peers/llamacpp_setup.py installs
it under ~/.cache/attn-peers/llama.cpp-<commit>/gguf-py); it needs NumPy only.

Q8_0, Q4_0, and after the K formats Q4_1, Q5_0 and Q5_1: seeded normal floats (plus an all-zero
block and one with a large outlier) quantized by gguf.quants.quantize, then dequantized by
gguf.quants.dequantize. Q4_K, Q5_K
and Q6_K (gguf-py dequantizes them but cannot quantize them): seeded random bytes, with the
F16 super-block scales d (and dmin) drawn as small finite numbers so that every value is
finite, dequantized by gguf.quants.dequantize.

Format, one record a line (# starts a comment):
    type NAME           ggml type name
    blocks N            number of blocks
    bytes HEX           the N blocks' bytes, in hexadecimal, no separators
    values M            then M lines, one float32 each, written with float.hex() (exact)
"""

import argparse
import sys
from pathlib import Path

import numpy as np

TOOLS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TOOLS))  # tools/: the role packages

from benchmarks.peers.llamacpp_setup import DEFAULT_CACHE, LLAMA_CPP_COMMIT  # noqa: E402

OUT = TOOLS.parent / "tests" / "data" / "gguf"
SEED = 2026


def small_halves(rng, count):
    """count F16 numbers in ±[2^-12, 2^-4], as uint16 bits (finite, and far from overflow)."""
    magnitude = np.exp2(rng.uniform(-12, -4, count)).astype(np.float16)
    sign = rng.choice([-1, 1], count).astype(np.float16)
    return (magnitude * sign).view(np.uint16)


def write(path, name, blocks, values):
    lines = [f"# {name}: written by tools/references/gguf_quants.py from gguf-py (llama.cpp {LLAMA_CPP_COMMIT[:12]})",
             f"type {name}", f"blocks {blocks.shape[0]}", "bytes " + blocks.tobytes().hex(),
             f"values {values.size}"]
    lines += [float(v).hex() for v in values.reshape(-1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gguf-py", type=Path, default=DEFAULT_CACHE / f"llama.cpp-{LLAMA_CPP_COMMIT[:12]}" / "gguf-py")
    args = parser.parse_args()
    if not (args.gguf_py / "gguf" / "quants.py").is_file():
        sys.exit(f"no gguf-py at {args.gguf_py}: run tools/benchmarks/peers/llamacpp_setup.py, or pass --gguf-py")
    sys.path.insert(0, str(args.gguf_py))
    from gguf import quants
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T

    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)

    def quantized_blocks(qtype):
        block_values = GGML_QUANT_SIZES[qtype][0]
        floats = rng.standard_normal((4, block_values)).astype(np.float32)
        floats[1] = 0  # d = 0
        floats[2, 5] = 40.0  # one outlier sets the scale
        row = floats.reshape(1, -1)
        blocks = quants.quantize(row, qtype).reshape(4, -1)
        values = quants.dequantize(blocks.reshape(1, -1), qtype)
        write(OUT / f"{qtype.name.lower()}.txt", qtype.name, blocks, values)

    for qtype in (T.Q8_0, T.Q4_0):
        quantized_blocks(qtype)

    # Byte offsets of the F16 scales in each K block: (d, dmin) or d alone.
    scale_offsets = {T.Q4_K: (0, 2), T.Q5_K: (0, 2), T.Q6_K: (208,)}
    for qtype, offsets in scale_offsets.items():
        count = 3
        type_size = GGML_QUANT_SIZES[qtype][1]
        blocks = rng.integers(0, 256, (count, type_size), dtype=np.uint8)
        for offset in offsets:
            blocks[:, offset:offset + 2] = small_halves(rng, count).view(np.uint8).reshape(count, 2)
        values = quants.dequantize(blocks.reshape(1, -1), qtype)
        assert np.all(np.isfinite(values))
        write(OUT / f"{qtype.name.lower()}.txt", qtype.name, blocks, values)

    # after the K formats, so that the files above keep their bytes (one generator for all)
    for qtype in (T.Q4_1, T.Q5_0, T.Q5_1):
        quantized_blocks(qtype)


if __name__ == "__main__":
    main()
