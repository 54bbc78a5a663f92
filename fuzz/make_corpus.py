#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/).

Run from anywhere: python3 fuzz/make_corpus.py. The seeds are small valid and
invalid inputs; libFuzzer mutates them.
"""

import json
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent


def safetensors(header, data=b"", length=None, pad=True):
    text = header if isinstance(header, str) else json.dumps(header, separators=(",", ":"))
    raw = text.encode("utf-8")
    if pad:
        raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def safetensors_seeds():
    f32 = struct.pack("<6f", 1.5, -2, 3.25, 0, 1e-30, -7)
    f64 = struct.pack("<2d", 0.1, 1e300)
    f16 = struct.pack("<4H", 0x3C00, 0x0001, 0x7C00, 0x7E00)
    bf16 = struct.pack("<2H", 0x3F80, 0x7FC0)
    i64 = struct.pack("<2q", -3, 9007199254740993)
    i32 = struct.pack("<i", -5)
    u8 = bytes([0, 255])
    data = f32 + f64 + f16 + bf16 + i64 + i32 + u8
    offsets, header, at = {}, {"__metadata__": {"format": "pt"}}, 0
    for name, dtype, shape, blob in [("w", "F32", [2, 3], f32), ("b", "F64", [2], f64), ("h", "F16", [2, 2], f16),
                                     ("bf", "BF16", [2], bf16), ("ids", "I64", [2], i64), ("s", "I32", [], i32),
                                     ("u", "U8", [1, 1, 2], u8)]:
        header[name] = entry(dtype, shape, at, at + len(blob))
        at += len(blob)
    return {
        "valid_all_dtypes.safetensors": safetensors(header, data),
        "valid_empty.safetensors": safetensors({}),
        "valid_zero_size.safetensors": safetensors({"z": entry("F32", [0, 3], 0, 0), "x": entry("F32", [1], 0, 4)},
                                                   bytes(4)),
        "valid_unpadded.safetensors": safetensors({"x": entry("BOOL", [3], 0, 3)}, b"\x00\x01\x02", pad=False),
        "bad_short": b"\x01\x00\x00",
        "bad_truncated.safetensors": safetensors(header, data)[:-5],
        "bad_length.safetensors": safetensors({}, length=1 << 63),
        "bad_array.safetensors": safetensors([1, 2]),
        "bad_overlap.safetensors": safetensors({"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 4, 12)},
                                               bytes(12)),
        "bad_gap.safetensors": safetensors({"a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 8, 12)}, bytes(12)),
        "bad_duplicate.safetensors": safetensors('{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                                                 '"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', bytes(8)),
        "bad_shape.safetensors": safetensors({"w": entry("F32", [-1, 2.5], 0, 4)}, bytes(4)),
        "bad_metadata.safetensors": safetensors({"__metadata__": {"epoch": 3}}),
        "bad_dtype.safetensors": safetensors({"w": entry("F128", [1], 0, 16)}, bytes(16)),
    }


def shard_index_seeds():
    """Indexes over the fuzz target's fixed shards (fuzz_shard_index.cpp)."""
    one, two = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    valid = {"wte": one, "h.0.attn.w": one, "h.1.attn.w": two, "ln_f.weight": two}

    def index(weight_map, metadata=None):
        doc = {"weight_map": weight_map}
        if metadata is not None:
            doc = {"metadata": metadata, **doc}
        return json.dumps(doc, indent=2).encode("utf-8")

    return {
        "valid": index(valid, {"total_size": 96}),
        "valid_no_metadata": index(valid),
        "valid_with_empty_shard_unused": index(valid, {"format": "pt", "nested": {"a": [1, 2]}}),
        "bad_not_json": b'{"weight_map": {"wte": ',
        "bad_array": b'["model-00001-of-00002.safetensors"]',
        "bad_no_weight_map": index({}, {"total_size": 0}).replace(b"weight_map", b"weights"),
        "bad_weight_map_list": b'{"weight_map": ["wte"]}',
        "bad_names": index({**valid, "wte": "../" + one, "h.0.attn.w": "/abs/" + one, "x": 3, "y": "a\\b"}),
        "bad_absent": index({**valid, "ln_f.weight": "model-00003-of-00003.safetensors"}),
        "bad_in_no_shard": index({**valid, "ghost": one}),
        "bad_unlisted": index({k: v for k, v in valid.items() if k != "ln_f.weight"}),
        "bad_other_shard": index({**valid, "wte": two}),
        "bad_duplicated": index({**valid, "extra": "dup.safetensors"}),
        "bad_empty_shard": index({**valid, "ghost": "empty.safetensors"}),
        "bad_duplicate_key": b'{"weight_map": {"wte": "%s", "wte": "%s"}}' % (one.encode(), two.encode()),
        "bad_metadata": index(valid, [1]),
        "bad_deep": b'{"metadata": ' + b"[" * 40 + b"]" * 40 + b"}",
    }


def tokenizer_seeds():
    vocabulary = (HERE.parent / "tests/data/tokenizer/vocabulary.txt").read_bytes()
    merges = (HERE.parent / "tests/data/tokenizer/merges.txt").read_bytes()
    texts = ["Table, chair.", "stool, 24in. (set of 2)", "tables café €😀 aaaaa abc", "kid's\tdesk\n\r\f\v x--y",
             "CAFÉ Ω\u00a0noir", ""]
    seeds = {}
    for k, text in enumerate(texts):
        seeds[f"encode_{k}"] = b"\x00" + text.encode("utf-8")
    seeds["encode_invalid_utf8"] = b"\x00ab\xc3(\xed\xa0\x80\xff"
    seeds["product_0"] = b"\x01\x10Patio Table\ta chair. table, 24in."
    seeds["product_1"] = b"\x01\x02tables\t"
    seeds["decode_0"] = b"\x02" + struct.pack("<8h", 0, 47, 1, 23, 51, 34, 2, 45)
    seeds["decode_out_of_range"] = b"\x02" + struct.pack("<3h", 4, 67, -1)
    seeds["load_fixture"] = b"\x03" + vocabulary + b"\x00" + merges
    seeds["load_crlf"] = b"\x03" + vocabulary.replace(b"\n", b"\r\n") + b"\x00" + merges
    seeds["load_bad_merge"] = b"\x03<s>\n<sep>\n</s>\n<unk>\na\nb\x00#version: attn-bpe 1\na b\n"
    return seeds


def gguf_string(text):
    raw = text.encode("utf-8") if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def gguf(entries=(), tensors=(), version=3, alignment=32, counts=None):
    """A GGUF file: entries are (key, type id, value bytes); tensors (name, dims, ggml type, data, offset or None)."""
    infos, data, next_offset = b"", b"", 0
    for name, dims, ggml_type, blob, offset in tensors:
        offset = next_offset if offset is None else offset
        infos += gguf_string(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, ggml_type, offset)
        if offset >= len(data) and offset < 1 << 20:
            data += bytes(offset - len(data)) + blob
        next_offset = -(-(offset + len(blob)) // alignment) * alignment
    tensor_count, entry_count = counts or (len(tensors), len(entries))
    head = b"GGUF" + struct.pack("<IQQ", version, tensor_count, entry_count)
    head += b"".join(gguf_string(key) + struct.pack("<I", kind) + value for key, kind, value in entries) + infos
    if tensors:
        head += bytes(-len(head) % alignment)
    return head + data


def gguf_seeds():
    u32, string, array = 4, 8, 9

    def strings(*items):
        return struct.pack("<IQ", string, len(items)) + b"".join(gguf_string(s) for s in items)

    every_type = [("u8", 0, b"\xfa"), ("i8", 1, b"\x80"), ("u16", 2, struct.pack("<H", 65535)),
                  ("i16", 3, struct.pack("<h", -2)), ("u32", u32, struct.pack("<I", 7)), ("i32", 5, struct.pack("<i", -1)),
                  ("f32", 6, struct.pack("<f", 0.5)), ("b", 7, b"\x01"), ("s", string, gguf_string("llama")),
                  ("u64", 10, struct.pack("<Q", 1 << 63)), ("i64", 11, struct.pack("<q", -3)),
                  ("f64", 12, struct.pack("<d", 1e300)),
                  ("tokenizer.ggml.tokens", array, strings("<s>", "\u2581the", "")),
                  ("tokenizer.ggml.scores", array, struct.pack("<IQ2f", 6, 2, -1.0, 0.0)),
                  ("nested", array, struct.pack("<IQ", array, 2) + strings("a", "b") + strings())]
    f16_one = struct.pack("<H", 0x3C00)
    q8_0 = f16_one + bytes(range(32))
    q4_0 = f16_one + bytes(range(16))
    q4_k = f16_one * 2 + bytes(range(12)) + bytes(range(128))
    q5_k = f16_one * 2 + bytes(range(12)) + bytes(32) + bytes(range(128))
    q6_k = bytes(range(128)) + bytes(range(64)) + bytes(range(1, 17)) + f16_one
    all_tensors = [("f32", [2, 2], 0, struct.pack("<4f", 1, -2, 0.5, 3), None),
                   ("f16", [3], 1, struct.pack("<3H", 0x3C00, 0x0001, 0x7C00), None),
                   ("bf16", [2], 30, struct.pack("<2H", 0x3F80, 0x7FC0), None),
                   ("q8_0", [32, 1], 8, q8_0, None), ("q4_0", [32], 2, q4_0, None),
                   ("q4_k", [256], 12, q4_k, None), ("q5_k", [256], 13, q5_k, None), ("q6_k", [256], 14, q6_k, None)]
    one = [("w", [4], 0, bytes(16), None)]
    alignment_64 = [("general.alignment", u32, struct.pack("<I", 64))]
    return {
        "valid_every_type.gguf": gguf(every_type, all_tensors),
        "valid_empty.gguf": gguf(),
        "valid_v2.gguf": gguf([("general.architecture", string, gguf_string("llama"))], one, version=2),
        "valid_alignment_64.gguf": gguf(alignment_64, one + [("v", [8], 0, bytes(32), None)], alignment=64),
        "bad_magic": b"GGUG" + gguf()[4:],
        "bad_version_1": gguf(version=1),
        "bad_big_endian": gguf(version=0x03000000),
        "bad_kv_count": gguf(every_type[:1], counts=(0, 1 << 60)),
        "bad_tensor_count": gguf(counts=(1 << 60, 0)),
        "bad_string_length": gguf([("s", string, struct.pack("<Q", 1 << 62) + b"x")]),
        "bad_array_length": gguf([("a", array, struct.pack("<IQ", string, 1 << 60))]),
        "bad_dims_overflow.gguf": gguf(tensors=[("w", [1 << 32, 1 << 31, 2], 0, b"", None)]),
        "bad_n_dims.gguf": gguf(tensors=[("w", [1, 1, 1, 1, 1], 0, bytes(4), None)]),
        "bad_row.gguf": gguf(tensors=[("w", [48], 8, bytes(68), None)]),
        "bad_alignment_string.gguf": gguf([("general.alignment", string, gguf_string("32"))], one),
        "bad_alignment_48.gguf": gguf([("general.alignment", u32, struct.pack("<I", 48))], one),
        "bad_misaligned.gguf": gguf(tensors=one + [("v", [4], 0, bytes(16), 48)]),
        "bad_overlap.gguf": gguf(tensors=[("a", [16], 0, bytes(64), None), ("b", [8], 0, bytes(32), 32)]),
        "bad_duplicate_tensor.gguf": gguf(tensors=one + one),
        "bad_duplicate_key.gguf": gguf(every_type[:1] * 2),
        "bad_unsupported_type.gguf": gguf(tensors=[("w", [256], 11, bytes(110), None)]),
        "bad_deep.gguf": gguf([("d", array, struct.pack("<IQ", array, 1) * 4 + struct.pack("<IQ", 0, 0))]),
        "bad_truncated.gguf": gguf(every_type, all_tensors)[:-7],
        **gguf_tokenizer_seeds(),
    }


def gguf_tokenizer_seeds():
    """Vocabularies in tokenizer.ggml.*: a byte-level BPE and a SentencePiece one that build, and one
    of each malformed class attn/detail/text/gguf_vocabulary.hpp refuses."""
    string, array, int32, float32, u32, boolean = 8, 9, 5, 6, 4, 7

    def strings(items):
        return struct.pack("<IQ", string, len(items)) + b"".join(gguf_string(s) for s in items)

    def numbers(kind, code, items):
        return struct.pack(f"<IQ{len(items)}{code}", kind, len(items), *items)

    def text(value):
        return (string, gguf_string(value))

    printable = [b for b in range(256) if 33 <= b <= 126 or 0xA1 <= b <= 0xAC or b >= 0xAE]
    alphabet, extra = [], 0
    for b in range(256):
        alphabet.append(chr(b) if b in printable else chr(256 + extra))
        extra += b not in printable
    bpe_tokens = alphabet + ["\u0120t", "he", "\u0120the", "<|endoftext|>"]
    bpe = {"tokenizer.ggml.model": text("gpt2"), "tokenizer.ggml.pre": text("gpt-2"),
           "tokenizer.ggml.tokens": (array, strings(bpe_tokens)),
           "tokenizer.ggml.token_type": (array, numbers(int32, "i", [1] * 259 + [3])),
           "tokenizer.ggml.merges": (array, strings(["\u0120 t", "h e", "\u0120t he"])),
           "tokenizer.ggml.bos_token_id": (u32, struct.pack("<I", 259))}
    spm_tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + ["\u2581", "a", "b", "\u2581a", "ab"]
    spm = {"tokenizer.ggml.model": text("llama"), "tokenizer.ggml.tokens": (array, strings(spm_tokens)),
           "tokenizer.ggml.token_type": (array, numbers(int32, "i", [2, 3, 3] + [6] * 256 + [1] * 5)),
           "tokenizer.ggml.scores": (array, numbers(float32, "f", [0.0] * 262 + [-1.0, -2.0])),
           "tokenizer.ggml.add_bos_token": (boolean, b"\x01")}

    def file(entries, **changes):
        entries = {**entries, **changes}
        return gguf([(key, kind, value) for key, (kind, value) in entries.items() if value is not None])

    return {
        "valid_tokenizer_bpe.gguf": file(bpe),
        "valid_tokenizer_llama3.gguf": file(bpe, **{"tokenizer.ggml.pre": text("llama-bpe")}),
        "valid_tokenizer_spm.gguf": file(spm),
        "bad_tokenizer_tokens_int32.gguf": file(spm, **{"tokenizer.ggml.tokens": (array, numbers(int32, "i", [1, 2]))}),
        "bad_tokenizer_types_uint8.gguf": file(spm, **{"tokenizer.ggml.token_type": (array, numbers(0, "B", [1] * 264))}),
        "bad_tokenizer_scores_short.gguf": file(spm, **{"tokenizer.ggml.scores": (array, numbers(float32, "f", [0.0]))}),
        "bad_tokenizer_byte_token.gguf": file(spm, **{"tokenizer.ggml.tokens": (array, strings(spm_tokens[:3] + ["<0x-1>"] + spm_tokens[4:]))}),
        "bad_tokenizer_merge.gguf": file(bpe, **{"tokenizer.ggml.merges": (array, strings(["h zz"]))}),
        "bad_tokenizer_bos.gguf": file(bpe, **{"tokenizer.ggml.bos_token_id": (u32, struct.pack("<I", 260))}),
        "bad_tokenizer_pre.gguf": file(bpe, **{"tokenizer.ggml.pre": text("default")}),
    }


def main():
    for target, seeds in (("safetensors", safetensors_seeds()), ("shard_index", shard_index_seeds()),
                          ("tokenizer", tokenizer_seeds()), ("gguf", gguf_seeds())):
        folder = HERE / "corpus" / target
        folder.mkdir(parents=True, exist_ok=True)
        for name, blob in seeds.items():
            (folder / name).write_bytes(blob)
        print(f"{folder}: {len(seeds)} seeds")


if __name__ == "__main__":
    main()
