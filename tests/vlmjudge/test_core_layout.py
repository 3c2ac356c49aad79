"""The core layout table (docs/layout.md) names every room of `vlmjudge/`, each with its role, and nothing
that is not there: a newcomer reads the table instead of drawing the import graph."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _layout_rows(readme: str) -> dict[str, str]:
    """`path` -> `role` from the table of the "Core layout" section of docs/layout.md."""
    section = re.search(r"^## Core layout\n(.*?)(?=^## )", readme, re.MULTILINE | re.DOTALL)
    assert section, "docs/layout.md has no 'Core layout' section"
    rows = {}
    for line in section.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.lstrip().startswith("|") or len(cells) != 2 or set(cells[0]) <= set("-: ") or cells[0] == "path":
            continue
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name] = cells[1]
    return rows


def _rooms() -> set[str]:
    """Every subfolder (`name/`) and top-level file of vlmjudge/, its `__init__.py` aside."""
    core = REPO / "vlmjudge"
    return {f"{p.name}/" if p.is_dir() else p.name for p in core.iterdir()
            if p.name not in ("__init__.py", "__pycache__") and not p.name.endswith(".pyc")}


def test_the_table_reader_reads_a_table():
    text = "## Core layout\n\n| path | role |\n| --- | --- |\n| `a.py`, `b/` | why |\n\n## Next\n"
    assert _layout_rows(text) == {"a.py": "why", "b/": "why"}


def test_every_room_of_the_core_is_in_the_layout_table_with_a_role():
    rows = _layout_rows((REPO / "docs" / "layout.md").read_text(encoding="utf-8"))
    missing, stale = sorted(_rooms() - set(rows)), sorted(set(rows) - _rooms())
    assert not missing, f"add these to docs/layout.md's 'Core layout' table: {missing}"
    assert not stale, f"docs/layout.md's 'Core layout' table names what vlmjudge/ no longer has: {stale}"
    assert all(len(role.split()) >= 3 for role in rows.values()), "each row says its role in words"


#: Rooms that moved into the folder of the one concern they serve; nothing is left behind under the old path.
MOVED_AWAY = ("wire.py", "families.py", "backends/openai.py", "backends/_openai_batch.py",
              "backends/_openai_first.py", "backends/_openai_options.py")


def test_moved_rooms_leave_nothing_behind():
    core = REPO / "vlmjudge"
    left = [path for path in MOVED_AWAY if (core / path).exists()]
    assert not left, f"moved modules still in vlmjudge/: {left}"
    assert (core / "backends" / "openai" / "wire.py").is_file() and (core / "backends" / "hf" / "families.py").is_file()


def test_the_backend_table_is_in_the_backends_package():
    from vlmjudge import judge
    from vlmjudge.backends import BACKENDS
    assert set(BACKENDS) == {"transformers", "vllm", "openai", "replay"}
    assert judge.BACKENDS is BACKENDS and "BACKENDS = " not in (REPO / "vlmjudge" / "judge.py").read_text(encoding="utf-8")
