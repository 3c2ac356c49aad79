"""The built package, used without the checkout: a wheel in a new venv, and a staged Space that serves.

Each new venv has no system site packages; the third-party packages this test run already has (torch
and the rest, several GB) are layered under it by a `.pth` file that names a folder of links to them,
leaving out vlmjudge's own editable install. So what is imported as vlmjudge, its metric modules and
its tiny-model builders comes from the wheel alone, and every command runs outside the repository.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from importlib.metadata import version
from pathlib import Path

import pytest

from browser import score_in_browser, serve_app

REPO = Path(__file__).resolve().parents[2]
METHODS = ("terravis", "viescore2", "fager", "regeneration")
#: What the sdist and wheel are built from; tests and benchmarks do not ship.
SOURCE_IGNORE = shutil.ignore_patterns(".git", "tests", "bench", "build", "dist", "*.egg-info", "__pycache__",
                                       ".pytest_cache", ".hypothesis", "*.sqlite*")


def run(command, cwd, env=None, timeout=600):
    """Run a command; on failure show its output, which is what a reader of the failure needs."""
    result = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"{command} exited {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """`python -m build` on a copy of the source: the sdist, and the wheel built from that sdist."""
    root = tmp_path_factory.mktemp("build")
    source = root / "src"
    shutil.copytree(REPO, source, ignore=SOURCE_IGNORE)
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", root / "dist", source], cwd=root)
    (wheel,) = (root / "dist").glob("vlmjudge-*.whl")
    return wheel


def layered_venv(path: Path) -> Path:
    """A new venv (no system site packages) over this run's third-party packages; returns its bin dir."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    deps = path / "deps"
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.lower().startswith(("vlmjudge", "__editable__")) and entry.suffix != ".pth":
            (deps / entry.name).symlink_to(entry)
    (site,) = (path / "lib").glob("python3*/site-packages")
    (site / "_layered_deps.pth").write_text(f"{deps}\n")
    return path / "bin"


def clean_env(home: Path) -> dict[str, str]:
    """No PYTHONPATH into the checkout, an empty HF home, offline."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1", "PYTHONNOUSERSITE": "1"}


def install_wheel(bin_dir: Path, wheel: Path, cwd: Path, env: dict) -> None:
    """pip (this run's, aimed at the new venv) installs the wheel alone: its dependencies are layered."""
    run([sys.executable, "-m", "pip", "--python", bin_dir / "python", "install", "--no-index", "--no-deps",
         "--quiet", wheel], cwd=cwd, env=env)


CHECK_INSTALL = """
import importlib.metadata as md, importlib.resources as res, sys, vlmjudge
from packaging.requirements import Requirement
assert sys.prefix != sys.base_prefix and vlmjudge.__file__.startswith(sys.prefix), vlmjudge.__file__
modules = sorted(p.name for p in res.files("vlmjudge.metric_modules").iterdir() if (p / "app.py").is_file())
def installed(name):
    try:
        return bool(md.version(name))
    except md.PackageNotFoundError:
        return False
missing = [r for r in map(Requirement, md.requires("vlmjudge")) if r.marker is None and not installed(r.name)]
print("modules", modules, "missing", missing)
"""

LOAD_BY_BARE_NAME = """
import sys, evaluate
module = evaluate.load("terravis", model=sys.argv[1], device="cpu")
print("loaded", type(module).__name__, module.name)
"""


def test_wheel_works_without_the_checkout(built, tmp_path):
    """vlmjudge info, evaluate-modules install and a bare-name evaluate.load, from a wheel install."""
    bin_dir = layered_venv(tmp_path / "venv")
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = clean_env(tmp_path / "hf")
    install_wheel(bin_dir, built, work, env)

    checked = run([bin_dir / "python", "-c", CHECK_INSTALL], cwd=work, env=env)
    assert f"modules {sorted(METHODS)} missing []" in checked
    assert "vlmjudge" in run([bin_dir / "vlmjudge", "info"], cwd=work, env=env)
    installed = run([bin_dir / "vlmjudge", "evaluate-modules", "install"], cwd=work, env=env)
    assert all(f"installed {name} ->" in installed for name in METHODS)
    run([bin_dir / "python", "-m", "vlmjudge.testing", "qwen3_vl", work / "tiny"], cwd=work, env=env)
    loaded = run([bin_dir / "python", "-c", LOAD_BY_BARE_NAME, "tiny"], cwd=work, env=env)
    assert "loaded" in loaded and "terravis" in loaded


def test_space_push_from_a_wheel_install_asks_for_the_wheel(built, tmp_path):
    """A wheel install has no checkout to build from: staging needs --wheel, and works with it."""
    bin_dir = layered_venv(tmp_path / "venv")
    env = clean_env(tmp_path / "hf")
    install_wheel(bin_dir, built, tmp_path, env)
    refused = subprocess.run([bin_dir / "vlmjudge", "space", "push", "terravis", "--stage", tmp_path / "s"],
                             cwd=tmp_path, env=env, capture_output=True, text=True)
    assert refused.returncode != 0 and "pass --wheel PATH" in refused.stderr
    run([bin_dir / "vlmjudge", "space", "push", "terravis", "--stage", tmp_path / "s", "--wheel", built],
        cwd=tmp_path, env=env)
    assert (tmp_path / "s" / built.name).is_file() and (tmp_path / "s" / "app.py").is_file()


@pytest.mark.parametrize("method", METHODS)
def test_card_sdk_version_is_the_gradio_the_demo_extra_installs(method):
    """The Space starts the card's gradio; the staged requirements pin the same one we test with."""
    from vlmjudge.hub.spaces import card_sdk_version
    assert card_sdk_version(REPO / "metrics" / method / "README.md") == version("gradio")


def test_metric_requirements_files_list_the_same_packages():
    texts = {m: (REPO / "metrics" / m / "requirements.txt").read_text() for m in METHODS}
    assert len(set(texts.values())) == 1, "metrics/*/requirements.txt differ"


def test_staged_space_installs_into_a_new_venv_and_serves(built, tmp_path, chromium_path):
    """`space push --stage`, then pip install -r the staged requirements, then the app scores in a browser."""
    pytest.importorskip("playwright")
    stage = tmp_path / "space"
    run([sys.executable, "-m", "vlmjudge.cli", "space", "push", "terravis", "--stage", stage, "--wheel", built],
        cwd=tmp_path)
    requirements = (stage / "requirements.txt").read_text().splitlines()
    assert requirements[:2] == [f"./{built.name}[demo]", f"gradio=={version('gradio')}"]

    bin_dir = layered_venv(tmp_path / "venv")
    env = clean_env(tmp_path / "hf")
    run([sys.executable, "-m", "pip", "--python", bin_dir / "python", "install", "--no-index", "--quiet",
         "-r", "requirements.txt"], cwd=stage, env=env)
    run([sys.executable, "-m", "vlmjudge.testing", "qwen3_vl", tmp_path / "tiny"], cwd=tmp_path)
    app_env = {**env, "VLMJUDGE_MODEL": str(tmp_path / "tiny"), "VLMJUDGE_DEVICE": "cpu"}
    image = tmp_path / "gray.png"
    __import__("PIL.Image").Image.new("RGB", (64, 64), "gray").save(image)
    with serve_app(stage / "app.py", app_env, python=str(bin_dir / "python")) as url:
        shown = score_in_browser(url, chromium_path, {"image": str(image)})
    assert shown["score"] and "Eligibility:" in shown["details"]
