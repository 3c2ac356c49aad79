"""Make `evaluate.load("terravis")` work by bare name, offline.

evaluate resolves a bare name by asking the Hub for `evaluate-metric/<name>`; when that
fails (offline, or no such Space), it falls back to the newest copy in its module
cache under `metrics/evaluate-metric--<name>/<hash>/`. `install_modules` seeds exactly
that cache entry from the metrics/ folders, with evaluate's own importable-file writer,
so the fallback finds our scripts from any directory.
"""
from __future__ import annotations

import os
from typing import Iterable

from .folders import metric_folders


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
