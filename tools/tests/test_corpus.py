"""Tests for tools/training/corpus.py (standard library + pytest only)."""

import collections
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from training import corpus  # noqa: E402

SMALL = 5000
ALLOWED = re.compile(r"^[a-z0-9 .,\-'\"&/()!]*$")


@pytest.fixture(scope="module")
def small():
    return corpus.generate(seed=2026, count=SMALL, with_patterns=True)


@pytest.fixture(scope="module")
def full():
    return corpus.generate()


@pytest.fixture(scope="module")
def full_split(full):
    return corpus.split(full, 2026)


def test_deterministic_small(small):
    again = corpus.generate(seed=2026, count=SMALL, with_patterns=True)
    assert again == small
    other = corpus.generate(seed=7, count=SMALL)
    assert other != [(n, d) for n, d, _ in small]


def test_deterministic_full(full):
    assert corpus.generate() == full


def test_counts(full):
    assert len(full) >= 40000
    assert len({n for n, _ in full}) == len(full), "names are unique"
    recs = corpus.generate_records(2026, SMALL)
    assert len({r["department"] for r in recs}) >= 12
    assert len({r["type"] for r in recs}) >= 150
    assert len(corpus.DEPARTMENTS) >= 12
    assert len(corpus.PRODUCT_TYPES) >= 150


def test_name_shape(small):
    for name, _, _ in small:
        assert 2 <= len(name.split()) <= 8, name
        assert name == name.lower()


def test_allowed_characters(small):
    for name, desc, _ in small:
        for field in (name, desc):
            assert ALLOWED.match(field), field
            assert "\t" not in field and "\n" not in field and "\r" not in field
            assert "  " not in field and field == field.strip()
        if desc:
            assert desc.endswith("."), desc


def test_empty_share(small):
    empty = sum(1 for _, d, _ in small if not d)
    assert 0.07 * SMALL <= empty <= 0.13 * SMALL


def test_lengths(small):
    lengths = sorted(len(d.split()) for _, d, _ in small if d)
    median = lengths[len(lengths) // 2]
    assert 40 <= median <= 100, median
    assert lengths[-1] <= 150


def test_name_repetition(small):
    nonempty = [(n, d) for n, d, _ in small if d]
    rep = sum(1 for n, d in nonempty if set(n.split()) & set(re.findall(r"[a-z0-9']+", d)))
    assert rep >= 0.85 * len(nonempty)


def test_pattern_share(small):
    c = collections.Counter(p for _, _, pats in small for p in pats)
    total = sum(c.values())
    assert c.most_common(1)[0][1] < 0.02 * total
    assert len(c) >= 300


def test_exemplars(full, full_split):
    names = {n for n, _ in full}
    assert corpus.EXEMPLAR_TRAIN_NAME in names
    train, val = full_split
    assert len(val) >= 2000
    ex = [i for i, (n, _) in enumerate(val) if n == "double chaise patio furniture cover"]
    assert len(ex) == 1 and ex[0] < 300
    desc = val[ex[0]][1]
    assert desc.startswith(
        "protect your outdoor patio furniture from harsh elements with this outdoor "
        "patio furniture cover. ")
    assert "double chaise patio furniture cover" not in {n for n, _ in train}
    assert "sled coffee table" in {n for n, _ in train}
    phrase = "this outdoor patio furniture "
    hits = [d for _, d in train if phrase in d]
    assert 4 <= len(hits) <= 10
    follow = collections.Counter(d.split(phrase, 1)[1].split()[0] for d in hits)
    assert 1 <= follow["cover"] < len(hits)


def test_split(full, full_split):
    train, val = full_split
    assert len(train) + len(val) == len(full)
    assert not ({n for n, _ in train} & {n for n, _ in val})
    assert sorted(train + val) == sorted(full)
    t2, v2 = corpus.split(full, 2026)
    assert (t2, v2) == (train, val)
    t3, v3 = corpus.split(full, 11)
    assert v3 != val


def test_write_and_read(tmp_path, small):
    products = [(n, d) for n, d, _ in small]
    train, val = corpus.write_splits(products, str(tmp_path), 2026, 2500)
    raw = (tmp_path / "validation.tsv").read_bytes()
    assert raw.startswith(b"name\tdescription\n") and b"\r" not in raw
    assert corpus.read_tsv(str(tmp_path / "validation.tsv")) == val
    assert corpus.read_tsv(str(tmp_path / "train.tsv")) == train
    for line in raw.decode("utf-8").split("\n")[1:-1]:
        assert line.count("\t") == 1
