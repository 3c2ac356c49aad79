"""Rooms stay small: no module over 450 lines, no module docstring over 15 (a docstring says why
in a few lines; essays belong in docs/, history in CHANGELOG and git), in the packages and in
bench/ and metrics/ alike."""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("vlmjudge", "terravis", "viescore2", "fager", "regeneration", "t2ibaselines", "bench", "metrics")
MAX_LINES, MAX_DOCSTRING_LINES = 450, 15


def _modules() -> list[Path]:
    return [p for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))]


def test_the_walk_covers_bench_and_metrics():
    names = {str(p.relative_to(REPO)) for p in _modules()}
    assert {"bench/terravis.py", "metrics/terravis/terravis.py", "vlmjudge/judge.py"} <= names


def test_no_module_over_450_lines():
    long = {str(p.relative_to(REPO)): n for p in _modules()
            if (n := p.read_text(encoding="utf-8").count("\n")) > MAX_LINES}
    assert not long, f"split these by concern: {long}"


def test_no_module_docstring_over_15_lines():
    essays = {}
    for path in _modules():
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if doc and doc.count("\n") + 1 > MAX_DOCSTRING_LINES:
            essays[str(path.relative_to(REPO))] = doc.count("\n") + 1
    assert not essays, f"module docstrings over {MAX_DOCSTRING_LINES} lines: {essays}"
