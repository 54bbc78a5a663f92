"""Tests for tools/training/wands.py on a small fixture in the WANDS product.csv format."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from training import corpus  # noqa: E402
from training import wands  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                       "wands_product_sample.csv")


def test_read_products():
    products = wands.read_products(FIXTURE)
    assert products == [
        ("solid wood platform bed",
         "good, deep sleep can be quite difficult to have in your busy life."),
        ("all-clad 7 qt. slow cooker",
         "if you love to make hearty stews and soups, this is the one."),
        ("outdoor patio furniture cover", ""),
        ('"moses" 24" bar stool', 'sleek and "modern", this stool has a 24" seat height.'),
        ("mcgee area rug", "hand-tufted wool rug; soft underfoot."),
        ("chaise lounge cushion", ""),
    ]
    for name, desc in products:
        for field in (name, desc):
            assert "\t" not in field and "\n" not in field and "  " not in field
            assert field == field.lower() == field.strip()


def test_cli_writes_splits(tmp_path):
    assert wands.main([FIXTURE, "--out", str(tmp_path), "--validation", "2"]) == 0
    train = corpus.read_tsv(str(tmp_path / "train.tsv"))
    val = corpus.read_tsv(str(tmp_path / "validation.tsv"))
    assert len(val) == 2 and len(train) == 4
    assert sorted(train + val) == sorted(wands.read_products(FIXTURE))
    assert (train, val) == corpus.split(wands.read_products(FIXTURE), 2026, 2)
