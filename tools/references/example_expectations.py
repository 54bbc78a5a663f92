#!/usr/bin/python3
"""Expected output of the C++ examples (examples/), computed by the chapter's own
listings in NumPy. Run with the system Python and its NumPy:

    /usr/bin/python3 tools/references/example_expectations.py            # seed 7
    /usr/bin/python3 tools/references/example_expectations.py --seed 7 --seed 11

For every seed but 2026 it writes tests/data/examples/<example>.<seed>.txt. The files
for seed 2026 are the book's printed output, copied from the chapter; for that seed
the script only checks that NumPy still prints the book's text, and says where not.

It also writes tests/data/examples/numpy_print_cases.txt: arrays and NumPy's str() of
them, which examples/numpy_print_check.cpp compares with examples/numpy_print.hpp.
"""

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "examples"
BOOK_SEED = 2026

# The chapter's four listings, as printed in the book, with the seed as {seed}.
LISTINGS = {
    "attention_by_hand": '''
import numpy as np

tokens = ["<s>", "sled</w>", "coffee</w>", "table</w>"]
rng = np.random.default_rng({seed})
x = rng.normal(0, 1, (4, 8))                        # one 8-number vector per token, as an embedding table gives
w_query, w_key, w_value = (rng.normal(0, 0.5, (8, 4)) for _ in range(3))

queries, keys, values = x @ w_query, x @ w_key, x @ w_value   # what each token looks for, offers, and passes on
scores = queries @ keys.T / np.sqrt(4)                       # how well each query matches each key, scaled
weights = np.exp(scores - scores.max(1, keepdims=True))
weights /= weights.sum(1, keepdims=True)                     # softmax along each row: each row sums to 1
output = weights @ values                                     # each token: a weighted average of all the values

np.set_printoptions(precision=2, suppress=True)
print("attention weights (rows attend to columns):")
for token, row in zip(tokens, weights):
    print(f"  {{token:<11}}", row)
print("each row sums to 1:", bool(np.allclose(weights.sum(1), 1)))
print("output shape:", output.shape)
''',
    "causal_mask": '''
import numpy as np

tokens = ["<s>", "sled</w>", "coffee</w>", "table</w>"]
rng = np.random.default_rng({seed})
x = rng.normal(0, 1, (4, 8))
w_query, w_key, w_value = (rng.normal(0, 0.5, (8, 4)) for _ in range(3))   # the same draws as attention-by-hand
allowed = np.tril(np.ones((4, 4), dtype=bool))               # position i may look at positions 0 to i only


def attend(x, mask):
    scores = (x @ w_query) @ (x @ w_key).T / np.sqrt(4)
    if mask:
        scores = np.where(allowed, scores, -np.inf)          # a score of minus infinity becomes a weight of 0
    weights = np.exp(scores - scores.max(1, keepdims=True))
    weights /= weights.sum(1, keepdims=True)
    return weights, weights @ (x @ w_value)


weights, _ = attend(x, mask=True)
np.set_printoptions(precision=2, suppress=True)
print("weights with the causal mask:")
for token, row in zip(tokens, weights):
    print(f"  {{token:<11}}", row)
print("weight on later tokens:", float(weights[~allowed].sum()))

changed = x.copy()
changed[3] = rng.normal(0, 1, 8)                             # a different last token in place of `table`
for mask in [False, True]:
    before, after = attend(x, mask)[1][2], attend(changed, mask)[1][2]
    print(f"output at coffee changes with the last token, {{'with' if mask else 'without'}} the mask:",
          bool(not np.allclose(before, after)))
''',
    "scaling": '''
import numpy as np

rng = np.random.default_rng({seed})
for size in [4, 32, 256]:
    queries, keys = rng.normal(0, 1, (1000, size)), rng.normal(0, 1, (16, size))
    for divide in [False, True]:
        scores = queries @ keys.T / (np.sqrt(size) if divide else 1)
        weights = np.exp(scores - scores.max(1, keepdims=True))
        weights /= weights.sum(1, keepdims=True)
        label = "scaled" if divide else "unscaled"
        print(f"size {{size}}, {{label}}, average largest weight in a row: {{weights.max(1).mean():.2f}}")
''',
    "multi_head": '''
import numpy as np

rng = np.random.default_rng({seed})
positions, dims, heads = 4, 8, 2
size = dims // heads                                          # each head works in 4 of the 8 dimensions
x = rng.normal(0, 1, (positions, dims))
w_query, w_key, w_value, output_projection = (rng.normal(0, 0.5, (dims, dims)) for _ in range(4))


def split(m):                                                 # (positions, dims) -> (heads, positions, size)
    return m.reshape(positions, heads, size).transpose(1, 0, 2)


queries, keys, values = split(x @ w_query), split(x @ w_key), split(x @ w_value)
scores = queries @ keys.transpose(0, 2, 1) / np.sqrt(size)             # one score matrix per head
scores = np.where(np.tril(np.ones((positions, positions), dtype=bool)), scores, -np.inf)
weights = np.exp(scores - scores.max(-1, keepdims=True))
weights /= weights.sum(-1, keepdims=True)
joined = (weights @ values).transpose(1, 0, 2).reshape(positions, dims)   # the heads' outputs side by side
output = joined @ output_projection                                       # mixed back together by one more matrix

print("weights shape (heads, positions, positions):", weights.shape)
print("what the last token attends to, head 1:", np.round(weights[0, -1], 2))
print("what the last token attends to, head 2:", np.round(weights[1, -1], 2))
print("output shape:", output.shape)
''',
}


def run_listing(name: str, seed: int) -> str:
    code = LISTINGS[name].format(seed=seed)
    # A fresh interpreter per listing, so one listing's printoptions cannot leak into another.
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout


def print_cases(path: Path) -> None:
    """Arrays and NumPy's str() of them, under the chapter's and the default printoptions."""
    rng = np.random.default_rng(12345)
    arrays = [
        [0.02, 0.97, 0.01, 0.0], [1.0, 0.0, 0.0, 0.0], [0.29, 0.71, 0.0, 0.0], [0.04, 0.32, 0.14, 0.5],
        [0.125, 0.375, 0.625, 0.875], [0.005, 0.015, 0.025, 1.005, 2.675], [-0.0, 0.0, -1e-9, 1e-9],
        [1.0, 2.0, 10.0, 100.0], [-1.5, 22.25, -333.125], [0.999, 0.994, 0.995, 0.996], [1e-300, -5e-324],
        [np.nan, 0.5], [np.inf, -np.inf, 0.25], [np.nan], [-np.inf, 1.0], [0.1, 0.2, 0.30000000000000004],
        [12345678.9, -0.5], [3.0], [7.0, 0.0001234],
    ]
    for n in [1, 3, 4, 6, 16]:
        for _ in range(8):
            w = rng.random(n)
            arrays.append(list(w / w.sum()))  # softmax-like weights
    for scale in [1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0, 1e4]:
        for n in [2, 5, 9]:
            for _ in range(4):
                arrays.append(list(rng.normal(0, scale, n)))
    for n in [20, 40, 75, 160]:  # long enough to wrap
        arrays.append(list(rng.normal(0, 3.0, n)))
        arrays.append(list(rng.random(n)))
    for _ in range(10):
        arrays.append(list(np.round(rng.random(4), 2)))
        arrays.append(list(np.round(rng.normal(0, 1, 5), 3)))

    modes = [(2, True), (8, False), (3, True), (4, False)]
    count = 0
    with path.open("w") as f:
        f.write("# Arrays and NumPy's str() of them, for examples/numpy_print_check.cpp.\n")
        f.write(f"# Written by tools/references/example_expectations.py with NumPy {np.__version__}; do not edit.\n")
        f.write("# case PRECISION SUPPRESS N values… (float.hex), then NumPy's output lines, then 'end'.\n")
        f.write("# round DECIMALS x np.round(x) and repr X python_repr: the other helpers.\n")
        for values in arrays:
            a = np.array(values, dtype=np.float64)
            for precision, suppress in modes:
                with np.printoptions(precision=precision, suppress=suppress):
                    text = str(a)
                if "e" in text.replace("inf", ""):
                    continue  # scientific notation: not covered by numpy_print.hpp
                f.write(f"case {precision} {int(suppress)} {len(a)} {' '.join(float(v).hex() for v in a)}\n")
                f.write(text + "\nend\n")
                count += 1
        for x in list(rng.normal(0, 1, 40)) + [0.125, 0.135, 2.675, 1.005, -0.285, 0.5, 1.5, 2.5, -2.5]:
            f.write(f"round 2 {float(x).hex()} {float(np.round(x, 2)).hex()}\n")
        for x in [0.0, -0.0, 1.0, 0.1, 1e-5, 123456.789, 1e16, 1.5e16, 1e15, 2.5e-4, 1e-4, -3.25, 1 / 3, 1e300,
                  5e-324, 100.0]:
            f.write(f"repr {float(x).hex()} {repr(float(x))}\n")
    print(f"wrote {path} ({count} arrays)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, action="append", help="seed to write expectations for (default: 7)")
    args = parser.parse_args()
    seeds = args.seed or [7]
    DATA.mkdir(parents=True, exist_ok=True)
    status = 0
    for name in LISTINGS:
        book = (DATA / f"{name}.{BOOK_SEED}.txt").read_text(encoding="utf-8")
        numpy_2026 = run_listing(name, BOOK_SEED)
        if numpy_2026 == book:
            print(f"{name}: NumPy {np.__version__} prints the book's output for seed {BOOK_SEED}")
        else:
            print(f"{name}: NumPy {np.__version__} differs from the book for seed {BOOK_SEED}:\n"
                  f"--- book\n{book}--- numpy\n{numpy_2026}", file=sys.stderr)
            status = 1
        for seed in seeds:
            if seed == BOOK_SEED:
                continue
            path = DATA / f"{name}.{seed}.txt"
            path.write_text(run_listing(name, seed), encoding="utf-8")
            print(f"wrote {path}")
    print_cases(DATA / "numpy_print_cases.txt")
    return status


if __name__ == "__main__":
    sys.exit(main())
