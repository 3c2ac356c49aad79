"""README's offline trial runs as written: the demo judge (`python -m vlmjudge.testing demo DIR`)
gives a mix of outcomes in every method, the "Run" command block gives a report with scored
images, and every ```python block of "Quick start per method" prints a result."""
import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from vlmjudge import Request, load_judge

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def section(title: str) -> str:
    """The README text under a "## title" heading, up to the next one."""
    return README.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


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
    """The builder CLI, as README tells a newcomer to run it."""
    proc = subprocess.run([sys.executable, "-m", "vlmjudge.testing", kind, str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"built {kind}" in proc.stdout


@pytest.fixture(scope="module")
def trial(tmp_path_factory) -> Path:
    """A folder as README's quick start expects it: tiny-judge/, tiny-clip/, tiny-dino/ and the
    images it names."""
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


# -- README blocks, run as written -----------------------------------------------------------------
def run_block() -> list[str]:
    """The offline lines of README's Run block: every command after the "offline" comment."""
    block = re.search(r"<!-- run-command -->\n```bash\n(.*?)```", README, flags=re.S).group(1)
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("#") and "offline" in line)
    return [line for line in lines[start + 1:] if line.strip() and not line.startswith("#")]


def test_the_run_block_gives_a_report_with_scored_images(tmp_path):
    commands = run_block()
    assert commands[0] == "python -m vlmjudge.testing demo tiny-judge/"
    assert all("--model tiny-judge/" in c for c in commands if " score " in c)
    images = tmp_path / "path" / "to" / "images"
    images.mkdir(parents=True)
    for i, image in enumerate(ordinary_images()):
        image.save(images / f"img{i}.png")
    env = {**os.environ, "HF_HUB_OFFLINE": "1",  # this venv's python and vlmjudge first
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    for command in commands:  # as written, each through the shell
        proc = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
        assert proc.returncode == 0, (command, proc.stdout[-1500:], proc.stderr[-2500:])
    lines = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    records = [r for r in lines if "id" in r]  # the first line is the run's manifest
    scored = [r for r in records if r["score"] is not None]
    assert len(records) == 10 and len(scored) >= 5
    html = (tmp_path / "terravis-report" / "report.html").read_text()
    worst = re.search(r"The (\d+) lowest-scored images", html)
    assert worst and int(worst.group(1)) >= 1 and "no lowest-scored images" not in html
    assert "<figure><img" in html  # the plots are there, not the empty-state message


def quick_start_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", section("Quick start per method"), flags=re.S)


def test_the_quick_start_section_has_every_method():
    code = "\n".join(quick_start_blocks())
    for name in ("TerraVis", "VIEScore2", "Fager", "SimilarityScorer"):
        assert f"import {name}" in code
    assert 'load_judge("tiny-judge/"' in code
    assert "python -m vlmjudge.testing demo tiny-judge/" in section("Quick start per method")


@pytest.mark.parametrize("index", range(len(quick_start_blocks())))
def test_each_quick_start_block_prints_a_result(index, trial, monkeypatch, capsys):
    monkeypatch.chdir(trial)
    code = quick_start_blocks()[index]
    namespace: dict = {}
    exec(compile(code, f"README quick start block {index}", "exec"), namespace)
    printed = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert len(printed) >= code.count("print("), printed
    if "TerraVis.summarize" in code:
        summary = ast.literal_eval(printed[0])
        assert summary["n_images"] == 2 and summary["n_scored"] >= 1
    if "fager.score" in code:
        assert namespace["verdicts"][0].decision in ("keep", "edit", "regenerate")
        decision = namespace["verdicts"][0].decision
        assert any(line.startswith(decision + " ") for line in printed)
    if "VIEScore2(" in code:
        assert any(line.startswith("{'pq': ") for line in printed)
    if "SimilarityScorer" in code:
        similarity = ast.literal_eval(printed[-1])  # the printed list of {'clip': %, 'dino': %}
        assert set(similarity[0]) == {"clip", "dino"}
