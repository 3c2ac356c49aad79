"""The test suite's own layout under importlib mode (setup.cfg [tool:pytest]): test modules are
named by their path, so their basenames may repeat across folders; helper modules are imported by
bare name from the `pythonpath` folders, so each such folder is listed and no two helpers share a
basename (the first folder on sys.path would win silently)."""
import configparser
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"


def pytest_ini():
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    return config["tool:pytest"]


def helper_modules(folder: Path) -> list[Path]:
    """The modules of `folder` that are neither tests nor conftest/__init__ files."""
    return sorted(p for p in folder.glob("*.py")
                  if not p.name.startswith("test_") and p.name not in ("conftest.py", "__init__.py"))


def helper_folders() -> list[Path]:
    """tests/ and its direct subfolders that hold helper modules, packages (tests/golden) aside."""
    folders = [TESTS, *sorted(p for p in TESTS.iterdir() if p.is_dir())]
    return [f for f in folders if helper_modules(f) and not (f / "__init__.py").exists()]


def test_pytest_runs_in_importlib_mode():
    assert "--import-mode=importlib" in pytest_ini()["addopts"].split()


def test_every_helper_folder_is_on_the_pythonpath():
    on_path = {(REPO / entry).resolve() for entry in pytest_ini()["pythonpath"].split()}
    missing = [str(f.relative_to(REPO)) for f in helper_folders() if f.resolve() not in on_path]
    assert not missing, f"add these folders to pythonpath in setup.cfg [tool:pytest]: {missing}"
    assert all(p.is_dir() for p in on_path), sorted(str(p) for p in on_path if not p.is_dir())


def test_helper_basenames_are_unique_across_the_pythonpath():
    where = defaultdict(list)
    for entry in pytest_ini()["pythonpath"].split():
        if not (REPO / entry).resolve().is_relative_to(TESTS):
            continue  # the repo root, for bench: not a helper folder
        for module in helper_modules(REPO / entry):
            where[module.stem].append(str(module.relative_to(REPO)))
    assert len(where) >= 10, f"found only {sorted(where)}"
    clashes = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert not clashes, f"helper modules sharing a basename (rename one): {clashes}"
