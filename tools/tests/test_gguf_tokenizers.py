"""tools/references/gguf_tokenizers.py: GPT-2's byte alphabet, the corpus read line by line, and (when the
pinned llama.cpp tree is installed) a cut that keeps a consistent vocabulary and the ids llama_peer gives."""

import json
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))
from benchmarks.peers import hf_to_gguf, llamacpp_setup  # noqa: E402
from references import gguf_tokenizers  # noqa: E402


def test_byte_alphabet_is_gpt2s():
    alphabet = gguf_tokenizers.byte_alphabet()
    assert len(alphabet) == 256
    assert "\u0120" in alphabet and "\u010a" in alphabet  # the space and "\n"
    assert "a" in alphabet and " " not in alphabet


def test_corpus_lines_keep_unicode_line_separators(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(json.dumps("a\u2028b\x85c", ensure_ascii=False) + "\n" + json.dumps("d") + "\n",
                      encoding="utf-8")
    monkeypatch.setattr(gguf_tokenizers, "CORPUS", corpus)
    assert gguf_tokenizers.corpus_texts() == ["a\u2028b\x85c", "d"]


def installed_peer():
    source = llamacpp_setup.DEFAULT_CACHE / f"llama.cpp-{llamacpp_setup.LLAMA_CPP_COMMIT[:12]}"
    if not (source / "models" / "ggml-vocab-gpt-2.gguf").is_file():
        pytest.skip("the pinned llama.cpp tree is not installed (tools/benchmarks/peers/llamacpp_setup.py)")
    return llamacpp_setup.setup()


def test_cut_keeps_bytes_merges_and_specials(tmp_path):
    peer = installed_peer()
    gguf = hf_to_gguf.load_gguf(peer.source / "gguf-py")
    path = tmp_path / "gpt2.gguf"
    count = gguf_tokenizers.cut(peer.source / "models" / "ggml-vocab-gpt-2.gguf", 300, gguf, path)
    reader = gguf.GGUFReader(path, "r")
    tokens = gguf_tokenizers.field_value(reader.fields["tokenizer.ggml.tokens"], gguf)
    merges = gguf_tokenizers.field_value(reader.fields["tokenizer.ggml.merges"], gguf)
    assert count == len(tokens) == 301  # 300 ids, then <|endoftext|>
    assert tokens[-1] == "<|endoftext|>"
    assert gguf_tokenizers.byte_alphabet() <= set(tokens)
    vocabulary = set(tokens)
    assert merges and all(m.split(" ")[0] in vocabulary and m.split(" ")[1] in vocabulary
                          and m.replace(" ", "") in vocabulary for m in merges)
    assert gguf_tokenizers.llama_ids(peer, path, [" the", ""]) == ["262", ""]
