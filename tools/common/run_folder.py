"""Where a benchmark run's results go: docs/bench/<UTC date>-<cpu>-<vector ISA>/, the scheme of
docs/bench/README.md (e.g. docs/bench/2026-12-01-xeon-avx512/, docs/bench/2026-12-04-epyc-zen5-avx512/)."""
import datetime
import re
from pathlib import Path


def amd_generation(cpuinfo: str, flags: set) -> str | None:
    """'zen5', 'zen4', 'zen3' from /proc/cpuinfo's "cpu family" (AMD's 26 is Zen 5; 25 is Zen 3 or Zen 4,
    and of those only Zen 4 has AVX-512), or None. The same model name ("AMD EPYC") is given to VMs on
    either, whose speeds differ by up to 2x, so their results must not share a folder."""
    family = re.search(r"^cpu family\s*:\s*(\d+)$", cpuinfo, re.MULTILINE)
    if not family:
        return None
    number = int(family.group(1))
    if number == 26:
        return "zen5"
    if number == 25:
        return "zen4" if "avx512f" in flags else "zen3"
    return None


def machine_slug(cpuinfo: str) -> str:
    """'xeon-avx512', 'epyc-zen5-avx512', 'epyc-avx2', ...: the CPU family from the model name (and AMD's
    generation where cpuinfo tells it) and the widest vector ISA from the flags of /proc/cpuinfo's text."""
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    name = model.group(1) if model else "unknown"
    for family in ("xeon", "epyc", "ryzen", "core"):
        if family in name.lower():
            cpu = family
            break
    else:
        cpu = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:24] or "unknown"
    flags_line = re.search(r"^flags\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    flags = set(flags_line.group(1).split()) if flags_line else set()
    isa = "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else "sse2"
    generation = amd_generation(cpuinfo, flags) if cpu in ("epyc", "ryzen") else None
    return f"{cpu}-{generation}-{isa}" if generation else f"{cpu}-{isa}"


def run_folder(root: Path, today: datetime.date | None = None) -> Path:
    """root/docs/bench/<date>-<machine>/ for this machine and today's UTC date (not created)."""
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        cpuinfo = ""
    date = today or datetime.datetime.now(datetime.timezone.utc).date()
    return Path(root) / "docs" / "bench" / f"{date.isoformat()}-{machine_slug(cpuinfo)}"
