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
    assert info["methods"]["toyphoto"] == {"inputs": ["image"], "score_range": [0.0, 1.0]}
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


def test_core_sources_never_import_a_method_package():
    """Every import statement of the core, at any depth and in any form (`import os, terravis`,
    `from fager.x import y`), names no method package: imports flow from the methods to the core."""
    import ast
    methods = {"terravis", "viescore2", "fager", "regeneration"}
    root = HERE.parent.parent / "vlmjudge"
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            assert not {n.split(".")[0] for n in names} & methods, f"{path}:{node.lineno} imports {names}"


def test_the_import_check_sees_every_form():
    """The check above would catch the forms a line-by-line reading missed."""
    import ast
    tree = ast.parse("import os, terravis\ndef f():\n    from fager.scoring import x\n")
    found = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    found += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert {"terravis", "fager.scoring"} <= set(found)