"""Tests of tools/references/unicode_tables.py and tools/references/nfc_cases.py (pytest): the committed headers and
NFC test cases are what the generators write now, and nfc_tables.hpp's packed entries, read
back as its comments describe them, give unicodedata's combining classes and decompositions.
Skipped when this Python's Unicode version is not the one the files were made from."""

import re
import sys
import unicodedata
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from references import nfc_cases  # noqa: E402
from references import unicode_tables  # noqa: E402

COMMITTED_VERSION = re.search(r'nfc_tables_version = "([^"]+)"', unicode_tables.NFC_HEADER.read_text()).group(1)
pytestmark = pytest.mark.skipif(unicodedata.unidata_version != COMMITTED_VERSION,
                                reason=f"the files are of Unicode {COMMITTED_VERSION}, "
                                       f"this Python's unicodedata is {unicodedata.unidata_version}")


def array(name):
    text = unicode_tables.NFC_HEADER.read_text()
    body = re.search(name + r"\[\] = \{(.*?)\};", text, re.S).group(1)
    return [int(value, 16) for value in re.findall(r"0x[0-9A-F]+", body)]


def test_headers_are_up_to_date():
    assert unicode_tables.classes_header()[0] == unicode_tables.HEADER.read_text()
    assert unicode_tables.nfc_header()[0] == unicode_tables.NFC_HEADER.read_text()


def test_nfc_cases_are_up_to_date():
    for path, text in nfc_cases.cases().items():
        assert path.read_text(encoding="utf-8") == text, path


def test_packed_nfc_tables_read_back():
    classes = {}
    for run in array("nfc_combining_class_runs"):
        first, count = run >> 14, ((run >> 8) & 0x3F) + 1
        for code in range(first, first + count):
            classes[code] = run & 0xFF
    decompositions, excluded = {}, set()
    seconds = array("nfc_decomposition_seconds")
    code = 0
    for entry in array("nfc_pair_decompositions"):
        code += entry >> 29
        decompositions[code] = [(entry >> 7) & 0x1FFFFF, seconds[entry & 0x7F]]
        if (entry >> 28) & 1:
            excluded.add(code)
    code = 0
    for entry in array("nfc_singleton_decompositions"):
        code += entry >> 21
        decompositions[code] = [entry & 0x1FFFFF]
        excluded.add(code)
    for code in range(0x110000):
        if 0xD800 <= code <= 0xDFFF:
            continue
        c = chr(code)
        assert classes.get(code, 0) == unicodedata.combining(c), hex(code)
        mapping = unicodedata.decomposition(c)
        expected = [] if not mapping or mapping.startswith("<") else [int(part, 16) for part in mapping.split()]
        assert decompositions.get(code, []) == expected, hex(code)
        if expected:
            assert (code in excluded) == (unicodedata.normalize("NFC", c) != c), hex(code)
    assert 0x0958 in excluded and 0x0344 in excluded and 0x212B in excluded and 0x00E9 not in excluded
