#!/usr/bin/python3
"""Reader for the real WANDS (Wayfair ANnotation DataSet) product.csv.

product.csv is tab-separated with a header row; columns include product_id,
product_name, product_class, category hierarchy, product_description,
product_features, rating_count, average_rating, review_count.  Columns are read
by NAME.  Returns (name, description) pairs normalised like tools/training/corpus.py:
lower-cased, tabs/newlines removed, whitespace collapsed, missing -> "".

Usage:
    /usr/bin/python3 tools/training/wands.py path/to/product.csv --out DIR
"""

import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/: the role packages
from training import corpus  # noqa: E402

MISSING = {"", "nan", "none", "null", "n/a"}


def normalise(text):
    text = corpus.clean_field(text)
    return "" if text in MISSING else text


def read_products(path):
    """Returns a list of (name, description) in file order; rows without a name are skipped."""
    csv.field_size_limit(1 << 26)
    out = []
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t")
        fields = reader.fieldnames or []
        for col in ("product_name", "product_description"):
            if col not in fields:
                raise ValueError("%s: missing column %r (have %r)" % (path, col, fields))
        for row in reader:
            name = normalise(row.get("product_name"))
            if not name:
                continue
            out.append((name, normalise(row.get("product_description"))))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description="WANDS product.csv -> train/validation tsv")
    ap.add_argument("csv")
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=corpus.DEFAULT_SEED)
    ap.add_argument("--validation", type=int, default=corpus.DEFAULT_VALIDATION)
    args = ap.parse_args(argv)
    products = read_products(args.csv)
    train, val = corpus.write_splits(products, args.out, args.seed, args.validation)
    print("wrote %d train and %d validation products to %s" % (len(train), len(val), args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
