#!/usr/bin/python3
"""Write tests/data/numpy_random/*.txt: NumPy's own draws, for tests/test_numpy_random.cpp
to compare attn::numpy (include/attn/numpy_random.hpp) with, exactly.

Run with the system Python and its NumPy (Debian's python3-numpy):

    /usr/bin/python3 tools/references/numpy_random_golden.py

Format: one record a line, `name arguments… values…`; lines starting with # are comments.
Doubles are written with float.hex() and 64-bit words in hexadecimal, so reading them
back is exact.

seed_<name>.txt — one seed. `entropy` gives SeedSequence's 32-bit entropy words (how
NumPy splits the seed), `integer` the seed itself where it is one, `pool` and
`state_u64` SeedSequence's pool and generate_state(4, np.uint64), `pcg_state` and
`pcg_inc` the PCG64 state after seeding as (high, low) halves. The remaining lines are
draws from ONE generator, default_rng(seed), in file order:
    raw N v…                      bit_generator.random_raw() N times
    random ROWS COLS v…           rng.random((ROWS, COLS))
    standard_normal ROWS COLS v…  rng.standard_normal((ROWS, COLS))
    normal LOC SCALE ROWS COLS v… rng.normal(LOC, SCALE, (ROWS, COLS))
    normal1 LOC SCALE v           rng.normal(LOC, SCALE), a Python float

normal_100k_seed_2026.txt — 100,000 rng.standard_normal() draws from
default_rng(2026), enough to take the ziggurat's rare paths many times: `fnv1a64` hashes
all of them (FNV-1a over each double's 8 little-endian bytes), `words` counts the 64-bit
words they used (each draw uses one, plus two for every wedge or tail attempt),
`next_raw` is the word after them, `at I V` gives every 1000th draw, and `slow I W V`
every draw that used more than one word (W words; |V| > 3.654… means the tail).
"""

from pathlib import Path

import argparse
import numpy as np

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "numpy_random"
MULTIPLIER = (2549297995355413924 << 64) | 4865540595714422341
MASK128 = (1 << 128) - 1
MASK64 = (1 << 64) - 1

SEEDS = {
    "0": 0,
    "1": 1,
    "42": 42,
    "2026": 2026,
    "2pow40_plus_7": 2**40 + 7,
    "2pow64_minus_1": 2**64 - 1,
    "2pow100_plus_12345": 2**100 + 12345,  # beyond 64 bits: the C++ side passes its words
    "words_1_2_3_4_5": [1, 2, 3, 4, 5],     # a word list longer than the pool
}

# The draws of every seed file, in order: (kind, arguments).
SCRIPT = [
    ("raw", 24),
    ("random", (3, 5)),
    ("standard_normal", (4, 6)),
    ("normal", (0.0, 1.0, (4, 8))),
    ("normal", (0.0, 0.5, (8, 4))),
    ("normal1", (0.25, 2.0)),
    ("normal", (-3.25, 1e-3, (2, 3))),
    ("normal", (1e6, 123.456, (1, 5))),
    ("normal", (5.0, 0.0, (1, 3))),        # scale 0 still draws
    ("normal", (0.0, 1.0, (0, 4))),        # empty: draws nothing
    ("raw", 4),
    ("normal", (0.0, 2.5, (500, 1))),
    # loc ≈ −scale·z for z near 1: the sum cancels, so a fused multiply-add would show.
    ("normal", (-0.1, 0.1, (200, 1))),
]


def hexes(values):
    return " ".join(float(v).hex() for v in np.ravel(values))


def words(values):
    return " ".join(hex(int(v)) for v in np.ravel(values))


def halves(value):
    return f"{hex(value >> 64)} {hex(value & MASK64)}"


def header(f, what):
    f.write(f"# {what}\n# Written by tools/references/numpy_random_golden.py with NumPy {np.__version__}; do not edit.\n")


def entropy_words(seed):
    """SeedSequence's entropy words: an integer split into little-endian 32-bit words, a list as is."""
    if isinstance(seed, list):
        return seed
    words = []
    while True:
        words.append(seed & 0xFFFFFFFF)
        seed >>= 32
        if seed == 0:
            return words


def write_seed(name, seed):
    sequence = np.random.SeedSequence(seed)
    entropy = entropy_words(seed)
    rng = np.random.default_rng(seed)
    state = rng.bit_generator.state["state"]
    path = OUT / f"seed_{name}.txt"
    with path.open("w") as f:
        header(f, f"np.random.default_rng({seed!r}) and its SeedSequence")
        f.write(f"entropy {' '.join(str(int(w)) for w in entropy)}\n")
        if isinstance(seed, int):
            f.write(f"integer {seed}\n")
        f.write(f"pool {words(sequence.pool)}\n")
        f.write(f"state_u64 {words(sequence.generate_state(4, np.uint64))}\n")
        f.write(f"pcg_state {halves(state['state'])}\n")
        f.write(f"pcg_inc {halves(state['inc'])}\n")
        for kind, args in SCRIPT:
            if kind == "raw":
                f.write(f"raw {args} {words(rng.bit_generator.random_raw(args))}\n")
            elif kind == "random":
                f.write(f"random {args[0]} {args[1]} {hexes(rng.random(args))}\n")
            elif kind == "standard_normal":
                f.write(f"standard_normal {args[0]} {args[1]} {hexes(rng.standard_normal(args))}\n")
            elif kind == "normal":
                loc, scale, shape = args
                values = rng.normal(loc, scale, shape)
                f.write(f"normal {loc.hex()} {scale.hex()} {shape[0]} {shape[1]} {hexes(values)}\n".rstrip() + "\n")
            elif kind == "normal1":
                loc, scale = args
                f.write(f"normal1 {loc.hex()} {scale.hex()} {rng.normal(loc, scale).hex()}\n")
    print(f"wrote {path}")


def fnv1a64(values):
    h = 0xCBF29CE484222325
    for byte in np.asarray(values, dtype="<f8").tobytes():
        h = ((h ^ byte) * 0x100000001B3) & MASK64
    return h


def write_100k(seed=2026, count=100_000):
    rng = np.random.default_rng(seed)
    state = rng.bit_generator.state["state"]
    s, inc = state["state"], state["inc"]
    # The LCG's states, to tell how many words each draw used.
    index = {s: 0}
    for k in range(1, count * 11 // 10):
        s = (s * MULTIPLIER + inc) & MASK128
        index[s] = k
    values, used = [], []
    previous = 0
    for _ in range(count):
        values.append(rng.standard_normal())
        k = index[rng.bit_generator.state["state"]["state"]]
        used.append(k - previous)
        previous = k
    check = np.random.default_rng(seed).standard_normal(count)
    assert np.array_equal(check, np.array(values)), "one-at-a-time and batch draws differ"
    next_raw = int(rng.bit_generator.random_raw())
    r = 3.6541528853610087963519472518
    slow = [i for i in range(count) if used[i] > 1]
    tail = [i for i in slow if abs(values[i]) > r]
    path = OUT / f"normal_100k_seed_{seed}.txt"
    with path.open("w") as f:
        header(f, f"{count} draws of np.random.default_rng({seed}).standard_normal(), one at a time")
        f.write(f"# {len(slow)} draws took a slow path, {len(tail)} of them the tail (|x| > r)\n")
        f.write(f"entropy {seed}\ncount {count}\n")
        f.write(f"fnv1a64 {hex(fnv1a64(values))}\n")
        f.write(f"words {previous}\n")
        f.write(f"next_raw {hex(next_raw)}\n")
        for i in range(0, count, 1000):
            f.write(f"at {i} {values[i].hex()}\n")
        for i in slow:
            f.write(f"slow {i} {used[i]} {values[i].hex()}\n")
    print(f"wrote {path}: {len(slow)} slow draws, {len(tail)} in the tail, {previous} words")


def main():
    # no options: --help only describes what the script rewrites
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for name, seed in SEEDS.items():
        write_seed(name, seed)
    write_100k()


if __name__ == "__main__":
    main()
