"""No upward import inside `vlmjudge/`: the floors docs/layout.md lists ("Core layout", "Floors"),
read from the page, checked against every import of the core's source.

A function-level import counts (it ties two rooms together as firmly as a top-level one), and
`from vlmjudge import NAME` counts as an import of the module `vlmjudge`'s table names for NAME.
The last test plants an upward import in a copy of the core and sees it refused.
"""
from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAYOUT = REPO / "docs" / "layout.md"


def read_floors(text: str) -> dict[str, int]:
    """Room (`cli/`, `judge.py`, `backends/__init__.py`) -> its floor, 1 the top, from the numbered
    list under "### Floors" in the "Core layout" section."""
    section = re.search(r"^### Floors\n(.*?)(?=^#{1,3} |\Z)", text, re.MULTILINE | re.DOTALL)
    assert section, "docs/layout.md has no '### Floors' list"
    floors: dict[str, int] = {}
    for line in section.group(1).splitlines():
        numbered = re.match(r"(\d+)\. (.*?): ", line)
        if numbered:
            for room in re.findall(r"`([^`]+)`", numbered.group(2)):
                assert room not in floors, f"{room} is on two floors"
                floors[room] = int(numbered.group(1))
    return floors


def _module_name(core: Path, path: Path) -> str:
    parts = list(path.relative_to(core.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(core: Path) -> dict[str, Path]:
    return {_module_name(core, p): p for p in sorted(core.rglob("*.py"))}


def _root_exports(core: Path) -> dict[str, str]:
    """The root package's table of public names (`_EXPORTS`): name -> module."""
    for node in ast.parse((core / "__init__.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_EXPORTS" for t in node.targets):
            return ast.literal_eval(node.value)
    return {}


def imports_of(name: str, path: Path, known: dict[str, Path], root_exports: dict[str, str]) -> set[str]:
    """The core modules `name` imports anywhere in its source (a function's body included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            targets = [base]
            for alias in node.names:
                targets.append(root_exports.get(alias.name, base) if base == "vlmjudge" else f"{base}.{alias.name}")
        else:
            continue
        found.update(t for t in targets if t in known and t != name)
    return found


def room_of(module: str, floors: dict[str, int]) -> str | None:
    """The room a module belongs to; None for the root package (`__version__` and the names table)."""
    parts = module.split(".")
    if len(parts) == 1:
        return None
    if len(parts) == 2 and f"{parts[1]}/__init__.py" in floors:
        return f"{parts[1]}/__init__.py"
    return f"{parts[1]}/" if f"{parts[1]}/" in floors or len(parts) > 2 else f"{parts[1]}.py"


def upward_imports(core: Path, floors: dict[str, int]) -> list[str]:
    """Every import in `core` from a room to a room on a higher floor, one line each; a `__main__`
    module is an entry point that runs a command, above every floor."""
    known, exports = _modules(core), _root_exports(core)
    wrong = []
    for name, path in known.items():
        here = None if name.endswith(".__main__") else room_of(name, floors)
        for target in sorted(imports_of(name, path, known, exports)):
            there = room_of(target, floors)
            if here is not None and there is not None and floors[there] < floors[here]:
                wrong.append(f"{name} -> {target} (floor {floors[here]} imports floor {floors[there]})")
    return wrong


def test_the_floor_reader_reads_a_list():
    text = "### Floors\n\nintro\n\n1. `cli/`: top\n2. `a.py`, `b/__init__.py`: ground, `c.py` in prose\n\n## Next\n"
    assert read_floors(text) == {"cli/": 1, "a.py": 2, "b/__init__.py": 2}


def test_every_room_is_on_one_floor():
    floors = read_floors(LAYOUT.read_text(encoding="utf-8"))
    core = REPO / "vlmjudge"
    rooms = {f"{p.name}/" if p.is_dir() else p.name for p in core.iterdir()
             if p.name not in ("__init__.py", "__pycache__") and not p.name.endswith(".pyc")}
    rooms.add("backends/__init__.py")
    assert not rooms - set(floors), f"put these on a floor in docs/layout.md: {sorted(rooms - set(floors))}"
    assert not set(floors) - rooms, f"docs/layout.md's floors name what vlmjudge/ lacks: {sorted(set(floors) - rooms)}"


def test_no_room_imports_from_a_higher_floor():
    wrong = upward_imports(REPO / "vlmjudge", read_floors(LAYOUT.read_text(encoding="utf-8")))
    assert not wrong, "upward imports (move what the lower room needs down to where both reach it):\n" + \
        "\n".join(wrong)


def test_a_planted_upward_import_is_refused(tmp_path):
    """Three ways up, each planted in a copy of the core: a function-level import of the registry
    from stats/, a relative import of the command from reports/, and a name from the root's table
    (`vlmjudge.compare` lives in cli/) taken by the backend table."""
    core = tmp_path / "vlmjudge"
    shutil.copytree(REPO / "vlmjudge", core, ignore=shutil.ignore_patterns("__pycache__"))
    floors = read_floors(LAYOUT.read_text(encoding="utf-8"))
    assert upward_imports(core, floors) == []
    (core / "stats" / "planted.py").write_text("def method_of(name):\n    from vlmjudge.registry import get_method\n"
                                               "    return get_method(name)\n", encoding="utf-8")
    (core / "reports" / "planted.py").write_text("from ..cli.intake import image_items\n", encoding="utf-8")
    with (core / "backends" / "__init__.py").open("a", encoding="utf-8") as table:
        table.write("\nfrom vlmjudge import compare\n")
    wrong = upward_imports(core, floors)
    assert wrong == ["vlmjudge.backends -> vlmjudge.cli.compare (floor 7 imports floor 1)",
                     "vlmjudge.reports.planted -> vlmjudge.cli.intake (floor 3 imports floor 1)",
                     "vlmjudge.stats.planted -> vlmjudge.registry (floor 6 imports floor 5)"]
