"""tools/references/regenerate.py: what it takes for rounding, and what it reports as a change."""

import json
import sys
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common import safetensors_io  # noqa: E402
from references import regenerate  # noqa: E402


def test_every_golden_script_exists_and_its_files_are_committed():
    for golden in regenerate.GOLDENS:
        assert regenerate.files_of(golden), golden.name
        if isinstance(golden.command, list):
            assert (regenerate.ROOT / golden.command[1]).is_file(), golden.command


def test_json_rounding_is_relative_and_nothing_else_may_change():
    old = {"about": "x", "ids": [1, 2], "p": [0.24703352950661273, 12.5]}
    new = {"about": "x", "ids": [1, 2], "p": [0.2470335295066124, 12.5]}
    assert 0 < regenerate.json_distance(old, new) < 1e-15
    assert regenerate.json_distance({"l": 1e6}, {"l": 1e6 + 1e-4}) == pytest.approx(1e-10)
    for changed in ({**new, "about": "y"}, {**new, "ids": [1, 3]}, {**new, "p": [0.2]}, {**new, "q": 1}):
        with pytest.raises(regenerate.Different):
            regenerate.json_distance(old, changed)


def safetensors_bytes(tmp_path, tensors):
    path = tmp_path / "t.safetensors"
    safetensors_io.write_safetensors(path, OrderedDict(tensors), metadata={"format": "test"})
    return path.read_bytes()


def test_safetensors_rounding_is_relative_to_the_array(tmp_path):
    logits = np.array([[10.0, -3.0], [1e-16, 2.0]])
    old = safetensors_bytes(tmp_path, [("ids", ("I64", np.array([3, 4]))), ("logits", ("F64", logits))])
    nudged = logits + np.array([[2e-14, 0.0], [1e-15, 0.0]])
    new = safetensors_bytes(tmp_path, [("ids", ("I64", np.array([3, 4]))), ("logits", ("F64", nudged))])
    assert regenerate.rounding_distance(Path("g.safetensors"), old, new) == pytest.approx(2e-15)
    other_ids = safetensors_bytes(tmp_path, [("ids", ("I64", np.array([3, 5]))), ("logits", ("F64", logits))])
    with pytest.raises(regenerate.Different, match="integers differ"):
        regenerate.rounding_distance(Path("g.safetensors"), old, other_ids)
    with pytest.raises(regenerate.Different, match="not a file of numbers"):
        regenerate.rounding_distance(Path("ids.txt"), b"1 2\n", b"1 3\n")


def test_a_float_golden_within_rounding_is_put_back_and_a_real_change_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(regenerate, "ROOT", tmp_path)
    path = tmp_path / "g.json"
    path.write_text(json.dumps({"p": [0.5]}))

    def golden(value):
        script = tmp_path / "write.py"
        script.write_text(f"import json; open({str(path)!r}, 'w').write(json.dumps({{'p': [{value!r}]}}))")
        return regenerate.Golden("g", [sys.executable, str(script)], ["g.json"], floats=True)

    options = type("Options", (), {"overwrite": False, "seeds": tmp_path})
    lines, changed = regenerate.regenerate(golden(0.5 + 1e-15), options)
    assert not changed and "kept" in lines[0] and json.loads(path.read_text()) == {"p": [0.5]}
    lines, changed = regenerate.regenerate(golden(0.25), options)
    assert changed and "CHANGED" in lines[0] and json.loads(path.read_text()) == {"p": [0.25]}
