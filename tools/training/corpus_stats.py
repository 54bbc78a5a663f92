#!/usr/bin/python3
"""Statistics of the synthetic store corpus (tools/training/corpus.py).

Usage:
    /usr/bin/python3 tools/training/corpus_stats.py [--seed 2026] [--count 43000]
"""

import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tools/: the role packages
from training import corpus  # noqa: E402

COMMON = {"and", "with", "of", "set", "the", "a", "an", "for", "in", "to", "on", "or",
          "piece", "pack", "by", "x", "inch", "in", "over"}

_TOK_RE = re.compile(r"[a-z0-9']+|[^\sa-z0-9']")
_SENT_RE = re.compile(r"[^.]*\.")


def tokens(text):
    return _TOK_RE.findall(text)


def sentences(text):
    return [s.strip() for s in _SENT_RE.findall(text) if s.strip()]


def name_ngram_in(name_words, desc_words, n):
    if len(name_words) < n:
        return False
    grams = {tuple(name_words[i:i + n]) for i in range(len(name_words) - n + 1)}
    return any(tuple(desc_words[i:i + n]) in grams for i in range(len(desc_words) - n + 1))


def compute(records):
    out = collections.OrderedDict()
    out["products"] = len(records)
    out["departments"] = len({r["department"] for r in records})
    out["product types"] = len({r["type"] for r in records})
    words = collections.Counter()
    sent_counter = collections.Counter()
    pat_counter = collections.Counter()
    lengths, name_lengths, total_lengths = [], [], []
    empty = 0
    rep_raw = rep_content = rep2 = rep3 = 0
    nonempty = 0
    for r in records:
        name, desc = r["name"], r["description"]
        words.update(name.split())
        words.update(desc.split())
        name_lengths.append(len(name.split()))
        if not desc:
            empty += 1
            continue
        nonempty += 1
        for s in sentences(desc):
            sent_counter[s] += 1
        for p in (r["patterns"] or []):
            pat_counter[p] += 1
        dt = tokens(desc)
        lengths.append(len(dt))
        total_lengths.append(len(tokens(name)) + len(dt) + 3)
        nw = tokens(name)
        dset = set(dt)
        if any(w in dset for w in nw):
            rep_raw += 1
        if any(w in dset for w in nw if w not in COMMON and not w.isdigit()):
            rep_content += 1
        if name_ngram_in(nw, dt, 2):
            rep2 += 1
        if name_ngram_in(nw, dt, 3):
            rep3 += 1
    lengths.sort()
    total_lengths.sort()
    all_sent = sum(sent_counter.values())
    all_pat = sum(pat_counter.values())
    top_pat, top_n = pat_counter.most_common(1)[0]
    out["distinct words"] = len(words)
    out["empty descriptions"] = "%d (%.1f%%)" % (empty, 100.0 * empty / len(records))
    out["distinct sentences / all sentences"] = "%d / %d (%.1f%%)" % (
        len(sent_counter), all_sent, 100.0 * len(sent_counter) / all_sent)
    out["distinct sentence patterns"] = len(pat_counter)
    out["most common sentence pattern"] = "%s: %d / %d = %.2f%%" % (
        top_pat, top_n, all_pat, 100.0 * top_n / all_pat)
    out["most common sentence"] = "%r x %d" % sentence_top(sent_counter)
    out["median description length (tokens)"] = lengths[len(lengths) // 2]
    out["description length p10 / p90 / max (tokens)"] = "%d / %d / %d" % (
        lengths[len(lengths) // 10], lengths[len(lengths) * 9 // 10], lengths[-1])
    out["<s> name <sep> desc </s> > 160 tokens"] = sum(1 for x in total_lengths if x > 160)
    out["median name length (words)"] = sorted(name_lengths)[len(name_lengths) // 2]
    out["non-empty descs repeating a name word (raw)"] = "%d / %d (%.1f%%)" % (
        rep_raw, nonempty, 100.0 * rep_raw / nonempty)
    out["non-empty descs repeating a name word (excl. common words)"] = "%d / %d (%.1f%%)" % (
        rep_content, nonempty, 100.0 * rep_content / nonempty)
    out["non-empty descs repeating a 2-word run of the name"] = "%d (%.1f%%)" % (
        rep2, 100.0 * rep2 / nonempty)
    out["non-empty descs repeating a 3-word run of the name"] = "%d (%.1f%%)" % (
        rep3, 100.0 * rep3 / nonempty)
    return out


def sentence_top(counter):
    s, n = counter.most_common(1)[0]
    return s, n


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=corpus.DEFAULT_SEED)
    ap.add_argument("--count", type=int, default=corpus.DEFAULT_COUNT)
    args = ap.parse_args(argv)
    records = corpus.generate_records(args.seed, args.count)
    for k, v in compute(records).items():
        print("%-62s %s" % (k + ":", v))
    products = [(r["name"], r["description"]) for r in records]
    train, val = corpus.split(products, args.seed)
    phrase = corpus.CONTROLLED_PHRASE
    follow = collections.Counter()
    for _, d in train:
        for m in re.finditer(re.escape(phrase) + r"([a-z]+)", d):
            follow[m.group(1)] += 1
    print("%-62s %d %s" % ("train descs with %r:" % phrase,
                           sum(1 for _, d in train if phrase in d), dict(sorted(follow.items()))))
    ex = [i for i, p in enumerate(val) if p[0] == corpus.EXEMPLAR_VALIDATION_NAME]
    print("%-62s %s" % ("exemplar position in validation:", ex))
    return 0


if __name__ == "__main__":
    sys.exit(main())
