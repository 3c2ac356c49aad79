"""One list of image suffixes and one `is_image_file`, in `vlmjudge.images`, for every reader of
image folders: a second list drifts (the annotation app once refused the .gif and .tif that
scoring took)."""
from __future__ import annotations

import ast
from pathlib import Path

from vlmjudge.images import IMAGE_SUFFIXES, is_image_file

REPO = Path(__file__).resolve().parents[2]
#: The names there is one definition of, and where it is.
ONE_DEFINITION = {"IMAGE_SUFFIXES": ["vlmjudge/images.py"], "is_image_file": ["vlmjudge/images.py"]}


def definitions(root: Path, names) -> dict[str, list[str]]:
    """Where each name is assigned or defined (def or class) in the .py files under `root`,
    hidden folders (virtual environments, .git) aside."""
    found: dict[str, list[str]] = {name: [] for name in names}
    for path in sorted(root.rglob("*.py")):
        if any(part.startswith(".") for part in path.relative_to(root).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                targets = [node.name]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = [t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                           if isinstance(t, ast.Name)]
            else:
                continue
            for target in targets:
                if target in found:
                    found[target].append(path.relative_to(root).as_posix())
    return found


def test_the_finder_sees_a_second_definition(tmp_path):
    (tmp_path / "a.py").write_text("IMAGE_SUFFIXES = ('.png',)\n")
    (tmp_path / "b.py").write_text("def f():\n    IMAGE_SUFFIXES: tuple = ()\n\ndef is_image_file(p):\n    pass\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "c.py").write_text("IMAGE_SUFFIXES = ()\n")
    assert definitions(tmp_path, ONE_DEFINITION) == {"IMAGE_SUFFIXES": ["a.py", "b.py"], "is_image_file": ["b.py"]}


def test_one_definition_in_the_tree():
    assert definitions(REPO, ONE_DEFINITION) == ONE_DEFINITION


def test_every_kind_scoring_takes_is_an_image_file_in_any_case(tmp_path):
    for suffix in IMAGE_SUFFIXES:
        for name in (f"a{suffix}", f"b{suffix.upper()}"):
            (tmp_path / name).write_bytes(b"")
            assert is_image_file(tmp_path / name), name
    (tmp_path / "notes.txt").write_bytes(b"")
    (tmp_path / "folder.png").mkdir()
    assert not is_image_file(tmp_path / "notes.txt") and not is_image_file(tmp_path / "folder.png")
    assert {".gif", ".tif", ".tiff"} <= set(IMAGE_SUFFIXES)
