"""Conformance of the four method packages to one layout: the same module for the same role.

Each package has the role modules and a README.md as top-level files, its README starts with the
shared layout table, its `__init__.py` uses the one lazy-import scheme, a second-tier role (baselines,
figures, human ratings, records) has one module name wherever a package has it, and no module is kept
under a name from before 0.1.0: the package is unreleased, so moved modules have no aliases.
"""
from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("terravis", "viescore2", "fager", "regeneration")
ROLE_MODULES = ("core.py", "pack.py", "scoring.py", "parsing.py", "metric.py", "spec.py", "cli.py", "report.py")
ROLE_FILES = (*ROLE_MODULES, "README.md")

# Module names from before 0.1.0, now under role names; nothing may import them or hold a file so named.
OLD_MODULES = (
    "terravis.prompts", "viescore2.pipeline", "viescore2.instructions", "viescore2.grid_reader",
    "viescore2.score_metric", "viescore2.metrics", "fager.pipeline", "regeneration.loop", "regeneration.prompts",
    "terravis.variants", "fager.baseline", "terravis.report_plots", "regeneration.plots", "viescore2.render",
    "viescore2.annotations",
)

# Second-tier roles, which not every method has: role module -> the packages that have that role.
SECOND_TIER = {
    "baselines.py": ("terravis", "fager", "regeneration"),  # the methods the paper compares with
    "figures.py": ("terravis", "viescore2", "regeneration"),  # PNG figures
    "human.py": PACKAGES,  # human ratings or annotations read as ground truth, the agreement protocol
    "annotation.py": PACKAGES,  # what the paper asked its annotators (vlmjudge annotate)
    "statistics.py": PACKAGES,  # the method's own statistics, recomputed per resample (vlmjudge compare)
    "records.py": PACKAGES,  # the per-item record type
}
# The names those modules had before they shared one name.
OLD_SECOND_TIER = ("variants.py", "baseline.py", "report_plots.py", "plots.py", "render.py", "annotations.py")
# Each package's per-item record type, which lives in its records.py.
RECORD_TYPES = {"terravis": "ImageRecord", "viescore2": "VIEScore2Record", "fager": "Verdict",
                "regeneration": "ItemResult"}


@pytest.mark.parametrize("role", sorted(SECOND_TIER))
def test_a_second_tier_role_has_one_name(role):
    """A package with the role holds it under the shared name, and a module of that name in a package
    not listed is a role this table has not been told about."""
    holders = {package for package in PACKAGES if (REPO / package / role).is_file()}
    assert holders == set(SECOND_TIER[role]), f"{role}: in {sorted(holders)}, expected {sorted(SECOND_TIER[role])}"


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_keeps_an_old_second_tier_name(package):
    kept = [name for name in OLD_SECOND_TIER if (REPO / package / name).exists()]
    assert not kept, f"{package}/ keeps {kept}; the role names are {sorted(SECOND_TIER)}"


@pytest.mark.parametrize("package", PACKAGES)
def test_the_record_type_lives_in_records(package):
    record = getattr(importlib.import_module(package), RECORD_TYPES[package])
    assert record.__module__ == f"{package}.records"


@pytest.mark.parametrize("package", PACKAGES)
def test_package_has_every_role_file(package):
    folder = REPO / package
    missing = [name for name in ROLE_FILES if not (folder / name).is_file()]
    assert not missing, f"{package}/ lacks the role files {missing} (see docs/layout.md, 'Package layout')"


def _layout_modules(readme: str) -> list[str]:
    """The `module` column of the first table of a README whose header names a module column."""
    lines = readme.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.lstrip().startswith("|") and "module" in cells:
            column = cells.index("module")
            rows = []
            for row in lines[i + 2:]:
                if not row.lstrip().startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")][column].strip("`"))
            return rows
    return []


@pytest.mark.parametrize("package", PACKAGES)
def test_readme_starts_with_the_layout_table(package):
    readme = (REPO / package / "README.md").read_text(encoding="utf-8")
    first_section = readme.split("\n## ", 1)[0]  # the table stands before the first section heading
    assert _layout_modules(first_section) == list(ROLE_FILES), f"{package}/README.md does not open with the layout table"


def test_layout_page_states_the_layout():
    page = (REPO / "docs" / "layout.md").read_text(encoding="utf-8")
    section = re.search(r"^## Package layout\n(.*?)(?=^## )", page, re.MULTILINE | re.DOTALL)
    assert section, "docs/layout.md has no 'Package layout' section"
    assert _layout_modules(section.group(1)) == list(ROLE_FILES)


@pytest.mark.parametrize("package", PACKAGES)
def test_init_uses_the_one_lazy_scheme(package):
    module = importlib.import_module(package)
    exports = module._EXPORTS
    assert module.__all__ == list(exports)
    for name, where in exports.items():
        value = getattr(module, name)
        home = importlib.import_module(where, package)
        assert value is getattr(home, name), f"{package}.{name} is not {home.__name__}.{name}"
    assert set(exports) <= set(dir(module))
    assert module.core is importlib.import_module(f"{package}.core")  # submodules are attributes too
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        module.no_such_name


def test_a_name_shared_with_its_submodule_stays_the_function():
    """`viescore2.rewards` (the function in viescore2/rewards.py) and `fager.refine` survive the
    import of their own submodule, which sets the package attribute to the module."""
    code = ("import viescore2, fager, viescore2.rewards, fager.refine, viescore2.explain\n"
            "print(callable(viescore2.rewards), callable(fager.refine), callable(viescore2.explain))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.split() == ["True", "True", "True"]


def test_importing_a_package_loads_no_torch():
    code = "import sys, terravis, viescore2, fager, regeneration; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "False"


def test_fager_imports_itself_by_relative_names():
    offenders: dict[str, list[int]] = {}
    for path in sorted((REPO / "fager").glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.match(r"\s*(from fager(\.\w+)* import|import fager\b)", line):
                offenders.setdefault(path.name, []).append(number)
    assert not offenders, f"fager modules import fager by absolute name: {offenders}"


# Every non-test source tree of the project: the four method packages, the core, the evaluate
# modules and the benchmarks.
SOURCE_ROOTS = (*PACKAGES, "vlmjudge", "metrics", "bench")
_MODULE_PATH = re.compile(r"^\.*\w+(\.\w+)*$")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) for each import of a module file, and for each string that
    names a module (a lazy `_EXPORTS` entry, an `import_module` argument), relative ones resolved."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def absolute(relative: str, level: int) -> str:
        anchor = package.split(".")[: len(package.split(".")) - level + 1]
        return ".".join(anchor + ([relative] if relative else []))

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node.module or "", node.level) if node.level else node.module or ""
            found += [(node.lineno, base)] + [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_PATH.match(node.value):
            dots = len(node.value) - len(node.value.lstrip("."))
            found.append((node.lineno, absolute(node.value[dots:], dots) if dots else node.value))
    return found


def test_the_import_scanner_resolves_relative_and_lazy_names(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text('_EXPORTS = {"Old": ".old"}\n')
    (package / "user.py").write_text("from .old import x\nfrom . import old\nimport pkg.old\n")
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    assert (1, "pkg.old") in _imported_names(package / "__init__.py")
    names = _imported_names(package / "user.py")
    assert (1, "pkg.old") in names and (2, "pkg.old") in names and (3, "pkg.old") in names
    assert (1, "pkg.old.x") in names and not any(module == "pkg.x" for _, module in names)


def test_no_old_module_name_is_kept_or_imported():
    """The names the role modules replaced are gone: no file under them, no import of them, and
    no method package imports the aliasing helper of the core."""
    kept = [name for name in OLD_MODULES if (REPO / (name.replace(".", "/") + ".py")).exists()]
    assert not kept, f"modules kept under their old names: {kept}"
    sources = [path for root in (*SOURCE_ROOTS, "tests") for path in sorted((REPO / root).rglob("*.py"))
               if path != Path(__file__).resolve()]  # this file names the old modules as strings
    offenders = [f"{path.relative_to(REPO)}:{line} imports {module}" for path in sources
                 for line, module in _imported_names(path)
                 if module in OLD_MODULES or (path.relative_to(REPO).parts[0] in PACKAGES
                                              and module == "vlmjudge._moved")]
    assert not offenders, "imports of old module names:\n" + "\n".join(offenders)
