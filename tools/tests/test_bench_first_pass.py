"""tools/benchmarks/bench_first_pass.py: the summary a run's table is made of."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import time  # noqa: E402

from benchmarks.bench_first_pass import free_stem, markdown, summarize  # noqa: E402


def test_warm_passes_leave_out_the_process_first():
    row = summarize([300.0, 310.0, 290.0], [400.0, 200.0, 210.0, 190.0])
    assert row["cold_median_ms"] == 300.0
    assert row["warm_median_ms"] == 200.0  # 400, that process's own first pass, is not a warm one
    assert row["in_process_first_ms"] == 400.0
    assert row["ratio"] == pytest.approx(1.5)


def test_one_repetition_is_its_own_warm_figure():
    assert summarize([100.0], [80.0])["ratio"] == pytest.approx(1.25)


def test_table_names_the_machine_and_each_thread_count():
    result = {"shape": "gpt2-small", "dtype": "F32", "positions": 128, "load_average": 0.5,
              "started": "2026-12-03 09:27:07 UTC", "command": "tools/benchmarks/bench_first_pass.py",
              "stem": "first_pass-0927",
              "cpu": {"model_name": "Intel(R) Xeon(R) Processor", "vector_extensions": ["avx2", "avx512f"], "cores": 2},
              "rows": [{"threads": t, **summarize([300.0 / t], [310.0 / t, 300.0 / t])} for t in (1, 2)]}
    table = markdown(result)
    assert "Intel(R) Xeon(R) Processor, AVX-512, 2 cores" in table
    assert "| 1 | 300.0 | 300.0 | 310.0 | 1.00× |" in table
    assert "| 2 | 150.0 | 150.0 | 155.0 | 1.00× |" in table
    assert "first_pass-0927.json" in table


def test_a_run_of_the_same_minute_does_not_overwrite_the_last(tmp_path):
    started = time.strptime("2026-12-05 10:05:42", "%Y-%m-%d %H:%M:%S")
    assert free_stem(tmp_path, started) == "first_pass-1005"
    (tmp_path / "first_pass-1005.json").write_text("{}")
    assert free_stem(tmp_path, started) == "first_pass-100542"
