"""tools/common/safetensors_io.py: the one strict reader (its three views) and the two writers.

The malformed files the reader refuses are listed in test_hf_reference.py, which reads through it."""

import json
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import safetensors_io  # noqa: E402


def test_bfloat16_rounding_matches_torch(tmp_path):
    values = np.random.default_rng(2).standard_normal((7, 5)).astype(np.float32) * 100
    values[0, :3] = [1.00390625, 1.01171875, -3.0e-39]  # ties to even and a subnormal
    expected = torch.from_numpy(values).to(torch.bfloat16).to(torch.float32).numpy()
    safetensors_io.write_streamed(tmp_path / "x.safetensors", {"a": (7, 5), "b": (2,)}, "BF16",
                                  lambda name, shape: values if name == "a" else np.array([1.5, -2.0], np.float32))
    tensors, dtypes = safetensors_io.read_float32(tmp_path / "x.safetensors")
    assert dtypes == {"a": "BF16", "b": "BF16"}
    np.testing.assert_array_equal(tensors["a"], expected)
    np.testing.assert_array_equal(tensors["b"], [1.5, -2.0])


def test_float16_is_read_widened(tmp_path):
    values = np.array([1.5, -0.000123, 65504.0], dtype=np.float16)
    header = json.dumps({"h": {"dtype": "F16", "shape": [3], "data_offsets": [0, 6]}}).encode()
    (tmp_path / "h.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + values.tobytes())
    tensors, dtypes = safetensors_io.read_float32(tmp_path / "h.safetensors")
    assert dtypes == {"h": "F16"} and tensors["h"].dtype == np.float32
    assert tensors["h"].tolist() == [float(v) for v in values]


def test_safetensors_errors_name_file_and_tensor(tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(b"\x01\x00")
    with pytest.raises(ValueError, match="too short for the 8-byte header"):
        safetensors_io.read_float32(path)
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 8)
    with pytest.raises(ValueError, match=r"tensor .w.: data_offsets \[0, 16\] outside the 8-byte data section"):
        safetensors_io.read_float32(path)
    header = json.dumps({"w": {"dtype": "I8", "shape": [1], "data_offsets": [0, 1]}}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0")
    with pytest.raises(ValueError, match="tensor w: dtype I8 is not one of F32, BF16, F16"):
        safetensors_io.read_float32(path)
    with pytest.raises(ValueError, match="safetensors dtype 'F64'"):
        safetensors_io.write_streamed(path, {"w": (1,)}, "F64", lambda n, s: np.zeros(s))


def test_native_round_trip_keeps_dtypes_order_and_metadata(tmp_path):
    tensors = OrderedDict([("z.ids", ("I64", np.array([3, -1, 2**40], dtype=np.int64))),
                           ("a.logits", ("F64", np.array([[0.1, -2.5]]))),
                           ("m.weight", ("F32", np.arange(6, dtype=np.float32).reshape(2, 3)))])
    path = tmp_path / "n.safetensors"
    size = safetensors_io.write_safetensors(path, tensors, metadata={"format": "test", "version": 1})
    assert size == path.stat().st_size
    back, metadata = safetensors_io.read_safetensors(path)
    assert list(back) == list(tensors) and metadata == {"format": "test", "version": "1"}
    for name, (dtype, array) in tensors.items():
        assert back[name].dtype == safetensors_io.WRITE_TYPES[dtype] and np.array_equal(back[name], array)


def test_native_reader_refuses_bfloat16_and_gaps(tmp_path):
    path = tmp_path / "b.safetensors"
    safetensors_io.write_streamed(path, {"b": (2,)}, "BF16", lambda name, shape: np.ones(shape, np.float32))
    with pytest.raises(safetensors_io.SafetensorsError, match="tensor 'b': BF16 has no NumPy dtype"):
        safetensors_io.read_safetensors(path)
    header = json.dumps({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}).encode()
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 8)
    with pytest.raises(safetensors_io.SafetensorsError, match=f"{path}: tensor 'w' starts at 4, not at 0 \\(gap\\)"):
        safetensors_io.read_safetensors(path)
