#!/usr/bin/env python3
"""Writes the test cases of tests/test_nfc.cpp: NFC as Python's unicodedata.normalize gives it
(the Unicode version of tools/references/unicode_tables.py's headers, recorded in the files).

tests/data/nfc/single.json
    {"unicode_version": ..., "changed": [[code point, NFC of that one code point], ...]} for
    every Unicode scalar value (U+0000..U+10FFFF less the surrogates) that NFC changes; the
    test normalizes every scalar value and expects it unchanged unless it is listed.
tests/data/nfc/strings.jsonl
    one JSON array per line: [input] when NFC leaves the input as it is, else [input, NFC].
    The inputs: the canonical decomposition of every decomposable character, alone, with a
    combining mark put inside it and with one after it; every combining mark (class > 0)
    between others; runs of Hangul jamo and syllables; random strings mixing combining marks,
    Hangul jamo, precomposed letters, compatibility ideographs and plain letters; and lines of
    tests/tokenizer_reference/corpus.jsonl (tools/references/tokenizer_corpus.py), with marks sprinkled in
    and decomposed. Deterministic (fixed random seed).

Run: /usr/bin/python3 tools/references/nfc_cases.py  (from anywhere; rewrites both files)
"""

import argparse
import json
import random
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "nfc"
CORPUS = ROOT / "tests" / "tokenizer_reference" / "corpus.jsonl"


def nfc(text):
    return unicodedata.normalize("NFC", text)


def nfd(text):
    return unicodedata.normalize("NFD", text)


def scalar_values():
    return (chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF)


def cases():
    """{path: contents} of the two files."""
    rng = random.Random(20261201)
    syllables = [chr(0xAC00 + k) for k in range(11172)]
    decomposable = [c for c in scalar_values() if nfd(c) != c and not "\uac00" <= c <= "\ud7a3"]
    marks = [c for c in scalar_values() if unicodedata.combining(c)]
    common_marks = [chr(code) for code in range(0x300, 0x370)] + ["\u0323", "\u0338", "\u0345", "\u093c", "\u3099",
                                                                   "\u309a", "\u05b0", "\u0f71", "\u0e38"]
    # characters of class 0 that compose with what precedes them (Indic and Myanmar vowel signs)
    starters_that_compose = ["\u09be", "\u09d7", "\u0b3e", "\u0b56", "\u0b57", "\u0bbe", "\u0bd7", "\u0cc2", "\u0cd5",
                             "\u0d3e", "\u0d57", "\u102e", "\u1b35", "\U0001133e", "\U000114b0"]
    jamo_l = [chr(0x1100 + k) for k in range(19)]
    jamo_v = [chr(0x1161 + k) for k in range(21)]
    jamo_t = [chr(0x11A8 + k) for k in range(27)]

    def mark():
        return rng.choice(common_marks) if rng.random() < 0.7 else rng.choice(marks)

    inputs = []
    for c in decomposable + rng.sample(syllables, 200):
        parts = nfd(c)
        inputs.append(parts)
        inputs.append(parts[0] + mark() + parts[1:])
        inputs.append(c + mark())
    for m in marks:
        inputs.append("a" + mark() + m + mark())
        inputs.append(rng.choice(decomposable) + m + "\u0301")
        inputs.append(m + rng.choice("ae") + m)
    for _ in range(800):
        pool = [jamo_l, jamo_v, jamo_t, syllables, syllables, [" ", "a"], marks, starters_that_compose]
        inputs.append("".join(rng.choice(rng.choice(pool)) for _ in range(rng.randint(1, 10))))
    plain = [chr(code) for code in range(0x61, 0x7B)] + ["\u00e9", "\u0152", "\u4e00", "\u0915", "\u05d0", " ", "."]
    for _ in range(3000):
        pool = [decomposable, [nfd(c) for c in rng.sample(decomposable, 4)], marks, common_marks, common_marks,
                jamo_l + jamo_v + jamo_t, syllables, plain, plain, starters_that_compose]
        inputs.append("".join(rng.choice(rng.choice(pool)) for _ in range(rng.randint(1, 14))))

    corpus = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").split("\n") if line]
    corpus = [line for line in corpus if 0 < len(line) <= 100]
    for line in rng.sample(corpus, 1000):
        chars = list(line)
        for _ in range(rng.randint(1, 4)):
            chars.insert(rng.randint(0, len(chars)), mark())
        inputs.append("".join(chars))
        inputs.append(nfd(line))
    inputs += [line for line in corpus if nfc(line) != line or nfd(line) != line][:300]

    seen, lines = set(), []
    for text in inputs:
        if text in seen:
            continue
        seen.add(text)
        normal = nfc(text)
        lines.append(json.dumps([text] if normal == text else [text, normal], ensure_ascii=False) + "\n")
    changed = [[ord(c), nfc(c)] for c in scalar_values() if nfc(c) != c]
    single = {"unicode_version": unicodedata.unidata_version, "changed": changed}
    return {OUT / "strings.jsonl": "".join(lines),
            OUT / "single.json": json.dumps(single, ensure_ascii=False, separators=(",", ":")) + "\n"}


def main():
    # no options: --help only describes what the script rewrites
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for path, text in cases().items():
        with path.open("w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        print(f"wrote {path} ({text.count(chr(10))} lines, Unicode {unicodedata.unidata_version})", file=sys.stderr)


if __name__ == "__main__":
    main()
