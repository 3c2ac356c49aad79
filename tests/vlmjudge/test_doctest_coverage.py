"""Runnable examples (issue 21, item 5): every public class and function of each method's scoring,
parsing and metric modules carries an executed `>>>` example, the five packages hold at least 40
doctests, and the README's test command runs them with `--doctest-modules`."""
from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

METHODS = ("terravis", "viescore2", "fager", "regeneration")
ROLES = ("scoring", "parsing", "metric")
PACKAGES = (*METHODS, "vlmjudge")
MIN_DOCTESTS = 40
README = Path(__file__).resolve().parents[2] / "README.md"


def public_members(module) -> dict[str, object]:
    """The classes and functions a module defines (not imports) under a public name."""
    return {name: obj for name, obj in vars(module).items()
            if not name.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
            and getattr(obj, "__module__", None) == module.__name__}


def own_examples(obj, name: str, module) -> int:
    """Examples in the object's own docstring (a class's methods do not stand in for the class)."""
    finder = doctest.DocTestFinder(recurse=False)
    return sum(len(test.examples) for test in finder.find(obj, name, module=module))


def doctests_in(module) -> int:
    """Docstrings with at least one example in a module, as `pytest --doctest-modules` collects them."""
    return sum(1 for test in doctest.DocTestFinder().find(module) if test.examples)


def package_modules(package: str) -> list:
    """Every module of a package, imported once each; `__main__` modules run code and are skipped (as
    pytest skips them), and a deprecated alias module is the new module itself, counted once."""
    root = importlib.import_module(package)
    names = [package] + [info.name for info in pkgutil.walk_packages(root.__path__, package + ".")]
    modules = {}
    for name in names:
        if name.rsplit(".", 1)[-1] != "__main__":
            module = importlib.import_module(name)
            modules[module.__name__] = module
    return list(modules.values())


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("method", METHODS)
def test_every_public_class_and_function_has_an_example(method, role):
    module = importlib.import_module(f"{method}.{role}")
    members = public_members(module)
    assert members, f"{module.__name__} defines no public class or function"
    missing = sorted(name for name, obj in members.items() if own_examples(obj, name, module) == 0)
    assert not missing, f"{module.__name__}: no executed example (Examples: >>> ...) for {missing}"


def test_the_five_packages_hold_at_least_40_doctests():
    counts = {package: sum(doctests_in(m) for m in package_modules(package)) for package in PACKAGES}
    assert all(counts[method] > 0 for method in METHODS), counts
    assert sum(counts.values()) >= MIN_DOCTESTS, counts


def test_the_readme_test_command_runs_the_doctests_of_every_package():
    text = README.read_text(encoding="utf-8")
    block = re.search(r"<!-- test-command -->(.*?)<!-- /test-command -->", text, re.S)
    assert block, "README has no test-command block"
    lines = [line for line in block.group(1).splitlines() if "--doctest-modules" in line]
    assert lines, "the README test command does not run the doctests"
    words = lines[0].split()
    assert [p for p in PACKAGES if p not in words] == [], lines[0]


def test_public_members_sees_only_what_a_module_defines():
    members = public_members(importlib.import_module("fager.scoring"))
    assert "score_answers" in members and "GatingPolicy" in members
    assert "parse_answer" not in members  # imported from fager.parsing, checked there
    assert own_examples(members["score_answers"], "score_answers", importlib.import_module("fager.scoring")) > 3
