import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from vlmjudge import load_judge
from vlmjudge.registry import MethodSpec, get_method, method_names, register, unregister
from vlmjudge.testing.conformance import ConformanceError, check_method

import toy_method

HERE = Path(__file__).resolve().parent


def toy_judge():
    return load_judge({0: {"probs": {"Yes": 0.8, "No": 0.2}}, 1: "No", 2: None}, backend="replay",
                      key_fields=("item_id",))


def images(n):
    return [Image.new("RGB", (8, 8), (i * 40, 0, 0)) for i in range(n)]


def test_toy_method_passes_conformance():
    records = check_method(toy_method.SPEC, toy_judge(), {"image": images(3)})
    assert [r.score for r in records] == pytest.approx([0.8, 0.0, None])
    assert [r.valid for r in records] == [True, True, False]


def test_conformance_catches_a_broken_spec():
    bad = MethodSpec(name="bad", inputs=("image",), build=toy_method.ToyScorer, score_range=(0.0, 1.0),
                     normalize=lambda s: s * 2, render=toy_method._render)
    with pytest.raises(ConformanceError, match="normalize"):
        check_method(bad, toy_judge(), {"image": images(1)})


def test_runtime_registration():
    register(toy_method.SPEC)
    try:
        assert "toyphoto" in method_names() and get_method("toyphoto") is toy_method.SPEC
    finally:
        unregister("toyphoto")
    with pytest.raises(KeyError, match="toyphoto"):
        get_method("toyphoto")


def test_check_batch_errors():
    spec = toy_method.SPEC
    with pytest.raises(ValueError, match="image"):
        spec.check_batch({"prompt": ["a"]})
    with pytest.raises(ValueError, match="empty"):
        spec.check_batch({"image": []})


def entry_point_dir(tmp_path: Path) -> Path:
    """A dist-info folder declaring the toy method, as `pip install` of a plugin would."""
    dist = tmp_path / "toyphoto_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toyphoto-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[vlmjudge.methods]\ntoyphoto = toy_method:SPEC\n")
    return tmp_path


def test_entry_point_method_appears_in_info(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(entry_point_dir(tmp_path)), str(HERE)])}
    out = subprocess.run([sys.executable, "-m", "vlmjudge.cli", "info", "--json"], env=env,
                         capture_output=True, text=True, check=True).stdout
    info = json.loads(out)
    assert info["methods"]["toyphoto"] == {"inputs": ["image"], "score_range": [0.0, 1.0], "extra": None,
                                           "installed": True}
    assert info["backends"]["replay"] == "ok"
    text = subprocess.run([sys.executable, "-m", "vlmjudge.cli", "info"], env=env, capture_output=True,
                          text=True, check=True).stdout
    assert "toyphoto" in text and "GPUs:" in text


def test_import_vlmjudge_imports_no_method_package():
    code = ("import sys, vlmjudge, vlmjudge.judge, vlmjudge.registry, vlmjudge.cache, vlmjudge.requests;"
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('terravis', 'viescore2', 'fager', 'regeneration', 'evaluate', 'datasets', 'xgrammar', 'torch')];"
            "print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


METHOD_PACKAGES = {"terravis", "viescore2", "fager", "regeneration"}
#: Calls that import the module their (string) argument names.
IMPORTING_CALLS = {"import_module", "__import__"}


def imported_names(source, filename="<source>"):
    """[(line, module)] for every absolute import in `source`, at any depth: `import a, b`,
    `from a.b import c`, and `importlib.import_module("a.b")` / `__import__` with a literal name
    (an f-string counts by its literal head, e.g. f"a.{x}" -> "a.")."""
    import ast
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name not in IMPORTING_CALLS:
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found.append((node.lineno, arg.value))
            elif isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
                found.append((node.lineno, str(arg.values[0].value)))
    return found


def method_imports(source, filename="<source>"):
    """The imports of `source` that name a method package."""
    return sorted((line, name) for line, name in imported_names(source, filename)
                  if name.split(".")[0] in METHOD_PACKAGES)


def test_core_sources_never_import_a_method_package():
    """Every import of the core, in any form, names no method package: imports flow from the
    methods to the core."""
    root = HERE.parent.parent / "vlmjudge"
    paths = sorted(root.rglob("*.py"))
    assert len(paths) > 20, f"found only {len(paths)} core sources under {root}"
    bad = {str(p.relative_to(root)): hits for p in paths if (hits := method_imports(p.read_text(), str(p)))}
    assert not bad, f"core modules import method packages: {bad}"


def test_the_import_check_sees_every_form():
    """The check above catches each form of import, and only imports of method packages."""
    source = """
import os, terravis
import json as j, viescore2.grid as g
from fager.scoring import x
from . import regeneration
from .terravis import y
import terravis_extra
def f():
    from regeneration.core import z
    import importlib
    importlib.import_module("viescore2.metric")
    __import__("fager")
    importlib.import_module(f"terravis.{name}")
    importlib.import_module(name)
    text = "import fager"
"""
    assert method_imports(source) == [
        (2, "terravis"), (3, "viescore2.grid"), (4, "fager.scoring"), (9, "regeneration.core"),
        (11, "viescore2.metric"), (12, "fager"), (13, "terravis.")]
