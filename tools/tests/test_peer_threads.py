"""tools/common/peer_threads.py: a peer's OpenBLAS runs on the threads it is given, not on every core."""
import ctypes
import os
import subprocess
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TOOLS))
from common import peer_threads  # noqa: E402


def openblas():
    try:
        return ctypes.CDLL(peer_threads.OPENBLAS)
    except OSError:
        pytest.skip("no OpenBLAS on this machine")


def test_thread_env_sets_both_counts_and_keeps_the_rest():
    env = peer_threads.thread_env(1, {"PATH": "/bin", "OPENBLAS_NUM_THREADS": "8"})
    assert env == {"PATH": "/bin", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def test_a_loaded_openblas_is_limited_at_run_time_and_can_be_raised_again():
    library = openblas()
    before = library.openblas_get_num_threads()
    try:
        assert peer_threads.limit_blas_threads(1)
        assert library.openblas_get_num_threads() == 1
    finally:
        library.openblas_set_num_threads(before)


def test_a_child_started_with_thread_env_loads_openblas_on_that_many_threads():
    openblas()
    code = ("import ctypes, numpy; "
            f"print(ctypes.CDLL({peer_threads.OPENBLAS!r}).openblas_get_num_threads())")
    env = peer_threads.thread_env(1, {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"})
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"
