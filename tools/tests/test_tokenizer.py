"""Tests of tools/common/tokenizer.py (pytest; no torch needed).

Round trip: for a text whose characters are all in the vocabulary,
decode(encode(text)) == canonical(text), the ASCII-lower-cased words of the
pre-tokeniser joined by single spaces (so punctuation stands apart: "stool, 24in."
round-trips to "stool , 24in .").
"""

import random
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import tokenizer as tk  # noqa: E402
from common.tokenizer import Tokenizer  # noqa: E402


# -- helpers -----------------------------------------------------------------

def naive_learn(word_counts, size, minimum_count=2):
    """Textbook BPE: recount every pair at every step (slow, obviously right)."""
    words = {w: tk.word_symbols(w) for w in sorted(word_counts)}
    base = sorted({s for syms in words.values() for s in syms})
    vocabulary = list(tk.SPECIALS) + base
    merges = []
    while len(vocabulary) < size:
        counts = Counter()
        for w, syms in words.items():
            for pair in zip(syms, syms[1:]):
                counts[pair] += word_counts[w]
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))
        if counts[best] < minimum_count:
            break
        merged = best[0] + best[1]
        if best not in merges:
            merges.append(best)
        if merged not in vocabulary:
            vocabulary.append(merged)
        words = {w: tk.apply_merge(s, best, merged) for w, s in words.items()}
    return vocabulary, merges


CORPUS = [
    "Double Chaise Patio Furniture Cover",
    "protect your patio furniture with this double chaise patio furniture cover.",
    "stool, 24in. (set of 2) - \"bar\" stool & table!",
    "kid's desk / chair set",
    "outdoor dining table with 6 chairs",
    "the tables and the chairs: a dining set; 100% teak",
] * 3 + ["rustic wooden bench", "modern accent chair", "table table tables tablet"]


@pytest.fixture(scope="module")
def trained():
    return Tokenizer.train(CORPUS, 120)


# -- pre-tokenisation --------------------------------------------------------

@pytest.mark.parametrize("text, words", [
    ("stool, 24in.", ["stool", ",", "24in", "."]),
    ("Kid's  Desk", ["kid", "'", "s", "desk"]),
    ("(set of 2)", ["(", "set", "of", "2", ")"]),
    ("a\tb\nc\rd\fe\vf", ["a", "b", "c", "d", "e", "f"]),
    ("x--y", ["x", "-", "-", "y"]),
    ("100%teak;", ["100", "%", "teak", ";"]),
    ("", []),
    ("   ", []),
    ("café\u00a0noir", ["café\u00a0noir"]),  # non-ASCII whitespace does not split
])
def test_pretokenize(text, words):
    assert tk.pretokenize(tk.normalize(text)) == words


def test_normalize_is_ascii_only():
    assert tk.normalize("ABCxyz ÀÉ Ω") == "abcxyz ÀÉ Ω"


def test_punctuation_is_python_string_punctuation():
    import string
    for ch in string.punctuation:
        assert tk.pretokenize("a" + ch + "b") == ["a", ch, "b"]


def test_word_symbols():
    assert tk.word_symbols("table") == ["t", "a", "b", "l", "e</w>"]
    assert tk.word_symbols(",") == [",</w>"]


# -- training ----------------------------------------------------------------

def test_training_layout(trained):
    v = trained.vocabulary
    assert v[:4] == ["<s>", "<sep>", "</s>", "<unk>"]
    assert len(v) == 120
    counts = tk.count_words(CORPUS)
    base = sorted({s for w in counts for s in tk.word_symbols(w)})
    assert v[4:4 + len(base)] == base
    # merge results follow in merge order
    results = []
    for left, right in trained.merges:
        if left + right not in results and left + right not in base:
            results.append(left + right)
    assert v[4 + len(base):] == results


@pytest.mark.parametrize("size", [40, 80, 120, 200])
def test_incremental_training_matches_naive(size):
    counts = tk.count_words(CORPUS)
    assert tk.learn_merges(counts, size) == naive_learn(counts, size)


def test_incremental_training_matches_naive_random():
    rng = random.Random(7)
    letters = "abcde"
    counts = Counter()
    for _ in range(300):
        counts["".join(rng.choice(letters) for _ in range(rng.randint(1, 8)))] += rng.randint(1, 5)
    for size in (30, 60, 150):
        assert tk.learn_merges(counts, size) == naive_learn(counts, size)


def test_tie_break_is_smallest_pair_and_order_independent():
    # every pair occurs exactly twice: the smallest tuple of strings wins
    a = {"cd": 2, "ab": 2, "ef": 2}
    b = {"ef": 2, "ab": 2, "cd": 2}
    va, ma = tk.learn_merges(a, 100)
    vb, mb = tk.learn_merges(b, 100)
    assert (va, ma) == (vb, mb)
    assert ma == [("a", "b</w>"), ("c", "d</w>"), ("e", "f</w>")]
    # frequency beats order
    _, m = tk.learn_merges({"ab": 2, "zy": 3}, 100)
    assert m[0] == ("z", "y</w>")


def test_training_is_deterministic():
    first = Tokenizer.train(CORPUS, 100)
    second = Tokenizer.train(list(reversed(CORPUS)), 100)
    assert first.vocabulary == second.vocabulary
    assert first.merges == second.merges


# -- encoding ----------------------------------------------------------------

def test_merges_are_applied_by_rank_not_leftmost():
    vocab = list(tk.SPECIALS) + ["a", "b", "c</w>", "bc</w>", "ab"]
    # rank 0 is the right-hand pair; a greedy left-to-right merger would take a+b
    tok = Tokenizer(vocab, [("b", "c</w>"), ("a", "b")])
    assert [tok.token(i) for i in tok.encode("abc")] == ["a", "bc</w>"]
    tok2 = Tokenizer(vocab, [("a", "b"), ("b", "c</w>")])
    assert [tok2.token(i) for i in tok2.encode("abc")] == ["ab", "c</w>"]


def test_all_non_overlapping_occurrences_merge_left_to_right():
    vocab = list(tk.SPECIALS) + ["a", "a</w>", "aa", "aaaa", "aa</w>"]
    tok = Tokenizer(vocab, [("a", "a")])
    assert [tok.token(i) for i in tok.encode("aaaaa")] == ["aa", "aa", "a</w>"]
    tok = Tokenizer(vocab, [("a", "a"), ("aa", "aa")])
    assert [tok.token(i) for i in tok.encode("aaaaa")] == ["aaaa", "a</w>"]


def test_unknown_characters(trained):
    ids = trained.encode("zqé table")
    unk = trained.unknown
    # 'é</w>' and any unseen character are unknown, one <unk> per symbol
    assert ids.count(unk) >= 1
    assert trained.encode("é") == [unk]
    assert trained.encode("éé") == [unk, unk]
    assert trained.decode(trained.encode("éé")) == "<unk> <unk>"


def test_round_trip(trained):
    for text in CORPUS + ["Patio TABLE, (2) chairs & a \"set\"!", "  the \t TABLE\n"]:
        ids = trained.encode(text)
        assert trained.unknown not in ids
        assert trained.decode(ids) == tk.canonical(text)
    assert tk.canonical("stool, 24in.") == "stool , 24in ."


def test_encode_caches_and_is_consistent(trained):
    first = trained.encode("patio furniture cover")
    assert trained.encode("patio furniture cover") == first
    assert trained.encode("patio furniture cover") == (
        trained.encode("patio") + trained.encode("furniture") + trained.encode("cover"))


# -- products ----------------------------------------------------------------

def test_product_ids_markers(trained):
    ids = trained.product_ids("Patio Table", "a table.")
    assert ids[0] == trained.start and ids[-1] == trained.end
    sep = ids.index(trained.separator)
    assert ids[1:sep] == trained.encode("patio table")
    assert ids[sep + 1:-1] == trained.encode("a table.")
    empty = trained.product_ids("patio table", "")
    assert empty == [trained.start] + trained.encode("patio table") + [trained.separator, trained.end]
    assert trained.decode(empty) == "<s> patio table <sep> </s>"


def test_product_ids_truncation(trained):
    description = " ".join(["furniture"] * 400)
    full = trained.product_ids("patio table", description, longest=10**6)
    assert len(full) > 160
    cut = trained.product_ids("patio table", description)
    assert len(cut) == 160 and cut == full[:160]
    assert trained.end not in cut
    assert trained.product_ids("patio table", description, longest=5) == full[:5]


# -- files -------------------------------------------------------------------

def test_save_load_round_trip(trained, tmp_path):
    trained.save(tmp_path)
    lines = (tmp_path / "merges.txt").read_text(encoding="utf-8").split("\n")
    assert lines[0] == "#version: attn-bpe 1"
    assert len(lines) == len(trained.merges) + 2 and lines[-1] == ""
    vocab_lines = (tmp_path / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    assert vocab_lines[:-1] == trained.vocabulary
    loaded = Tokenizer.load(tmp_path)
    assert loaded.vocabulary == trained.vocabulary
    assert loaded.merges == trained.merges
    for text in CORPUS:
        assert loaded.encode(text) == trained.encode(text)


def test_load_rejects_bad_files(tmp_path):
    (tmp_path / "vocabulary.txt").write_text("<s>\n<sep>\n</s>\n<unk>\na\n", encoding="utf-8")
    (tmp_path / "merges.txt").write_text("a b\n", encoding="utf-8")
    with pytest.raises(ValueError):
        Tokenizer.load(tmp_path)
    (tmp_path / "merges.txt").write_text("#version: attn-bpe 1\na b c\n", encoding="utf-8")
    with pytest.raises(ValueError):
        Tokenizer.load(tmp_path)
    (tmp_path / "vocabulary.txt").write_text("<s>\n<sep>\na\n", encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: attn-bpe 1\n", encoding="utf-8")
    with pytest.raises(ValueError):
        Tokenizer.load(tmp_path)


def test_read_products(tmp_path):
    path = tmp_path / "p.tsv"
    path.write_text("name\tdescription\nchair\ta chair.\nstool\t\n", encoding="utf-8")
    assert tk.read_products(path) == [("chair", "a chair."), ("stool", "")]
