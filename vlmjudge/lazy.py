"""The one lazy-import scheme of the method packages: a table of public names, loaded on first use.

Each method package's `__init__.py` is a docstring, a table `{public name: module}` (relative to
the package, such as ``".core"``) and one line::

    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

so `import terravis` loads nothing heavy (torch and torchmetrics come with the names that need
them), `terravis.TerraVis` imports `terravis.core` when first asked for, and a submodule such as
`terravis.core` is an attribute of the package even before anything imported it.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from importlib.util import find_spec
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of `package`, whose public names are the keys of `exports`.

    A name that is also the name of the submodule it lives in (`viescore2.rewards`, the function
    in `viescore2/rewards.py`) is bound at once: Python sets a package attribute to a submodule
    when that submodule is first imported, so binding it later would leave the module there.

    Examples:
        >>> import types
        >>> package = types.ModuleType("lazy_demo")
        >>> sys.modules["lazy_demo"] = package
        >>> package.__getattr__, package.__dir__ = lazy_exports("lazy_demo", {"sqrt": "math"})
        >>> package.sqrt(9.0)
        3.0
        >>> "sqrt" in dir(package)
        True
        >>> package.missing
        Traceback (most recent call last):
        ...
        AttributeError: module 'lazy_demo' has no attribute 'missing'
        >>> del sys.modules["lazy_demo"]
    """
    def __getattr__(name: str) -> Any:
        if name in exports:
            return getattr(import_module(exports[name], package), name)
        is_package = "__path__" in vars(sys.modules[package])
        if is_package and not name.startswith("_") and find_spec(f"{package}.{name}") is not None:
            return import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    module = sys.modules[package]
    for name, where in exports.items():
        if where.lstrip(".") == name:
            setattr(module, name, getattr(import_module(where, package), name))
    return __getattr__, __dir__
