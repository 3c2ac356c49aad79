"""The demo judge (`python -m vlmjudge.testing demo DIR`) that README's offline trial uses gives a
mix of outcomes in every method on ordinary renders. README's blocks themselves run as written in
tests/docs/test_doc_examples.py."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from vlmjudge import Request, load_judge



def ordinary_images(n: int = 10) -> list[Image.Image]:
    """Renders of the kind a newcomer tries first: gradients, flat shapes, noise, mixed sizes."""
    rng = np.random.default_rng(7)
    sizes = [(96, 64), (64, 64), (128, 96), (80, 120), (100, 100)]
    out = []
    for i in range(n):
        w, h = sizes[i % len(sizes)]
        kind = i % 3
        if kind == 0:  # a two-colour gradient
            ramp = np.linspace(0, 255, w)[None, :, None] * np.ones((h, 1, 3))
            ramp[..., i % 3] = 255 - ramp[..., i % 3]
            image = Image.fromarray(ramp.astype(np.uint8))
        elif kind == 1:  # shapes on a flat background
            image = Image.new("RGB", (w, h), tuple(int(v) for v in rng.integers(0, 255, 3)))
            draw = ImageDraw.Draw(image)
            draw.ellipse([5, 5, w // 2, h // 2], fill=(200, 30, 30))
            draw.rectangle([w // 2, h // 2, w - 5, h - 5], fill=(30, 30, 200))
        else:  # sensor-like noise
            image = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        out.append(image)
    return out


def build(kind: str, out: Path) -> None:
    """The builder CLI, as the documentation tells a newcomer to run it."""
    proc = subprocess.run([sys.executable, "-m", "vlmjudge.testing", kind, str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"built {kind}" in proc.stdout


@pytest.fixture(scope="module")
def trial(tmp_path_factory) -> Path:
    """A folder holding the demo judge (tiny-judge/), tiny-clip/, tiny-dino/ and a few images."""
    root = tmp_path_factory.mktemp("trial")
    build("demo", root / "tiny-judge")
    build("clip", root / "tiny-clip")
    build("dinov2", root / "tiny-dino")
    images = ordinary_images()
    for name, image in zip(["a", "b", "reference", "regenerated"], images[2:]):
        image.save(root / f"{name}.png")
    folder = root / "images"
    folder.mkdir()
    for i, image in enumerate(images):
        image.save(folder / f"img{i}.png")
    return root


@pytest.fixture(scope="module")
def demo_judge(trial):
    return load_judge(str(trial / "tiny-judge"), device="cpu", batch_size=32)


def test_the_demo_judge_is_a_plain_checkpoint(trial, demo_judge):
    from transformers import AutoModelForImageTextToText
    model = AutoModelForImageTextToText.from_pretrained(trial / "tiny-judge")
    assert model.config.model_type == "qwen3_vl"
    probs = demo_judge.choice_probs([Request(images=[str(trial / "a.png")], text="Is it red?", prefix="Answer:")],
                                    ["Yes", "No"])
    assert abs(sum(probs[0].values()) - 1) < 1e-6


def test_terravis_scores_most_ordinary_images_with_a_spread(demo_judge):
    from terravis import TerraVis
    records = TerraVis(demo_judge).score(ordinary_images())
    scores = [r.score for r in records if r.score is not None]
    assert len(scores) >= 5, [r.score for r in records]
    assert min(scores) < 1 and max(scores) > 0.05
    assert len({round(s, 6) for s in scores}) >= 2  # not one outcome for every image
    assert sum(r.n_major + r.n_minor for r in records if r.score is not None) > 0


def test_viescore2_scores_and_grids_parse(demo_judge):
    from viescore2 import VIEScore2
    records = VIEScore2(demo_judge, fields="pq_sc+split").score(ordinary_images(3), ["a red fox in the snow"] * 3)
    for record in records:
        assert record.read_status == "ok" and record.status == "scored", record.text
        assert set(record.scores) == {"pq", "sc"} and all(0 <= v <= 10 for v in record.scores.values())
        assert record.localization is not None and record.grid_status != "unparseable"


def test_fager_builds_a_rubric_and_decides(demo_judge, tmp_path):
    from fager import Fager
    fager = Fager(demo_judge, store=str(tmp_path / "qa-store"))
    qa_sets = fager.build_qa(["a red fox in the snow"])
    assert qa_sets[0].items and all(item.question for item in qa_sets[0].items)
    verdict = fager.score(ordinary_images(1), ["a red fox in the snow"], qa_sets=qa_sets)[0]
    assert verdict.decision in ("keep", "edit", "regenerate")
    assert verdict.counts.total > 0 and verdict.counts.failed < verdict.counts.total
