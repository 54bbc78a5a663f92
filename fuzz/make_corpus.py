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


def main():
    for target, seeds in (("safetensors", safetensors_seeds()), ("shard_index", shard_index_seeds()),
                          ("tokenizer", tokenizer_seeds())):
        folder = HERE / "corpus" / target
        folder.mkdir(parents=True, exist_ok=True)
        for name, blob in seeds.items():
            (folder / name).write_bytes(blob)
        print(f"{folder}: {len(seeds)} seeds")


if __name__ == "__main__":
    main()
