"""safetensors files as the peers need them: written one tensor at a time, read as float32.

Written as float32 or bfloat16, read from those and float16; bfloat16 is kept as its 16-bit
pattern on disk and widened exactly (bits << 16) when read, so every peer computes on the
same float32 values.
"""
import json
import math
import struct
from collections import OrderedDict
from pathlib import Path

import numpy as np

ITEMSIZE = {"F32": 4, "BF16": 2}
READ_ITEMSIZE = dict(ITEMSIZE, F16=2)


def float32_to_bfloat16_bits(values):
    """float32 array -> uint16 bfloat16 patterns, rounded to nearest even (finite input)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounding = np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return ((bits + rounding) >> np.uint32(16)).astype(np.uint16)


def bfloat16_bits_to_float32(bits):
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def write(path, shapes, dtype, make_tensor, metadata=None):
    """Writes tensors named by `shapes` (name -> shape, in file order) in `dtype` ("F32" or
    "BF16"); make_tensor(name, shape) returns each float32 array just before it is written,
    so only one tensor is held at a time."""
    if dtype not in ITEMSIZE:
        raise ValueError(f"safetensors dtype {dtype!r}: expected one of {sorted(ITEMSIZE)}")
    header, offset = OrderedDict(), 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, shape in shapes.items():
        size = ITEMSIZE[dtype] * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data section starts 8-aligned
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for name, shape in shapes.items():
            values = np.asarray(make_tensor(name, shape), dtype=np.float32)
            if values.shape != tuple(shape):
                raise ValueError(f"{path}: tensor {name}: made shape {values.shape}, declared {tuple(shape)}")
            out.write((float32_to_bfloat16_bits(values) if dtype == "BF16" else values).tobytes())


def read_float32(path):
    """-> (OrderedDict name -> float32 array in file order, {name: stored dtype})."""
    path = Path(path)
    raw = path.read_bytes()
    if len(raw) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise ValueError(f"{path}: header length {n} runs past the end ({len(raw)} bytes)")
    header = json.loads(raw[8:8 + n].decode("utf-8"), object_pairs_hook=OrderedDict)
    header.pop("__metadata__", None)
    data = memoryview(raw)[8 + n:]
    tensors, dtypes = OrderedDict(), {}
    for name, entry in header.items():
        dtype, shape = entry["dtype"], tuple(entry["shape"])
        if dtype not in READ_ITEMSIZE:
            raise ValueError(f"{path}: tensor {name}: dtype {dtype} is not one of F32, BF16, F16")
        begin, end = entry["data_offsets"]
        if not 0 <= begin <= end <= len(data) or end - begin != READ_ITEMSIZE[dtype] * math.prod(shape):
            raise ValueError(f"{path}: tensor {name}: offsets {begin}..{end} do not hold shape {shape} "
                             f"of {dtype} in a {len(data)}-byte data section")
        chunk = data[begin:end]
        if dtype == "BF16":
            values = bfloat16_bits_to_float32(np.frombuffer(chunk, dtype="<u2"))
        elif dtype == "F16":
            values = np.frombuffer(chunk, dtype="<f2").astype(np.float32)
        else:
            values = np.frombuffer(chunk, dtype="<f4").copy()
        tensors[name], dtypes[name] = values.reshape(shape), dtype
    return tensors, dtypes
