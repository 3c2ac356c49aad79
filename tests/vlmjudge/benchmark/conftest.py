"""Fixtures of the benchmark runner's tests: the offline fixture of the acceptance lines (12 prompts,
three models as folders of real photos, the demo judge), a tiny diffusers pipeline, and a stand-in
for the leaderboard and report writers, which another module provides: the runner's tests check
what the runner hands them, and one end-to-end test runs the real ones."""
from __future__ import annotations

from pathlib import Path

import pytest
from bench_run_support import MODELS, PROMPT_IDS, install_board_stand_ins
from bench_run_support import write_prompts as _write_prompts

DATA = Path(__file__).resolve().parents[2] / "data"
PHOTOS = sorted((DATA / "photos" / "heldout").glob("*.jpg")) + sorted((DATA / "photos" / "tune").glob("*.jpg"))


@pytest.fixture
def board_calls(monkeypatch):
    """The leaderboard and report stand-ins for one test (`install_board_stand_ins`)."""
    return install_board_stand_ins(monkeypatch)


@pytest.fixture(scope="session")
def board_stand_ins():
    """`install_board_stand_ins` itself, for module-scoped fixtures with their own MonkeyPatch."""
    return install_board_stand_ins


@pytest.fixture(scope="session")
def demo_judge(tmp_path_factory):
    """The demo judge of `python -m vlmjudge.testing demo DIR`, built once."""
    from vlmjudge.testing.demo import build_demo_judge

    return build_demo_judge(tmp_path_factory.mktemp("bench_demo") / "judge")


@pytest.fixture(scope="session")
def write_prompts():
    """`write_prompts(path, ids)`: a prompts CSV with ids, prompts and two categories."""
    return _write_prompts


@pytest.fixture(scope="session")
def photo_suite(tmp_path_factory):
    """The acceptance fixture: prompts.csv (12 prompts) and three model folders of 64 px photos, each
    model a different arrangement and turn of the photos, so their scores differ prompt by prompt."""
    from PIL import Image

    root = tmp_path_factory.mktemp("bench_fixture")
    _write_prompts(root / "prompts.csv")
    for shift, model in enumerate(MODELS):
        folder = root / model
        folder.mkdir()
        for n, pid in enumerate(PROMPT_IDS):
            image = Image.open(PHOTOS[(n + 4 * shift) % len(PHOTOS)]).convert("RGB").resize((64, 64))
            turned = image.rotate(90 * shift)  # each model's pixels its own: no image is any other's
            turned.save(folder / f"{pid}.png")
    return root


@pytest.fixture(scope="session")
def tiny_pipeline(tmp_path_factory):
    """A tiny random Stable Diffusion pipeline folder (`vlmjudge.testing.tiny_diffusers`)."""
    pytest.importorskip("diffusers")
    from vlmjudge.testing.tiny_diffusers import build_tiny_text_to_image

    return build_tiny_text_to_image(tmp_path_factory.mktemp("bench_pipeline") / "sd")
