"""`vlmjudge.stats` names every public function and class of its modules at package level, as
`scipy.stats` does, loaded on first use, and never shadowed by a module of the same name."""
import importlib
import inspect
import pkgutil
import subprocess
import sys

import vlmjudge.stats as stats

#: Modules whose names stay in them (the resampling engine, human-set readers): docstring of vlmjudge.stats.
ENGINE = ("resample", "board", "blocks", "human_sets")


def _public_definitions() -> dict[str, str]:
    """Public function or class name -> the stats module that defines it (the engine aside)."""
    found = {}
    for info in pkgutil.iter_modules(stats.__path__):
        if info.name in ENGINE:
            continue
        module = importlib.import_module(f"vlmjudge.stats.{info.name}")
        for name, value in vars(module).items():
            if not name.startswith("_") and (inspect.isfunction(value) or inspect.isclass(value)) \
                    and value.__module__ == module.__name__:
                assert name not in found, f"{name} is defined in both {found[name]} and {info.name}"
                found[name] = info.name
    return found


def test_the_names_users_reach_for_import_from_the_package():
    from vlmjudge.stats import agreement, bootstrap_ci, bradley_terry, holm, paired_bootstrap, paired_permutation_test
    from vlmjudge.stats.human_agreement import agreement as defined
    assert agreement is defined and all(inspect.isfunction(f) for f in
                                        (bootstrap_ci, bradley_terry, holm, paired_bootstrap, paired_permutation_test))
    assert holm([0.01, 0.04]).tolist() == [0.02, 0.04]


def test_every_public_function_and_class_is_exported_from_its_module():
    defined = _public_definitions()
    assert sorted(stats.__all__) == sorted(defined), "export these from vlmjudge.stats (or drop stale ones): " + \
        str(sorted(set(defined) ^ set(stats.__all__)))
    for name, module in defined.items():
        assert getattr(stats, name) is getattr(importlib.import_module(f"vlmjudge.stats.{module}"), name)


def test_no_export_is_shadowed_by_a_module():
    """A module named like an export would replace it once imported; every module is loaded here first."""
    modules = {info.name for info in pkgutil.iter_modules(stats.__path__)}
    assert not modules & set(stats.__all__), modules & set(stats.__all__)
    for name in modules:
        importlib.import_module(f"vlmjudge.stats.{name}")
    assert inspect.isfunction(stats.agreement) and inspect.isfunction(stats.bradley_terry)
    assert inspect.isfunction(stats.compare)


def test_importing_the_package_loads_no_statistics_module():
    code = ("import sys, vlmjudge.stats; print(sorted(m for m in sys.modules if m.startswith('vlmjudge.stats.')"
            " or m.split('.')[0] in ('numpy', 'scipy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
