"""Fixtures of the benchmark's tests. The runner's: the offline fixture of the acceptance lines (12
prompts, three models as folders of real photos, the demo judge), a tiny diffusers pipeline, and a
stand-in for the leaderboard and report writers (the runner's tests check what the runner hands
them; one end-to-end test runs the real ones). The leaderboard's: runs written as `vlmjudge
benchmark` lays them out, from scores given per model, method and record id."""
from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from bench_run_support import MODELS, PROMPT_IDS, install_board_stand_ins
from bench_run_support import write_prompts as _write_prompts

from vlmjudge.benchmark.suites import PromptSuite, SuitePrompt
from vlmjudge.outputs import write_manifest, write_records

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

#: Six prompts, tagged by two kinds of category.
BOARD_PROMPT_IDS = [f"p{k}" for k in range(6)]


def board_suite(ids=BOARD_PROMPT_IDS) -> PromptSuite:
    """A suite over `ids`: even prompts are "animals", odd "objects"; the first three also "counting"."""
    return PromptSuite("board-demo", [
        SuitePrompt(pid, f"a picture number {k}", {"category": ("animals" if k % 2 == 0 else "objects",),
                                                   **({"skill": ("counting",)} if k < 3 else {})})
        for k, pid in enumerate(ids)])


def record(method: str, record_id: str, score) -> dict:
    """A record of `method`: a number is scored, None not applicable, "failed" a failure."""
    status = "failed" if score == "failed" else "not_applicable" if score is None else "scored"
    value = score if status == "scored" else None
    if method == "viescore2":
        return {"id": record_id, "status": status, "score": value,
                "read_status": "error" if status == "failed" else "ok"}
    return {"id": record_id, "status": status, "score": value, "checks": [], "meta": {}}


def write_run(path: Path, method: str, records: list[dict], **manifest) -> str:
    """Records and their manifest (the method, one judge) at `path`; returns the path as text."""
    write_records(path, records)
    write_manifest(path, {"method": method, "model": "tiny-judge", "revision": None, **manifest})
    return str(path)


@pytest.fixture
def make_runs(tmp_path):
    """`make_runs({model: {method: {record id: score}}}, images=False)` -> runs for build_leaderboard;
    with `images`, a folder of images per model named in its manifests (`images`), one per record."""
    def make(scores: dict, images: bool = False) -> dict:
        runs: dict = {}
        for m, (model, by_method) in enumerate(scores.items()):
            folder = tmp_path / "images" / f"model{m}"
            if images:
                for k, record_id in enumerate(next(iter(by_method.values()))):
                    target = folder / f"{record_id}.png"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    Image.new("RGB", (24, 24), (40 * m, 30 * k % 256, 90)).save(target)
            for method, by_id in by_method.items():
                path = tmp_path / "runs" / f"model{m}" / method / "records.jsonl"
                extra = {"images": str(folder)} if images else {}
                runs.setdefault(model, {})[method] = write_run(
                    path, method, [record(method, i, s) for i, s in by_id.items()], **extra)
        return runs
    return make


@pytest.fixture
def suite_of():
    """`suite_of(ids)`: the tagged suite over `ids` (six prompts p0..p5 by default)."""
    return board_suite


@pytest.fixture
def run_writer():
    """`run_writer(path, method, records, **manifest)`: a run file and its manifest."""
    return write_run


@pytest.fixture
def run_record():
    """`run_record(method, id, score)`: a record of that method (None: N/A, "failed": a failure)."""
    return record
