"""Every ```bash, ```shell and ```python block of README.md and docs/ runs as written, offline.

Each page runs in a fresh working folder, its blocks in order (shell blocks under
`bash -euo pipefail`, each python block in its own interpreter), so a page's later blocks use the
files its earlier blocks wrote, as a reader following the page would. `metrics/` is linked into
the folder because the pages run from a clone's root and use its bundled example images.
One block runs elsewhere: README's test command (CI runs it, `.ci/run`). What a page writes must
not land in the project's own folders (`fager/`, `bench/`, ...), and what README and the getting
started page write, a newcomer's first commands in their clone, lies where `.gitignore` ignores it.
"""
from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUNNABLE = ("bash", "shell", "sh", "python")
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
TEST_COMMAND = re.compile(r"<!-- test-command -->\n(.*?)<!-- /test-command -->", re.S)


def pages() -> list[Path]:
    """README and every page of docs/, in a stable order."""
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def fenced_blocks(text: str) -> list[tuple[str, str, int]]:
    """(language, body, offset) of each fenced block of `text`, in order."""
    return [(m.group(1), m.group(2), m.start()) for m in FENCE.finditer(text)]


def run_elsewhere(text: str) -> list[str]:
    """Bodies of the blocks on a page that another runner executes (see the module docstring)."""
    return [body for _, body, _ in fenced_blocks("".join(TEST_COMMAND.findall(text)))]


def runnable_blocks(page: Path) -> list[tuple[str, str]]:
    """(language, body) of the blocks of `page` this test runs, in page order."""
    text = page.read_text(encoding="utf-8")
    elsewhere = run_elsewhere(text)
    return [(lang, body) for lang, body, _ in fenced_blocks(text) if lang in RUNNABLE and body not in elsewhere]


def test_fenced_blocks_reads_languages_and_bodies():
    text = "x\n```bash\necho 1\n```\n\n```python title=\"a\"\nprint(2)\n```\n```text\nnot run\n```\n"
    assert [(lang, body) for lang, body, _ in fenced_blocks(text)] == [
        ("bash", "echo 1\n"), ("python", "print(2)\n"), ("text", "not run\n")]


def test_only_the_test_command_block_of_the_readme_is_left_to_ci():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    command = TEST_COMMAND.findall(text)
    assert len(command) == 1 and "pytest" in command[0] and "mkdocs build --strict" in command[0]
    readme_blocks = [body for lang, body, _ in fenced_blocks(text) if lang in RUNNABLE]
    assert len(readme_blocks) == len(runnable_blocks(REPO / "README.md")) + 1


def _environment() -> dict[str, str]:
    """Offline, this interpreter's folder first on PATH (its `vlmjudge` script), this checkout importable."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    pythonpath = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "HF_HUB_OFFLINE": "1", "PATH": path, "PYTHONPATH": pythonpath}


def ignored(name: str) -> bool:
    """Whether the repository's .gitignore ignores a top-level entry `name` (its lines are plain
    names and globs, anchored with a leading / or not; a negation would need git to read)."""
    for line in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines():
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        assert not pattern.startswith("!"), f".gitignore negates {pattern!r}: read it with git instead"
        if fnmatch.fnmatch(name, pattern.strip("/")):
            return True
    return False


def project_names() -> set[str]:
    """The top-level names the project holds: what git tracks, or outside a git checkout, what is
    there and not ignored."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True)
    if listed.returncode == 0 and listed.stdout:
        return {line.split("/")[0] for line in listed.stdout.splitlines()}
    return {p.name for p in REPO.iterdir() if not ignored(p.name)}


#: The pages a newcomer runs first in their clone: all they write must be ignored by git.
SCRATCH_ONLY = ("README.md", "docs/getting-started.md")
PAGES_WITH_EXAMPLES = [p for p in pages() if runnable_blocks(p)]


def test_ignored_reads_the_gitignore_patterns():
    assert ignored("runs") and ignored("__pycache__") and ignored("vlmjudge.egg-info")
    assert not ignored("fager") and not ignored("tiny-judge") and not ignored("results.jsonl")


@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_page_examples_run_as_written(page, tmp_path):
    (tmp_path / "metrics").symlink_to(REPO / "metrics", target_is_directory=True)
    env = _environment()
    for index, (lang, body) in enumerate(runnable_blocks(page)):
        argv = [sys.executable, "-c", body] if lang == "python" else ["bash", "-euo", "pipefail", "-c", body]
        proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (f"{page.name} block {index} ({lang}) failed:\n{body}\n"
                                      f"--- stdout\n{proc.stdout[-2000:]}\n--- stderr\n{proc.stderr[-3000:]}")
    written = sorted(p.name for p in tmp_path.iterdir() if p.name != "metrics")
    clash = sorted(set(written) & project_names())
    assert not clash, f"{page.name} writes into the project's own {clash}: write under a scratch name (runs/)"
    if page.relative_to(REPO).as_posix() in SCRATCH_ONLY:
        stray = [name for name in written if not ignored(name)]
        assert not stray, f"{page.name} writes {stray}, which .gitignore leaves in `git status`: write under runs/"
