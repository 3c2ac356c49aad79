"""Test folders are not packages (pytest's default import mode puts each on sys.path), so two test
files with one basename stop collection of the whole suite: guard it here, with a clear message."""
from collections import Counter
from pathlib import Path


def test_every_test_module_has_a_unique_basename():
    tests = Path(__file__).resolve().parent
    names = Counter(p.name for p in tests.rglob("test_*.py") if "golden" not in p.parts)
    assert not [n for n, c in names.items() if c > 1], "rename one of the duplicated test files"
