"""Set-up shared by executed `Examples:` blocks, so that each docstring shows the call it
documents rather than the scaffolding (a throwaway package with shipped prompt packs)."""
from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping


class ExamplePackage:
    """A package `name` that ships `packs/<pack>.json` for each keyword, importable inside a
    `with` block only (written on entry, removed from disk, `sys.path` and `sys.modules` on
    exit); the block gets the package name. Usable for several blocks in turn.

    Examples:
        >>> from importlib import resources
        >>> package = ExamplePackage("example_pack_doc", default={"version": "toy-1"})
        >>> with package as name:
        ...     resources.files(name).joinpath("packs", "default.json").read_text(encoding="utf-8")
        '{"version": "toy-1"}'
        >>> import importlib.util
        >>> importlib.util.find_spec("example_pack_doc") is None
        True
    """

    def __init__(self, name: str, **packs: Mapping[str, Any]) -> None:
        if not name.isidentifier():
            raise ValueError(f"a package name must be an identifier, got {name!r}")
        self.name, self.packs = name, packs
        self._root: str | None = None

    def __enter__(self) -> str:
        if self._root is not None:
            raise RuntimeError(f"example package {self.name!r} is already in use")
        if self.name in sys.modules:
            raise RuntimeError(f"a module {self.name!r} is already imported; choose another example name")
        self._root = tempfile.mkdtemp(prefix="vlmjudge-example-")
        folder = Path(self._root, self.name)
        (folder / "packs").mkdir(parents=True)
        (folder / "__init__.py").write_text("", encoding="utf-8")
        for pack, content in self.packs.items():
            (folder / "packs" / f"{pack}.json").write_text(json.dumps(content), encoding="utf-8")
        sys.path.insert(0, self._root)
        importlib.invalidate_caches()
        return self.name

    def __exit__(self, *exc_info: Any) -> None:
        root, self._root = self._root, None
        if root in sys.path:
            sys.path.remove(root)
        sys.modules.pop(self.name, None)
        importlib.invalidate_caches()
        shutil.rmtree(root)


def tiny_judge(*, yes_bias: float = 0.0, seed: int = 0, **load_kwargs: Any) -> Any:
    """A CPU judge over a fresh tiny random VLM (`build_tiny_vlm` in a new temporary folder),
    for examples that run a real model; `load_kwargs` go to `load_judge` (cache, batch_size, ...).

    Examples:
        >>> judge = tiny_judge()
        >>> judge.device, judge.stats.model_calls
        ('cpu', 0)
    """
    from ..judge import load_judge
    from .tiny_vlm import build_tiny_vlm
    folder = Path(tempfile.mkdtemp(prefix="vlmjudge-example-"), "vlm")
    return load_judge(build_tiny_vlm(folder, yes_bias=yes_bias, seed=seed), **{"device": "cpu", **load_kwargs})
