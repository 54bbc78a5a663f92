import datetime
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from common.run_folder import machine_slug, run_folder  # noqa: E402

XEON = "model name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n"
EPYC = "model name\t: AMD EPYC 7B13\nflags\t\t: fpu sse2 avx avx2 fma\n"


def test_slug_names_the_family_and_widest_isa():
    assert machine_slug(XEON) == "xeon-avx512"
    assert machine_slug(EPYC) == "epyc-avx2"
    assert machine_slug("model name\t: Some CPU 9000\nflags\t: sse2\n") == "some-cpu-9000-sse2"
    assert machine_slug("") == "unknown-sse2"


def test_slug_names_amds_generation_from_the_cpu_family():
    zen5 = "model name\t: AMD EPYC\ncpu family\t: 26\nflags\t\t: fpu avx2 avx512f\n"
    zen4 = "model name\t: AMD EPYC\ncpu family\t: 25\nflags\t\t: fpu avx2 avx512f\n"
    zen3 = "model name\t: AMD EPYC 7B13\ncpu family\t: 25\nflags\t\t: fpu avx2\n"
    assert machine_slug(zen5) == "epyc-zen5-avx512"
    assert machine_slug(zen4) == "epyc-zen4-avx512"
    assert machine_slug(zen3) == "epyc-zen3-avx2"
    intel = "model name\t: Intel(R) Xeon(R) Processor\ncpu family\t: 6\nflags\t\t: avx512f\n"
    assert machine_slug(intel) == "xeon-avx512"  # Intel's family says nothing of the generation


def test_folder_is_dated_under_docs_bench():
    folder = run_folder(Path("/repo"), datetime.date(2026, 12, 1))
    assert folder.parent == Path("/repo/docs/bench")
    assert folder.name.startswith("2026-12-01-")
