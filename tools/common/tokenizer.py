"""Byte-pair-encoding tokenizer of the store model (pure Python, no torch).

This file is the reference for the C++ `attn/tokenizer.hpp`; the exact rules are
written out in models/store/README.md ("Tokenizer"). In short:

* normalise: ASCII lower-casing only (A-Z -> a-z), every other code point kept;
* pre-tokenise: split on ASCII whitespace (space, \\t, \\n, \\r, \\f, \\v); inside a
  chunk every character of Python's `string.punctuation` is a word of its own and
  maximal runs of other characters are words;
* a word is a sequence of one symbol per character, `</w>` glued to the last one;
* merges are applied by rank (lowest first, all non-overlapping occurrences left
  to right, repeat); symbols missing from the vocabulary become `<unk>`;
* a product is `<s> name <sep> description </s>`, cut to the first `longest` ids.

Command line: `python3 tools/common/tokenizer.py train --train models/store/train.tsv
--out models/store --size 2048` learns the vocabulary and merges from the training
split; `encode` prints ids of a text.
"""

from __future__ import annotations

import argparse
import heapq
import string
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, Iterable, List, Sequence, Tuple

END_OF_WORD = "</w>"
START, SEPARATOR, END, UNKNOWN = "<s>", "<sep>", "</s>", "<unk>"
SPECIALS = (START, SEPARATOR, END, UNKNOWN)
MERGES_HEADER = "#version: attn-bpe 1"

ASCII_WHITESPACE = " \t\n\r\f\v"
PUNCTUATION = frozenset(string.punctuation)
_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}

Pair = Tuple[str, str]


# ----------------------------------------------------------------------------
# normalisation and pre-tokenisation


def normalize(text: str) -> str:
    """ASCII lower-casing only: A-Z become a-z, nothing else changes."""
    return text.translate(_LOWER)


def pretokenize(text: str) -> List[str]:
    """Words of an (already normalised) text.

    Chunks are separated by ASCII whitespace; in a chunk each ASCII punctuation
    character is a word, and maximal runs of other characters are words.
    """
    words: List[str] = []
    run: List[str] = []
    for ch in text:
        if ch in ASCII_WHITESPACE:
            if run:
                words.append("".join(run))
                run = []
        elif ch in PUNCTUATION:
            if run:
                words.append("".join(run))
                run = []
            words.append(ch)
        else:
            run.append(ch)
    if run:
        words.append("".join(run))
    return words


def word_symbols(word: str) -> List[str]:
    """One symbol per character, `</w>` appended to the last symbol."""
    symbols = list(word)
    symbols[-1] += END_OF_WORD
    return symbols


def apply_merge(symbols: Sequence[str], pair: Pair, merged: str) -> List[str]:
    """Merge every non-overlapping occurrence of `pair`, scanning left to right."""
    left, right = pair
    out: List[str] = []
    i, n = 0, len(symbols)
    while i < n:
        if i + 1 < n and symbols[i] == left and symbols[i + 1] == right:
            out.append(merged)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


# ----------------------------------------------------------------------------
# training


def count_words(texts: Iterable[str]) -> Counter:
    counts: Counter = Counter()
    for text in texts:
        counts.update(pretokenize(normalize(text)))
    return counts


def learn_merges(word_counts: Dict[str, int], vocabulary_size: int,
                 minimum_count: int = 2, log=None) -> Tuple[List[str], List[Pair]]:
    """Greedy BPE on word frequencies.

    Returns (vocabulary, merges). At each step the adjacent pair with the highest
    frequency-weighted count is merged; ties go to the smallest pair (the tuple of
    two strings compared as Python strings). Training stops when the vocabulary
    has `vocabulary_size` tokens or no pair occurs `minimum_count` times.
    Pair counts are updated incrementally, so each step only touches the words
    that contain the merged pair.
    """
    words = sorted(word_counts)  # deterministic word order
    symbols: List[List[str]] = [word_symbols(w) for w in words]
    freqs: List[int] = [word_counts[w] for w in words]

    base = sorted({s for syms in symbols for s in syms})
    vocabulary: List[str] = list(SPECIALS) + [s for s in base if s not in SPECIALS]
    present = set(vocabulary)
    merges: List[Pair] = []
    merged_pairs = set()

    pair_counts: Dict[Pair, int] = defaultdict(int)
    where: Dict[Pair, set] = defaultdict(set)  # pair -> indices of words holding it
    for index, (syms, freq) in enumerate(zip(symbols, freqs)):
        for pair in zip(syms, syms[1:]):
            pair_counts[pair] += freq
            where[pair].add(index)

    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)

    started = time.time()
    while len(vocabulary) < vocabulary_size and heap:
        negative, pair = heapq.heappop(heap)
        count = pair_counts.get(pair, 0)
        if count != -negative:
            continue  # stale heap entry; the current count has its own entry
        if count < minimum_count:
            break
        merged = pair[0] + pair[1]
        if pair not in merged_pairs:  # a pair can reappear when a later merge
            merges.append(pair)       # re-creates one of its symbols; keep the
            merged_pairs.add(pair)    # first rank only
        if merged not in present:
            vocabulary.append(merged)
            present.add(merged)
        touched: Dict[Pair, int] = defaultdict(int)
        for index in sorted(where.pop(pair, ())):
            old = symbols[index]
            new = apply_merge(old, pair, merged)
            if len(new) == len(old):
                continue
            freq = freqs[index]
            for p in zip(old, old[1:]):
                touched[p] -= freq
            for p in zip(new, new[1:]):
                touched[p] += freq
            symbols[index] = new
            for p in set(zip(new, new[1:])):
                where[p].add(index)
        touched.pop(pair, None)
        pair_counts.pop(pair, None)
        for p, delta in touched.items():
            if delta == 0:
                continue
            value = pair_counts.get(p, 0) + delta
            if value > 0:
                pair_counts[p] = value
                heapq.heappush(heap, (-value, p))
            else:
                pair_counts.pop(p, None)
                where.pop(p, None)
        if log and len(merges) % 500 == 0:
            log(f"  {len(merges)} merges, vocabulary {len(vocabulary)}, "
                f"{time.time() - started:.1f} s")
    # `where` may keep indices of words that no longer hold a pair; that only
    # costs a no-op apply_merge above, never a wrong count.
    return vocabulary, merges


# ----------------------------------------------------------------------------
# the tokenizer


class Tokenizer:
    def __init__(self, vocabulary: Sequence[str], merges: Sequence[Pair]):
        self.vocabulary: List[str] = list(vocabulary)
        self.merges: List[Pair] = [tuple(m) for m in merges]
        self.ids: Dict[str, int] = {}
        for index, token in enumerate(self.vocabulary):
            if token in self.ids:
                raise ValueError(f"vocabulary: token {token!r} appears twice")
            self.ids[token] = index
        for name in SPECIALS:
            if name not in self.ids:
                raise ValueError(f"vocabulary: special token {name!r} is missing")
        self.ranks: Dict[Pair, int] = {}
        for rank, pair in enumerate(self.merges):
            self.ranks.setdefault(pair, rank)
        self.start = self.ids[START]
        self.separator = self.ids[SEPARATOR]
        self.end = self.ids[END]
        self.unknown = self.ids[UNKNOWN]
        self._cache: Dict[str, List[int]] = {}

    def __len__(self) -> int:
        return len(self.vocabulary)

    # -- files ---------------------------------------------------------------
    @classmethod
    def train(cls, texts: Iterable[str], vocabulary_size: int, log=None) -> "Tokenizer":
        vocabulary, merges = learn_merges(count_words(texts), vocabulary_size, log=log)
        return cls(vocabulary, merges)

    def save(self, folder) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / "vocabulary.txt", "w", encoding="utf-8", newline="\n") as f:
            for token in self.vocabulary:
                f.write(token + "\n")
        with open(folder / "merges.txt", "w", encoding="utf-8", newline="\n") as f:
            f.write(MERGES_HEADER + "\n")
            for left, right in self.merges:
                f.write(f"{left} {right}\n")

    @classmethod
    def load(cls, folder, vocabulary="vocabulary.txt", merges="merges.txt") -> "Tokenizer":
        folder = Path(folder)
        # split on "\n" only: str.splitlines would also split on other code points
        tokens = (folder / vocabulary).read_bytes().decode("utf-8").split("\n")
        if tokens and tokens[-1] == "":
            tokens.pop()
        lines = (folder / merges).read_bytes().decode("utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not lines or lines[0] != MERGES_HEADER:
            raise ValueError(f"{folder / merges}: first line must be {MERGES_HEADER!r}")
        pairs: List[Pair] = []
        for number, line in enumerate(lines[1:], start=2):
            parts = line.split(" ")
            if len(parts) != 2 or not parts[0] or not parts[1]:
                raise ValueError(f"{folder / merges}:{number}: expected 'left right', got {line!r}")
            pairs.append((parts[0], parts[1]))
        return cls(tokens, pairs)

    # -- encoding ------------------------------------------------------------
    def word_pieces(self, word: str) -> List[str]:
        """Symbols of one word after applying the merges by rank."""
        symbols = word_symbols(word)
        ranks = self.ranks
        while len(symbols) > 1:
            best = None
            best_rank = None
            for pair in zip(symbols, symbols[1:]):
                rank = ranks.get(pair)
                if rank is not None and (best_rank is None or rank < best_rank):
                    best, best_rank = pair, rank
            if best is None:
                break
            symbols = apply_merge(symbols, best, best[0] + best[1])
        return symbols

    def encode_word(self, word: str) -> List[int]:
        ids = self._cache.get(word)
        if ids is None:
            ids = [self.ids.get(s, self.unknown) for s in self.word_pieces(word)]
            self._cache[word] = ids
        return ids

    def encode(self, text: str) -> List[int]:
        out: List[int] = []
        for word in pretokenize(normalize(text)):
            out.extend(self.encode_word(word))
        return out

    def product_ids(self, name: str, description: str, longest: int = 160) -> List[int]:
        ids = [self.start] + self.encode(name) + [self.separator] \
            + self.encode(description) + [self.end]
        return ids[:longest]

    # -- decoding ------------------------------------------------------------
    def token(self, index: int) -> str:
        return self.vocabulary[index]

    def decode(self, ids: Iterable[int]) -> str:
        """Join the symbols; `</w>` becomes a space; specials stand as words."""
        parts: List[str] = []
        for index in ids:
            token = self.vocabulary[index]
            if token in SPECIALS:
                parts.append(" " + token + " ")
            else:
                parts.append(token.replace(END_OF_WORD, " "))
        return _squeeze_spaces("".join(parts))


def _squeeze_spaces(text: str) -> str:
    """Collapse runs of the space character and strip spaces at both ends."""
    return " ".join(piece for piece in text.split(" ") if piece)


def canonical(text: str) -> str:
    """What decode(encode(text)) gives for text without unknown characters:
    the normalised words joined by single spaces."""
    return " ".join(pretokenize(normalize(text)))


# ----------------------------------------------------------------------------
# corpus files


def read_products(path) -> List[Tuple[str, str]]:
    """Rows of a `name<TAB>description` TSV with a header line."""
    text = Path(path).read_bytes().decode("utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or lines[0].rstrip("\r").split("\t")[:2] != ["name", "description"]:
        raise ValueError(f"{path}: header must be 'name\\tdescription'")
    products = []
    for number, line in enumerate(lines[1:], start=2):
        line = line.rstrip("\r")
        parts = line.split("\t")
        if len(parts) == 1:
            parts.append("")
        if len(parts) != 2:
            raise ValueError(f"{path}:{number}: expected 2 tab-separated fields, got {len(parts)}")
        products.append((parts[0], parts[1]))
    return products


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="learn vocabulary.txt and merges.txt")
    t.add_argument("--train", default="models/store/train.tsv")
    t.add_argument("--out", default="models/store")
    t.add_argument("--size", type=int, default=2048)
    e = sub.add_parser("encode", help="print the ids of a text")
    e.add_argument("--model", default="models/store")
    e.add_argument("text")
    args = parser.parse_args(argv)
    if args.command == "train":
        started = time.time()
        products = read_products(args.train)
        texts = [t for product in products for t in product]
        tok = Tokenizer.train(texts, args.size, log=print)
        tok.save(args.out)
        print(f"vocabulary {len(tok)}, merges {len(tok.merges)}, "
              f"{time.time() - started:.1f} s")
    else:
        tok = Tokenizer.load(args.model)
        ids = tok.encode(args.text)
        print(" ".join(map(str, ids)))
        print(" ".join(tok.token(i) for i in ids))
    return 0


if __name__ == "__main__":
    sys.exit(main())
