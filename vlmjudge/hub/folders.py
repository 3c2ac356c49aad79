"""The metric module folders (metrics/<name>/, installed as `vlmjudge.metric_modules`) and the
files each one carries to its Space: what installing evaluate modules, staging Spaces and the
apps' bundled examples all look up.
"""
from __future__ import annotations

import importlib.resources
import os
from pathlib import Path
from typing import Iterable

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
