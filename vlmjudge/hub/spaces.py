"""Stage a metric's Space folder: its module, card and app, the vlmjudge wheel, pinned requirements.

vlmjudge is on no package index, so a Space cannot `pip install vlmjudge`. The staged folder carries
the wheel beside app.py and a requirements.txt that installs it, with gradio pinned at the card's
`sdk_version` (the gradio the Space runtime starts), so what the Space builds is what was tested.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .folders import metric_folders, space_files

#: Requirement names the staged file writes itself (the bundled wheel and the pinned gradio).
_REPLACED = {"vlmjudge", "gradio"}
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def card_sdk_version(card: str | Path) -> str:
    """The `sdk_version` of a metric card's YAML front matter; a Space cannot build without it."""
    from huggingface_hub.repocard import metadata_load
    meta = metadata_load(Path(card)) or {}
    version = meta.get("sdk_version")
    if not version:
        raise ValueError(f"{card} has no sdk_version in its YAML front matter")
    return str(version)


def staged_requirements(source_text: str, wheel_name: str, gradio_version: str) -> str:
    """The Space's requirements: the bundled wheel with the demo extra, gradio pinned, then the rest."""
    kept = []
    for line in source_text.splitlines():
        stripped = line.split("#", 1)[0].strip()
        match = _NAME.match(stripped)
        if not stripped or (match and match.group(1).lower() in _REPLACED):
            continue
        kept.append(stripped)
    return "\n".join([f"./{wheel_name}[demo]", f"gradio=={gradio_version}", *kept]) + "\n"


def source_checkout() -> Path | None:
    """The checkout vlmjudge is imported from (an editable install), or None for a wheel install."""
    root = Path(__file__).resolve().parents[1]
    return root if (root / "setup.py").is_file() and (root / "setup.cfg").is_file() else None


def build_wheel(out_dir: str | Path) -> Path:
    """Build the vlmjudge wheel from the checkout this install runs from; a wheel install must name one."""
    root = source_checkout()
    if root is None:
        raise FileNotFoundError("vlmjudge is installed from a wheel, not from a checkout: "
                                "pass --wheel PATH, the vlmjudge wheel to bundle")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out_dir), str(root)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"building the vlmjudge wheel failed:\n{result.stderr[-2000:]}")
    wheels = sorted(out_dir.glob("vlmjudge-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip wheel wrote no vlmjudge wheel into {out_dir}")
    return wheels[-1]


def metric_folder(name_or_folder: str | Path) -> Path:
    """A metric folder given as a path, or by bare name among the installed metric modules."""
    path = Path(name_or_folder)
    if path.is_dir():
        return path
    if "/" in str(name_or_folder) or "\\" in str(name_or_folder):
        raise FileNotFoundError(f"no metric folder at {path}")
    return metric_folders(names=[str(name_or_folder)])[0]


def stage_space(name_or_folder: str | Path, out_dir: str | Path, wheel: str | Path | None = None) -> list[Path]:
    """Write the Space folder into `out_dir` (script, card, app, wheel, pinned requirements)."""
    folder = metric_folder(name_or_folder)
    files = space_files(folder)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if wheel is None:
        with tempfile.TemporaryDirectory() as tmp:
            return _write_stage(folder, files, out_dir, build_wheel(tmp))
    wheel = Path(wheel)
    if not wheel.is_file() or not wheel.name.startswith("vlmjudge-") or wheel.suffix != ".whl":
        raise FileNotFoundError(f"--wheel must be a vlmjudge-*.whl file, got {wheel}")
    return _write_stage(folder, files, out_dir, wheel)


def _write_stage(folder: Path, files: list[Path], out_dir: Path, wheel: Path) -> list[Path]:
    """Copy the folder's files and the wheel, then write the pinned requirements over the copy."""
    staged = []
    for path in files:
        if path.name != "requirements.txt":
            staged.append(Path(shutil.copy2(path, out_dir / path.name)))
    staged.append(Path(shutil.copy2(wheel, out_dir / wheel.name)))
    examples = folder / "examples"
    if examples.is_dir():  # the Space's bundled example inputs
        shutil.copytree(examples, out_dir / "examples", dirs_exist_ok=True)
        staged.extend(sorted(p for p in (out_dir / "examples").rglob("*") if p.is_file()))
    requirements = out_dir / "requirements.txt"
    requirements.write_text(staged_requirements((folder / "requirements.txt").read_text(), wheel.name,
                                                card_sdk_version(folder / "README.md")))
    staged.append(requirements)
    return staged


def push_space(name_or_folder: str | Path, repo_id: str, *, wheel: str | Path | None = None, api=None,
               private: bool = False, token: str | None = None) -> list[str]:
    """Stage the Space (see `stage_space`), create or reuse the Space `repo_id`, and upload the stage."""
    if repo_id.count("/") != 1:
        raise ValueError(f"--repo must be ORG/NAME, got {repo_id!r}")
    if api is None:
        from huggingface_hub import HfApi
        api = HfApi(token=token)
    with tempfile.TemporaryDirectory() as stage:
        staged = stage_space(name_or_folder, stage, wheel=wheel)
        api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
        names = [path.relative_to(stage).as_posix() for path in staged]
        for path, name in zip(staged, names):
            api.upload_file(path_or_fileobj=str(path), path_in_repo=name, repo_id=repo_id, repo_type="space")
    return names
