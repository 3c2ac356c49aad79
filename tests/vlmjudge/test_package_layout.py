"""Conformance of the four method packages to one layout: the same module for the same role.

Each package has the role modules and a README.md as top-level files, its README starts with the
shared layout table, its `__init__.py` uses the one lazy-import scheme, a shared role beyond the table
(the requests asked, the output schema, saved runs, the paper's evaluation, baselines, figures, human
ratings, records) has one module name wherever a package has it, each cli.py only parses and
dispatches to `run_<command>` handlers, and no module is kept under a name from before 0.1.0: the
package is unreleased, so moved modules have no aliases.
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
    "viescore2.annotations", "terravis.stages", "terravis.raw_answers", "terravis.analysis",
    "viescore2.output_grammar", "viescore2.suite_report", "fager.agents", "fager.agents_schema", "fager.replay",
    "fager.abtest", "regeneration.iut", "regeneration.judging", "regeneration.runfolder", "regeneration.benchmark",
    "regeneration.compare",
)

# Roles beyond the layout table, under one name wherever a package has them: role module -> the
# packages that have that role. A role that needs more room is a subpackage of that name.
SECOND_TIER = {
    "asking.py": PACKAGES,  # the judge requests of each stage, and how their answers are read
    "schema.py": PACKAGES,  # the output schema or grammar a judge answers under
    "saved_runs.py": PACKAGES,  # saved or released runs: their files, read and written without a judge
    "evaluation.py": PACKAGES,  # the paper's evaluation over saved records
    "baselines.py": ("terravis", "fager", "regeneration"),  # the methods the paper compares with
    "figures.py": ("terravis", "viescore2", "regeneration"),  # PNG figures
    "human.py": PACKAGES,  # human ratings or annotations read as ground truth, the agreement protocol
    "annotation.py": PACKAGES,  # what the paper asked its annotators (vlmjudge annotate)
    "statistics.py": PACKAGES,  # the method's own statistics, recomputed per resample (vlmjudge compare)
    "records.py": PACKAGES,  # the per-item record type
}
# The names those modules had before they shared one name.
OLD_SECOND_TIER = ("variants.py", "baseline.py", "report_plots.py", "plots.py", "render.py", "annotations.py",
                   "stages.py", "raw_answers.py", "analysis.py", "output_grammar.py", "suite_report.py", "agents.py",
                   "agents_schema.py", "replay.py", "abtest.py", "iut.py", "judging.py", "runfolder.py",
                   "benchmark.py", "compare.py")
# Each package's per-item record type, which lives in its records.py.
RECORD_TYPES = {"terravis": "ImageRecord", "viescore2": "VIEScore2Record", "fager": "Verdict",
                "regeneration": "ItemResult"}


def _holds_role(folder: Path, role: str) -> bool:
    """The role's module, or a subpackage of its name (never both: one place per role)."""
    module, package = folder / role, folder / role.removesuffix(".py") / "__init__.py"
    assert not (module.is_file() and package.is_file()), f"{folder.name} holds {role} as a module and a package"
    return module.is_file() or package.is_file()


@pytest.mark.parametrize("role", sorted(SECOND_TIER))
def test_a_second_tier_role_has_one_name(role):
    """A package with the role holds it under the shared name, and a module of that name in a package
    not listed is a role this table has not been told about."""
    holders = {package for package in PACKAGES if _holds_role(REPO / package, role)}
    assert holders == set(SECOND_TIER[role]), f"{role}: in {sorted(holders)}, expected {sorted(SECOND_TIER[role])}"


def test_a_role_may_be_a_subpackage_but_not_both(tmp_path):
    (tmp_path / "asking").mkdir()
    (tmp_path / "asking" / "__init__.py").write_text("")
    assert _holds_role(tmp_path, "asking.py") and not _holds_role(tmp_path, "schema.py")
    (tmp_path / "asking.py").write_text("")
    with pytest.raises(AssertionError, match="as a module and a package"):
        _holds_role(tmp_path, "asking.py")


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_keeps_an_old_second_tier_name(package):
    kept = [name for name in OLD_SECOND_TIER if (REPO / package / name).exists()]
    assert not kept, f"{package}/ keeps {kept}; the role names are {sorted(SECOND_TIER)}"


@pytest.mark.parametrize("package", PACKAGES)
def test_the_record_type_lives_in_records(package):
    record = getattr(importlib.import_module(package), RECORD_TYPES[package])
    assert record.__module__ == f"{package}.records"


def _handlers(tree: ast.Module) -> list[tuple[str, str]]:
    """(command, handler name) for each `sub = commands.add_parser("NAME", ...)` whose
    `sub.set_defaults(func=HANDLER)` follows in the same module."""
    commands: dict[str, str] = {}
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "add_parser"):
            commands[node.targets[0].id] = node.value.args[0].value
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "set_defaults":
            for keyword in node.keywords:
                if keyword.arg == "func":
                    found.append((commands.get(node.func.value.id, "?"), ast.unparse(keyword.value)))
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_command_handlers_are_named_run_command(package):
    """The core's convention (`run_compare`, `run_info`): `vlmjudge <method> score` runs `run_score`."""
    handlers = _handlers(ast.parse((REPO / package / "cli.py").read_text(encoding="utf-8")))
    assert handlers, f"{package}/cli.py sets no command handler"
    wrong = [f"{command} -> {handler}" for command, handler in handlers
             if handler != "run_" + command.replace("-", "_")]
    assert not wrong, f"{package}/cli.py: handlers not named run_<command>: {wrong}"


def _works_on_arguments(function: ast.FunctionDef) -> bool:
    """A function of a CLI module: `main`, or one taking the parser, its sub-parsers or the parsed
    arguments (a parameter annotated `argparse.*`)."""
    annotations = [ast.unparse(a.annotation) for a in function.args.args if a.annotation is not None]
    return function.name == "main" or any(text.startswith("argparse.") for text in annotations)


@pytest.mark.parametrize("package", PACKAGES)
def test_cli_only_parses_and_dispatches(package):
    """What a cli.py defines works on arguments: flags, handlers, objects built from the parsed
    arguments, and the core's score command filled in (a `ScoreCommand`). Reading files, pairing,
    computing, formatting and drawing take no arguments object, so they live in the role modules."""
    tree = ast.parse((REPO / package / "cli.py").read_text(encoding="utf-8"))
    doing_work = [node.name for node in tree.body
                  if (isinstance(node, ast.FunctionDef) and not _works_on_arguments(node))
                  or (isinstance(node, ast.ClassDef) and [ast.unparse(b) for b in node.bases] != ["ScoreCommand"])]
    assert not doing_work, f"{package}/cli.py does work beyond parsing and dispatch: {doing_work}"


def test_the_cli_checks_catch_a_misnamed_handler_and_a_worker():
    tree = ast.parse("import argparse\n"
                     "def configure(parser: argparse.ArgumentParser):\n"
                     "    sub = parser.add_subparsers()\n"
                     "    score = sub.add_parser('score')\n"
                     "    score.set_defaults(func=_cmd_score)\n"
                     "def format_table(rows):\n"
                     "    return rows\n")
    assert _handlers(tree) == [("score", "_cmd_score")]
    functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert [_works_on_arguments(f) for f in functions] == [True, False]


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
