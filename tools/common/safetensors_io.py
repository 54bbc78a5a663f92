"""safetensors files: one strict reader, and the writers of the store model's files and the peers'.

The reader refuses anything but one well-formed file whose tensors tile its data section
exactly (no gaps, overlaps, trailing bytes or unknown dtypes), naming the file and the
tensor. It hands the tensors out three ways:

  read_safetensors   each tensor in its own NumPy dtype (bfloat16 has none, and is refused)
  read_float32       F32, BF16, F16 widened exactly to float32 (the peers compute on these)
  read_float64       every float dtype widened exactly to float64, integers to int64

bfloat16 is the top half of a float32, so widening it is exact (bits << 16).
"""

import json
import math
import struct
from collections import OrderedDict
from pathlib import Path

import numpy as np

MAX_HEADER = 100 * 1024 * 1024
SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
NUMPY_TYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
               "U8": "u1", "BOOL": "u1"}
FLOAT_TYPES = ("F64", "F32", "F16", "BF16")


class SafetensorsError(ValueError):
    """A safetensors file the reader refuses, with the file, the tensor and what is wrong."""


def _check_entry(where, entry, body_size):
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        raise SafetensorsError(f"{where}: entry must have exactly dtype, shape, data_offsets: {entry!r}")
    dtype, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
    if dtype not in SIZES:
        raise SafetensorsError(f"{where}: unknown dtype {dtype!r}")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in shape):
        raise SafetensorsError(f"{where}: bad shape {shape!r}")
    if (not isinstance(offsets, list) or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
            or not 0 <= offsets[0] <= offsets[1] <= body_size):
        raise SafetensorsError(f"{where}: data_offsets {offsets!r} outside the {body_size}-byte data section")
    expected = math.prod(shape) * SIZES[dtype]
    if offsets[1] - offsets[0] != expected:
        raise SafetensorsError(f"{where}: {offsets[1] - offsets[0]} bytes for {dtype} {shape} ({expected} bytes)")


def parse(path):
    """-> (OrderedDict name -> (dtype, shape tuple, raw little-endian bytes) in header order,
    metadata dict). Raises SafetensorsError for a file that is not exactly well-formed."""
    path = Path(path)
    data = path.read_bytes()
    if len(data) < 8:
        raise SafetensorsError(f"{path}: {len(data)} bytes, too short for the 8-byte header length")
    (header_length,) = struct.unpack("<Q", data[:8])
    if header_length > min(MAX_HEADER, len(data) - 8):
        raise SafetensorsError(f"{path}: header length {header_length} exceeds the file ({len(data)} bytes) "
                               f"or the {MAX_HEADER} byte limit")
    try:
        header = json.loads(data[8:8 + header_length].decode("utf-8"), object_pairs_hook=OrderedDict)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SafetensorsError(f"{path}: header is not JSON ({error})") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: header is not a JSON object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsError(f"{path}: __metadata__ must map strings to strings")
    body = memoryview(data)[8 + header_length:]
    tensors, spans = OrderedDict(), []
    for name, entry in header.items():
        _check_entry(f"{path}: tensor {name!r}", entry, len(body))
        begin, end = entry["data_offsets"]
        raw = body[begin:end]
        if entry["dtype"] == "BOOL" and np.any(np.frombuffer(raw, dtype="u1") > 1):
            raise SafetensorsError(f"{path}: tensor {name!r}: BOOL bytes other than 0 and 1")
        tensors[name] = (entry["dtype"], tuple(entry["shape"]), raw)
        spans.append((begin, end, name))
    position = 0
    for begin, end, name in sorted(spans):
        if begin != position:
            raise SafetensorsError(f"{path}: tensor {name!r} starts at {begin}, not at {position} "
                                   f"({'overlap' if begin < position else 'gap'})")
        position = end
    if position != len(body):
        raise SafetensorsError(f"{path}: {len(body) - position} bytes after the last tensor")
    return tensors, metadata


def bfloat16_bits_to_float32(bits):
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def float32_to_bfloat16_bits(values):
    """float32 array -> uint16 bfloat16 patterns, rounded to nearest even (finite input)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounding = np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return ((bits + rounding) >> np.uint32(16)).astype(np.uint16)


def read_safetensors(path):
    """-> (OrderedDict name -> NumPy array in the stored dtype, in header order; metadata)."""
    tensors, metadata = parse(path)
    arrays = OrderedDict()
    for name, (dtype, shape, raw) in tensors.items():
        if dtype == "BF16":
            raise SafetensorsError(f"{path}: tensor {name!r}: BF16 has no NumPy dtype (read_float32 widens it)")
        arrays[name] = np.frombuffer(raw, dtype=NUMPY_TYPES[dtype]).reshape(shape).copy()
    return arrays, metadata


def read_float32(path):
    """-> (OrderedDict name -> float32 array in header order, {name: stored dtype}); F32, BF16, F16 only."""
    tensors, _ = parse(path)
    arrays, dtypes = OrderedDict(), {}
    for name, (dtype, shape, raw) in tensors.items():
        if dtype == "BF16":
            values = bfloat16_bits_to_float32(np.frombuffer(raw, dtype="<u2"))
        elif dtype in ("F32", "F16"):
            values = np.frombuffer(raw, dtype=NUMPY_TYPES[dtype]).astype(np.float32)
        else:
            raise SafetensorsError(f"{path}: tensor {name}: dtype {dtype} is not one of F32, BF16, F16")
        arrays[name], dtypes[name] = values.reshape(shape), dtype
    return arrays, dtypes


def read_float64(path):
    """-> (OrderedDict name -> array in header order, metadata): floats as float64 (exact), integers
    (and BOOL) as int64."""
    tensors, metadata = parse(path)
    arrays = OrderedDict()
    for name, (dtype, shape, raw) in tensors.items():
        if dtype == "BF16":
            values = bfloat16_bits_to_float32(np.frombuffer(raw, dtype="<u2")).astype(np.float64)
        elif dtype in FLOAT_TYPES:
            values = np.frombuffer(raw, dtype=NUMPY_TYPES[dtype]).astype(np.float64)
        else:
            values = np.frombuffer(raw, dtype=NUMPY_TYPES[dtype]).astype(np.int64)
        arrays[name] = values.reshape(shape)
    return arrays, metadata


# ----------------------------------------------------------------------------
# writers


WRITE_TYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I64": np.dtype("<i8"), "I32": np.dtype("<i4")}
STREAMED_ITEMSIZE = {"F32": 4, "BF16": 2}


def header_bytes(header):
    """The length prefix and the compact ASCII JSON header, padded with spaces so that the data
    starts 8-aligned: byte for byte what the safetensors library writes for the same header."""
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


def write_safetensors(path, tensors, metadata=None):
    """tensors: ordered mapping name -> (dtype name, numpy array), dtype one of F32, F64, I64, I32;
    the tensors in that order, `__metadata__` last. Returns bytes written."""
    header = OrderedDict()
    blobs = []
    offset = 0
    for name, (dtype, array) in tensors.items():
        data = np.ascontiguousarray(np.asarray(array, dtype=WRITE_TYPES[dtype])).tobytes()
        header[name] = {"dtype": dtype, "shape": [int(d) for d in np.shape(array)],
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    return write_blobs(path, header, blobs)


def write_blobs(path, header, blobs):
    """Writes a file of `header` (its data_offsets already set, in this order) and the tensors'
    bytes one after another; returns the file's size."""
    prefix = header_bytes(header)
    with open(path, "wb") as f:
        f.write(prefix)
        for blob in blobs:
            f.write(blob)
    return len(prefix) + sum(len(blob) for blob in blobs)


def write_streamed(path, shapes, dtype, make_tensor, metadata=None):
    """Writes tensors named by `shapes` (name -> shape, in file order) in `dtype` ("F32" or
    "BF16"); make_tensor(name, shape) returns each float32 array just before it is written,
    so only one tensor is held at a time (checkpoints of real model sizes)."""
    if dtype not in STREAMED_ITEMSIZE:
        raise ValueError(f"safetensors dtype {dtype!r}: expected one of {sorted(STREAMED_ITEMSIZE)}")
    header, offset = OrderedDict(), 0
    for name, shape in shapes.items():
        size = STREAMED_ITEMSIZE[dtype] * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    with open(path, "wb") as out:
        out.write(header_bytes(header))
        for name, shape in shapes.items():
            values = np.asarray(make_tensor(name, shape), dtype=np.float32)
            if values.shape != tuple(shape):
                raise ValueError(f"{path}: tensor {name}: made shape {values.shape}, declared {tuple(shape)}")
            out.write((float32_to_bfloat16_bits(values) if dtype == "BF16" else values).tobytes())
