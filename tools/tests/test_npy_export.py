"""inspect --npy: NumPy loads attention.npy and logits.npy directly, with the shapes, dtype and
values of inspect --json for the same text.

ctest runs this file with ATTN_INSPECT set to the built inspect (test tools_npy_export). CI's
plain `pytest tools/tests` has no build to point at, so there it skips, saying so.
"""

import json
import os
import subprocess
import tempfile

import numpy as np
import pytest

INSPECT = os.environ.get("ATTN_INSPECT")
pytestmark = pytest.mark.skipif(
    not INSPECT, reason="ATTN_INSPECT is not set; ctest runs this test with the built inspect (tools_npy_export)")


def inspect(*args):
    return subprocess.run([INSPECT, *args], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("text", [
    ["--name", "double chaise patio furniture cover", "--description", "protect your outdoor patio furniture."],
    ["--ids", "0,5,6,1,2"],
])
def test_npy_files_equal_inspect_json(text):
    with tempfile.TemporaryDirectory() as directory:
        inspect(*text, "--npy", directory)
        expected = json.loads(inspect(*text, "--json", "--all-logits"))  # every logit, as --npy writes
        attention = np.load(os.path.join(directory, "attention.npy"))
        logits = np.load(os.path.join(directory, "logits.npy"))
        with open(os.path.join(directory, "tokens.json")) as f:
            tokens = json.load(f)
    n = len(expected["tokens"])
    assert attention.dtype == np.dtype("<f4") and logits.dtype == np.dtype("<f4")
    assert attention.shape == (4, 4, n, n)
    assert logits.shape == (n, 2048)
    assert attention.flags["C_CONTIGUOUS"] and logits.flags["C_CONTIGUOUS"]
    # The same float32 values: inspect --json prints each float so that it reads back exactly.
    np.testing.assert_array_equal(attention, np.array(expected["attention"], dtype=np.float32))
    np.testing.assert_array_equal(logits, np.array(expected["logits"], dtype=np.float32))
    assert tokens == {"tokens": expected["tokens"], "ids": expected["ids"], "selection": expected["selection"]}
    np.testing.assert_allclose(attention.sum(axis=-1), 1.0, atol=1e-5)
    assert np.all(np.triu(attention, k=1) == 0)
