"""Make `evaluate.load("terravis")` work by bare name, offline, and stage or push metric Spaces.

evaluate resolves a bare name by asking the Hub for `evaluate-metric/<name>`; when that
fails (offline, or no such Space), it falls back to the newest copy in its module
cache under `metrics/evaluate-metric--<name>/<hash>/`. `install_modules` seeds exactly
that cache entry from the metrics/ folders, with evaluate's own importable-file writer,
so the fallback finds our scripts from any directory.
"""
from __future__ import annotations

import importlib.resources
import os
from pathlib import Path
from typing import Any, Iterable

#: Files a metrics/<name>/ folder carries to its Space.
SPACE_FILES = ("README.md", "app.py", "requirements.txt")


def default_metrics_dir() -> Path:
    """The metric module folders as installed: `vlmjudge.metric_modules` (the repo's metrics/).

    setup.py maps the repository-root metrics/ folder to that package, so the same lookup finds it in
    an editable install (the checkout's folder) and in a wheel (site-packages).
    """
    return Path(str(importlib.resources.files("vlmjudge.metric_modules")))


def metric_folders(metrics_dir: str | os.PathLike | None = None, names: Iterable[str] | None = None) -> list[Path]:
    """The metric module folders: each `<dir>/<name>/<name>.py`."""
    root = Path(metrics_dir) if metrics_dir else default_metrics_dir()
    if not root.is_dir():
        raise FileNotFoundError(f"no metrics folder at {root}")
    wanted = set(names) if names else None
    found = [d for d in sorted(root.iterdir()) if (d / f"{d.name}.py").is_file()
             and (wanted is None or d.name in wanted)]
    if wanted:
        missing = wanted - {d.name for d in found}
        if missing:
            raise FileNotFoundError(f"no metric module for {sorted(missing)} under {root}")
    return found


def install_modules(metrics_dir: str | os.PathLike | None = None, names: Iterable[str] | None = None) -> dict[str, str]:
    """Seed evaluate's module cache with each metric under its canonical bare name.

    Returns name -> the importable module path evaluate will load.
    """
    from evaluate.loading import (DownloadConfig, DownloadMode, _create_importable_file,
                                  _download_additional_modules, get_imports, init_dynamic_modules)
    dynamic_path = init_dynamic_modules()
    installed = {}
    for folder in metric_folders(metrics_dir, names):
        script = str(folder / f"{folder.name}.py")
        local_imports = _download_additional_modules(name=folder.name, base_path=str(folder),
                                                     imports=get_imports(script), download_config=DownloadConfig())
        module_path, _hash = _create_importable_file(
            local_path=script, local_imports=local_imports, additional_files=[],
            dynamic_modules_path=dynamic_path, module_namespace="metrics",
            name=f"evaluate-metric/{folder.name}", download_mode=DownloadMode.FORCE_REDOWNLOAD)
        installed[folder.name] = module_path
    return installed


def space_files(folder: str | os.PathLike) -> list[Path]:
    """The files a metric's Space needs: its script plus the card, app and requirements."""
    folder = Path(folder)
    script = folder / f"{folder.name}.py"
    if not script.is_file():
        raise FileNotFoundError(f"{folder} has no {script.name}")
    missing = [n for n in SPACE_FILES if not (folder / n).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} lacks {missing} for a Space")
    return [script, *(folder / n for n in SPACE_FILES)]


def push_space(folder: str | os.PathLike, repo_id: str, **kwargs: Any) -> list[str]:
    """Kept for callers of the first release: the Space push now lives in `vlmjudge.spaces`."""
    from .spaces import push_space as push
    return push(folder, repo_id, **kwargs)
