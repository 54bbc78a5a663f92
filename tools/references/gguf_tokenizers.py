#!/usr/bin/python3
"""Write tests/data/gguf/tokenizer/: small GGUF vocabulary-only files cut from llama.cpp's own test
vocabularies (models/ggml-vocab-*.gguf of the pinned tree), and for each the ids llama.cpp's tokenizer
gives on the tokenizer corpus (tests/tokenizer_reference/corpus.jsonl), for tests/test_gguf_tokenizer.cpp
to compare attn's ids with, without llama.cpp at test time.

    /usr/bin/python3 tools/references/gguf_tokenizers.py [--cache ~/.cache/attn-peers]
    /usr/bin/python3 tools/references/gguf_tokenizers.py --full --compare BUILD/tests/attn_tokenizer_reference

The second form writes nothing into the tree: it runs llama.cpp on the corpus with the pinned tree's
whole vocabularies (gpt-2, llama-bpe, llama-spm, qwen2, mpt, starcoder, refact, command-r, phi-3) and
prints, for each, how many lines attn's ids (attn_tokenizer_reference gguf) match llama.cpp's: on the
corpus, on 500 corpus lines with the vocabulary's special tokens spliced in (with white space around
some), on 500 byte strings that are not UTF-8 (cut characters, stray bytes, overlong forms, surrogates),
and on llama.cpp's own test texts for the vocabulary (models/ggml-vocab-*.gguf.inp).

The pinned llama.cpp peer (tools/benchmarks/peers/llamacpp_setup.py) gives gguf-py, the vocabularies and
llama_peer, whose `tokenize` command is llama_tokenize(add_special = true, parse_special = true) on the
vocabulary alone.

Each cut keeps the first tokens of the vocabulary (`KEEP` ids; BPE vocabularies grow by merges, so the
first ids are the bytes and the earliest merges), every single-byte (BPE) or single-character
(SentencePiece) token, and every special (control, user-defined, unknown) token, renumbered in their
order; BPE merges whose two parts and result are all kept, in their order; scores and token types as
they were. The cut is a tokenizer of its own: llama.cpp and attn both read the cut file.
Files, tokenizer.ggml.pre in brackets:
  gpt2.gguf (gpt-2), llama_bpe.gguf (llama-bpe: Llama 3's pattern, ignore_merges, a beginning-of-text
  token), qwen2.gguf (qwen2), starcoder.gguf (starcoder: every digit alone, then GPT-2's pattern),
  llama_spm.gguf (SentencePiece, tokenizer.ggml.model llama: scores, byte fallback);
  <name>.ids: one line of space-separated ids for every STRIDE-th corpus line (lines 1, 1 + STRIDE, ...:
  a sample of every category that keeps the goldens small; --full compares every line).
Output is deterministic: the same tree and corpus give the same bytes.
"""

import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TOOLS))  # tools/: the role packages

from benchmarks.peers import hf_to_gguf, llamacpp_setup  # noqa: E402

ROOT = TOOLS.parent
OUT = ROOT / "tests" / "data" / "gguf" / "tokenizer"
CORPUS = ROOT / "tests" / "tokenizer_reference" / "corpus.jsonl"

# name of the cut -> (the pinned tree's vocabulary, ids kept from the start)
CUTS = {
    "gpt2": ("gpt-2", 2000),
    "llama_bpe": ("llama-bpe", 2000),
    "qwen2": ("qwen2", 2000),
    "starcoder": ("starcoder", 2000),
    "llama_spm": ("llama-spm", 2000),
}
STRIDE = 8
FULL = ["gpt-2", "llama-bpe", "llama-spm", "qwen2", "mpt", "starcoder", "refact", "command-r", "phi-3"]

TOKENIZER_ARRAYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
                    "tokenizer.ggml.merges")
SPECIAL_TYPES = (2, 3, 4)  # unknown, control, user-defined
BYTE_ALPHABET = None


def byte_alphabet():
    """GPT-2's byte-level alphabet: the 256 one-character tokens of a byte-level vocabulary."""
    printable = [b for b in range(256) if ord("!") <= b <= ord("~") or 0xA1 <= b <= 0xAC or b >= 0xAE]
    chars, extra = [], 0
    for b in range(256):
        if b in printable:
            chars.append(chr(b))
        else:
            chars.append(chr(256 + extra))
            extra += 1
    return set(chars)


def field_value(field, gguf):
    """A reader field's value: a scalar, a string, or a list."""
    kind = field.types[0]
    if kind == gguf.GGUFValueType.ARRAY:
        if field.types[-1] == gguf.GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode("utf-8") for i in field.data]
        return [field.parts[i].tolist()[0] for i in field.data]
    if kind == gguf.GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8")
    return field.parts[field.data[0]].tolist()[0]


def cut(source, keep, gguf, out_path):
    """Writes the cut of the vocabulary `source` (see the module comment) to out_path."""
    reader = gguf.GGUFReader(source, "r")
    fields = {name: field for name, field in reader.fields.items() if not name.startswith("GGUF.")}
    tokens = field_value(fields["tokenizer.ggml.tokens"], gguf)
    types = field_value(fields["tokenizer.ggml.token_type"], gguf) if "tokenizer.ggml.token_type" in fields else None
    scores = field_value(fields["tokenizer.ggml.scores"], gguf) if "tokenizer.ggml.scores" in fields else None
    merges = field_value(fields["tokenizer.ggml.merges"], gguf) if "tokenizer.ggml.merges" in fields else None
    model = field_value(fields["tokenizer.ggml.model"], gguf)
    alphabet = byte_alphabet()
    kept = []
    for i, token in enumerate(tokens):
        single = token in alphabet if model == "gpt2" else len(token) == 1
        special = types is not None and types[i] in SPECIAL_TYPES
        if i < keep or single or special or token.startswith("<0x"):
            kept.append(i)
    new_id = {old: new for new, old in enumerate(kept)}
    kept_text = {tokens[i] for i in kept}
    writer = gguf.GGUFWriter(out_path, field_value(fields["general.architecture"], gguf))
    for name, field in fields.items():
        if name in TOKENIZER_ARRAYS or name == "general.architecture" or name.endswith("vocab_size"):
            continue
        value = field_value(field, gguf)
        if name.endswith("_token_id"):
            if value not in new_id:
                continue
            value = new_id[value]
        if name == "general.name":
            value = f"{value} (attn test cut)"
        kind = field.types[0]
        if kind == gguf.GGUFValueType.ARRAY:
            writer.add_array(name, value)
        else:
            writer.add_key_value(name, value, kind)
    writer.add_token_list([tokens[i] for i in kept])
    if types is not None:
        writer.add_token_types([types[i] for i in kept])
    if scores is not None:
        writer.add_token_scores([scores[i] for i in kept])
    if merges is not None:
        kept_merges = []
        for merge in merges:
            left, _, right = merge.partition(" ")
            if left in kept_text and right in kept_text and left + right in kept_text:
                kept_merges.append(merge)
        writer.add_token_merges(kept_merges)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return len(kept)


def corpus_texts():
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").split("\n") if line]


def llama_ids(peer, vocabulary, texts):
    """llama.cpp's ids of each text, as lines of space-separated ids."""
    with tempfile.TemporaryDirectory() as scratch:
        texts_path = Path(scratch) / "texts.bin"
        with open(texts_path, "wb") as out:
            for text in texts:
                data = text if isinstance(text, bytes) else text.encode("utf-8")
                out.write(f"{len(data)}\n".encode() + data + b"\n")
        result = subprocess.run([str(peer.harness), "--backends", str(peer.backends), "--model", str(vocabulary),
                                 "tokenize", "--texts", str(texts_path)], check=True, capture_output=True)
    lines = result.stdout.decode("ascii").split("\n")[:-1]
    if len(lines) != len(texts):
        raise RuntimeError(f"llama_peer gave {len(lines)} lines of ids for {len(texts)} texts")
    return lines


def write_goldens(peer, gguf):
    OUT.mkdir(parents=True, exist_ok=True)
    texts = corpus_texts()[::STRIDE]
    for name, (source, keep) in CUTS.items():
        path = OUT / f"{name}.gguf"
        count = cut(peer.source / "models" / f"ggml-vocab-{source}.gguf", keep, gguf, path)
        ids = llama_ids(peer, path, texts)
        (OUT / f"{name}.ids").write_text("\n".join(ids) + "\n", encoding="ascii")
        print(f"{path.relative_to(ROOT)}: {count} tokens, {len(texts)} lines of ids")


def with_special_tokens(texts, specials, count, seed=2026):
    """`count` corpus lines with 1 to 3 special tokens' texts spliced in, some with white space around
    them (what lstrip / rstrip and the partition's order act on)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        text = rng.choice(texts)[:200]
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(text))
            token = rng.choice(specials)
            text = text[:at] + rng.choice(["", " ", "\n", "  ", "\t "]) + token + rng.choice(["", " ", "\n", " \n"]) + text[at:]
        out.append(text)
    return out


def special_texts_of(vocabulary, gguf):
    """The texts llama.cpp cuts out as special tokens: types unknown, control and user-defined."""
    reader = gguf.GGUFReader(vocabulary, "r")
    tokens = field_value(reader.fields["tokenizer.ggml.tokens"], gguf)
    types = field_value(reader.fields["tokenizer.ggml.token_type"], gguf)
    return [t for t, kind in zip(tokens, types) if kind in SPECIAL_TYPES]


def not_utf8(texts, count, seed=2026):
    """`count` byte strings that are not UTF-8: corpus lines cut inside a character, random bytes spliced
    into them, lone continuation bytes, overlong forms, surrogates."""
    rng = random.Random(seed)
    pieces = [b"\x80", b"\xbf\xbf", b"\xc3", b"\xe6\x97", b"\xf0\x9f\x98", b"\xff", b"\xfe", b"\xc0\x80",
              b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\xc3(", b"a\xe9b"]
    out = []
    for _ in range(count):
        data = rng.choice(texts).encode("utf-8")[:300]
        for _ in range(rng.randint(1, 4)):
            at = rng.randint(0, len(data))
            data = data[:at] + (rng.choice(pieces) if rng.random() < 0.7 else bytes([rng.randint(0x80, 0xff)])) + data[at:]
        if rng.random() < 0.3:
            data = data[:rng.randint(0, len(data))]
        out.append(data)
    return out


def compare_one(peer, compare, vocabulary, texts, scratch, tag):
    if texts and isinstance(texts[0], bytes):
        corpus = Path(scratch) / f"{tag}.bin"
        corpus.write_bytes(b"".join(f"{len(t)}\n".encode() + t + b"\n" for t in texts))
    else:
        corpus = Path(scratch) / f"{tag}.jsonl"
        corpus.write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts), encoding="utf-8")
    expected = Path(scratch) / f"{tag}.ids"
    expected.write_text("\n".join(llama_ids(peer, vocabulary, texts)) + "\n", encoding="ascii")
    result = subprocess.run([str(compare), "gguf", str(corpus), str(expected), str(vocabulary)],
                            capture_output=True, text=True)
    print(f"{tag}: " + (result.stdout.strip() or result.stderr.strip()).replace(str(vocabulary) + ": ", ""))
    if result.returncode != 0:
        print(result.stderr.strip()[:3000])
    return result.returncode == 0


def compare_full(peer, compare, gguf):
    texts = corpus_texts()
    ok = True
    with tempfile.TemporaryDirectory() as scratch:
        for source in FULL:
            vocabulary = peer.source / "models" / f"ggml-vocab-{source}.gguf"
            ok &= compare_one(peer, compare, vocabulary, texts, scratch, f"{source} corpus")
            specials = special_texts_of(vocabulary, gguf)
            if specials:
                ok &= compare_one(peer, compare, vocabulary, with_special_tokens(texts, specials, 500), scratch,
                                  f"{source} corpus with special tokens")
            ok &= compare_one(peer, compare, vocabulary, not_utf8(texts, 500), scratch, f"{source} not UTF-8")
            tests = vocabulary.with_name(vocabulary.name + ".inp")
            if tests.is_file():  # llama.cpp's own test texts (test-tokenizer-0)
                cases = tests.read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
                ok &= compare_one(peer, compare, vocabulary, [c for c in cases if c], scratch,
                                  f"{source} llama.cpp's test texts")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", type=Path, default=llamacpp_setup.DEFAULT_CACHE)
    parser.add_argument("--full", action="store_true", help="compare on the whole vocabularies; write nothing")
    parser.add_argument("--compare", type=Path, help="attn_tokenizer_reference (for --full)")
    args = parser.parse_args()
    peer = llamacpp_setup.setup(args.cache)
    gguf = hf_to_gguf.load_gguf(peer.source / "gguf-py")
    if args.full:
        if not args.compare:
            parser.error("--full needs --compare")
        sys.exit(compare_full(peer, args.compare, gguf))
    write_goldens(peer, gguf)


if __name__ == "__main__":
    main()
