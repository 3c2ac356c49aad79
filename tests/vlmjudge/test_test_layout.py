"""The test suite's own layout under importlib mode (setup.cfg [tool:pytest]): test modules are
named by their path, so their basenames may repeat across folders; helper modules are imported by
bare name from the `pythonpath` folders, so each such folder is listed and no two helpers share a
basename (the first folder on sys.path would win silently). Test folders mirror the packages
(tests/<package>/<subpackage>/...), so a reader finds a module's tests where the module lives."""
import configparser
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
# Top-level test folders that test no one package: the release replays, the wheel, the bench
# package at the repo root (a tool, not part of the installed library), the documentation's
# examples, and vendored data.
CROSS_CUTTING = ("golden", "packaging", "bench", "data", "docs")


def pytest_ini():
    """setup.cfg's pytest section, where the import mode and the helper folders are set."""
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    return config["tool:pytest"]


def helper_modules(folder: Path) -> list[Path]:
    """The modules of `folder` that are neither tests nor conftest/__init__ files."""
    return sorted(p for p in folder.glob("*.py")
                  if not p.name.startswith("test_") and p.name not in ("conftest.py", "__init__.py"))


def folders_with_tests(tests: Path = TESTS) -> list[Path]:
    """Folders under `tests` (at any depth) that hold test modules or a conftest, vendored data
    aside; a folder of fixtures loaded by path (an evaluate module folder) holds neither."""
    found = {p.parent for pattern in ("test_*.py", "conftest.py") for p in tests.rglob(pattern)}
    return sorted(f for f in found if f != tests and f.relative_to(tests).parts[0] != "data")


def helper_folders() -> list[Path]:
    """tests/ and its test folders at any depth that hold helper modules, packages (tests/golden)
    aside."""
    folders = [TESTS, *folders_with_tests()]
    return [f for f in folders if helper_modules(f) and not (f / "__init__.py").exists()]


def stray_folders(repo: Path = REPO) -> list[str]:
    """Test folders of `repo`/tests that are not tests/<package>[/<subpackage>...] for a regular
    package of `repo`, nor one of the cross-cutting folders."""
    tests = repo / "tests"
    strays = []
    for folder in folders_with_tests(tests):
        parts = folder.relative_to(tests).parts
        if parts[0] in CROSS_CUTTING:
            continue
        packages = [repo.joinpath(*parts[:depth]) for depth in range(1, len(parts) + 1)]
        if not all((package / "__init__.py").is_file() for package in packages):
            strays.append(folder.relative_to(repo).as_posix())
    return strays


def test_pytest_runs_in_importlib_mode():
    assert "--import-mode=importlib" in pytest_ini()["addopts"].split()


def test_every_helper_folder_is_on_the_pythonpath():
    on_path = {(REPO / entry).resolve() for entry in pytest_ini()["pythonpath"].split()}
    missing = [str(f.relative_to(REPO)) for f in helper_folders() if f.resolve() not in on_path]
    assert not missing, f"add these folders to pythonpath in setup.cfg [tool:pytest]: {missing}"
    assert all(p.is_dir() for p in on_path), sorted(str(p) for p in on_path if not p.is_dir())


def test_nested_helper_folders_are_seen():
    """The walk reaches below the top level: the core's subpackage folders hold helpers too."""
    nested = [f.relative_to(TESTS).as_posix() for f in helper_folders()
              if len(f.relative_to(TESTS).parts) > 1]
    assert "vlmjudge/backends" in nested and "vlmjudge/distributed" in nested, nested


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


def test_test_folders_mirror_the_packages():
    """Every test folder is tests/<package>[/<subpackage>...] for a package of this repo, or one of
    the cross-cutting folders: no second folder per package (terravis_faces) and no theme folder
    (core, serving) comes back. A test of vlmjudge/serve lives in tests/vlmjudge/serve."""
    strays = stray_folders()
    assert not strays, ("test folders that name no package or subpackage (move their files to "
                        f"tests/<package>/<subpackage>/): {strays}")
    mirrored = {f.relative_to(TESTS).as_posix() for f in folders_with_tests()}
    expected = {"terravis", "viescore2", "fager", "regeneration", "vlmjudge", "vlmjudge/cli"}
    assert expected <= mirrored, mirrored


def test_the_mirror_check_flags_theme_and_split_folders(tmp_path):
    """On a made-up repo: a theme folder, a package's second folder and a folder under a module that
    is no package are strays; a subpackage's folder, a cross-cutting one and a fixture folder are not."""
    for package in ("pkg", "pkg/sub"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "pkg" / "plain").mkdir()  # a folder without __init__.py: no subpackage
    for test_file in ("core/test_a.py", "pkg_faces/conftest.py", "pkg/plain/test_b.py",
                      "pkg/sub/test_c.py", "golden/test_d.py", "pkg/fixture_module/module.py",
                      "data/pkg/test_e.py"):
        path = tmp_path / "tests" / test_file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    assert stray_folders(tmp_path) == ["tests/core", "tests/pkg/plain", "tests/pkg_faces"]
