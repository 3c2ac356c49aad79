"""Conformance of the four method packages to one layout: the same module for the same role.

Each package has the role modules and a README.md as top-level files, its README starts with the
shared layout table, its `__init__.py` uses the one lazy-import scheme, and every module that moved
to a role name is still importable under its old name as the very same module object.
"""
from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("terravis", "viescore2", "fager", "regeneration")
ROLE_MODULES = ("core.py", "pack.py", "scoring.py", "parsing.py", "metric.py", "spec.py", "cli.py", "report.py")
ROLE_FILES = (*ROLE_MODULES, "README.md")

# Old module name -> the role module it became (kept as a deprecated alias for one release).
MOVED = {
    "terravis.prompts": "terravis.pack",
    "viescore2.pipeline": "viescore2.core",
    "viescore2.instructions": "viescore2.pack",
    "viescore2.grid_reader": "viescore2.parsing",
    "viescore2.score_metric": "viescore2.metric",
    "viescore2.metrics": "viescore2.metric",
    "fager.pipeline": "fager.core",
    "regeneration.loop": "regeneration.core",
    "regeneration.prompts": "regeneration.pack",
}

# Names other work relies on, at the module that must keep them: (module, name, where it lives now).
STABLE = [
    ("viescore2.grid", "parse_output", "viescore2.parsing"),
    ("viescore2.grid", "parse_grid", "viescore2.parsing"),
    ("terravis.parsing", "parse_evidence", "terravis.parsing"),
    ("terravis.parsing", "first_json_object", "terravis.parsing"),
    ("fager.parsing", "parse_answer", "fager.parsing"),
    ("fager.parsing", "AnswerParseError", "fager.parsing"),
    ("regeneration.parsing", "extract_json", "regeneration.parsing"),
]


@pytest.mark.parametrize("package", PACKAGES)
def test_package_has_every_role_file(package):
    folder = REPO / package
    missing = [name for name in ROLE_FILES if not (folder / name).is_file()]
    assert not missing, f"{package}/ lacks the role files {missing} (see README.md, 'Package layout')"
    for name in ROLE_MODULES:  # a role module is real code, not a deprecated alias of another module
        text = (folder / name).read_text(encoding="utf-8")
        assert "alias_module(" not in text, f"{package}/{name} is an alias, not the module of its role"


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


def test_repo_readme_states_the_layout():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = re.search(r"^## Package layout\n(.*?)(?=^## )", readme, re.MULTILINE | re.DOTALL)
    assert section, "README.md has no 'Package layout' section"
    assert _layout_modules(section.group(1)) == list(ROLE_FILES)
    assert readme.index("## Package layout") < readme.index("## Install"), "the layout belongs near the top"


@pytest.mark.parametrize("old,new", sorted(MOVED.items()))
def test_moved_module_is_the_same_object(old, new):
    sys.modules.pop(old, None)  # run the alias file again, so its warning is seen here
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        aliased = importlib.import_module(old)
    assert aliased is importlib.import_module(new)
    assert sys.modules[old] is sys.modules[new]


@pytest.mark.parametrize("module,name,home", STABLE)
def test_stable_names_keep_working(module, name, home):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # a stable name is no deprecated path
        value = getattr(importlib.import_module(module), name)
    assert value is getattr(importlib.import_module(home), name)


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


def test_the_alias_scanner_resolves_relative_and_lazy_names(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text('_EXPORTS = {"Old": ".old"}\n')
    (package / "user.py").write_text("from .old import x\nfrom . import old\nimport pkg.old\n")
    monkeypatch.setitem(globals(), "REPO", tmp_path)
    assert (1, "pkg.old") in _imported_names(package / "__init__.py")
    names = _imported_names(package / "user.py")
    assert (1, "pkg.old") in names and (2, "pkg.old") in names and (3, "pkg.old") in names
    assert (1, "pkg.old.x") in names and not any(module == "pkg.x" for _, module in names)


def test_no_project_module_imports_a_deprecated_alias():
    """Inside the project only the new module names are used; the aliases (files that call
    `alias_module(`) are for callers outside it, and warn."""
    sources = [path for root in SOURCE_ROOTS for path in sorted((REPO / root).rglob("*.py"))]
    aliases = {_module_name(path) for path in sources
               if path.name != "_moved.py" and "alias_module(" in path.read_text(encoding="utf-8")}
    assert set(MOVED) <= aliases, "every moved method module is an alias file"
    offenders = [f"{path.relative_to(REPO)}:{line} imports {module}"
                 for path in sources if _module_name(path) not in aliases
                 for line, module in _imported_names(path) if module in aliases]
    assert not offenders, "project modules import deprecated aliases (import the new names):\n" + "\n".join(offenders)
