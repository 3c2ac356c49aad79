"""Scripted judge -> judge-mode evaluate module (config `default`) -> model-free `evaluation` config,
with every metric computed by hand."""
import json
import math
from pathlib import Path

import pytest
from PIL import Image

FOLDER = Path(__file__).resolve().parents[2] / "metrics" / "viescore2"

# Scripted judge outputs (fields pq_sc+split, N = 16), keyed by prompt.
OUTPUTS = {
    "a": "pq: 8/10\nsc: 2/10\nartifact:\nr2: 3,4!\nmisalign:\nnone",
    "b": "pq: 4/10\nsc: 9/10\nartifact:\nnone\nmisalign:\nr1: 1\nr2: 1,2",
    "c": "pq: 9/10\nsc: 9/10\nartifact:\nnone\nmisalign:\nr8: 8",
    "d": "I cannot judge this image.",
}
# Hand-written ground truth, in the evaluation config's reference format.
REFERENCES = [
    {"grid": None, "artifact": "r2: 3,4", "misalign": "r5: 5", "score": None, "pq": 7.0, "sc": 3.0},
    {"grid": None, "artifact": "none", "misalign": "r1: 1,2", "score": None, "pq": 5.0, "sc": 8.0},
    {"grid": None, "artifact": "none", "misalign": "none", "score": None, "pq": 9.0, "sc": 10.0},
    {"grid": None, "artifact": "r4: 4", "misalign": "none", "score": None, "pq": 2.0, "sc": 1.0},
]


@pytest.fixture
def modules(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import evaluate
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"meta": {"prompt": p}, "text": t}) + "\n" for p, t in OUTPUTS.items()))
    judge_mode = evaluate.load(str(FOLDER), "default", model=str(answers), backend="replay",
                               judge_kwargs={"key_fields": ("prompt",)}, fields="pq_sc+split")
    return judge_mode, evaluate.load(str(FOLDER), "evaluation")


def test_judge_mode_then_evaluation_equal_hand_computed_values(modules):
    judge_mode, evaluation = modules
    images = [Image.new("RGB", (32, 32), (40 * i, 10, 10)) for i in range(4)]
    out = judge_mode.compute(images=images, prompts=list(OUTPUTS), conditioning=[[images[3]], [], [], []])
    assert out["scores"][:3] == pytest.approx([4.0, 6.0, 9.0]) and out["scores"][3] is None  # sqrt(pq * sc)
    assert out["viescore2"] == pytest.approx(19 / 3) and out["n_scored"] == 3
    assert out["parse_failures"] == 3 and out["status_counts"] == {"scored": 3, "failed": 1}
    assert out["records"][0]["num_conditioning"] == 1 and out["records"][1]["num_conditioning"] == 0
    assert [r["text"] for r in out["records"]] == list(OUTPUTS.values())

    m = evaluation.compute(predictions=[r["text"] for r in out["records"]], references=REFERENCES)
    # union cells. a: TP 2, FN 1 (r5c5); b: TP 1 (r1c1), FP 2, FN 1 (r1c2); c: FP 1 on a clean image;
    # d: parse failure, FN 1.
    assert (m["tp"], m["fp"], m["fn"]) == (3, 3, 3)
    assert m["micro_precision"] == m["micro_recall"] == m["micro_f1"] == pytest.approx(0.5)
    assert m["grid_iou"] == pytest.approx((2 / 3 + 1 / 4 + 0) / 3) and m["grid_iou_images"] == 3
    assert (m["clean_images"], m["false_alarms"], m["parse_failures"]) == (1, 1, 1)
    # artifact: a TP 2; d FN 1.  misalign: a FN 1; b TP 1, FP 2, FN 1; c FP 1.
    assert (m["artifact_tp"], m["artifact_fp"], m["artifact_fn"]) == (2, 0, 1)
    assert m["artifact_micro_f1"] == pytest.approx(4 / 5)
    assert (m["misalign_tp"], m["misalign_fp"], m["misalign_fn"]) == (1, 3, 2)
    assert m["misalign_micro_f1"] == pytest.approx(2 / 7)
    # SRCC over the three parsed pairs. pq 8,4,9 vs 7,5,9: same ranks. sc 2,9,9 vs 3,8,10: ranks
    # (1, 2.5, 2.5) vs (1, 2, 3) -> 1.5 / sqrt(1.5 * 2). overall 4,6,9 vs sqrt(21), sqrt(40), sqrt(90).
    assert m["srcc_pq"] == pytest.approx(1.0) and m["srcc_pq_pairs"] == 3 and m["srcc_pq_total"] == 4
    assert m["srcc_sc"] == pytest.approx(1.5 / math.sqrt(3))
    assert m["srcc_overall"] == pytest.approx(1.0) and m["srcc_overall_pairs"] == 3


def test_conditioning_is_optional_and_options_are_checked(modules, tmp_path):
    judge_mode, _ = modules
    out = judge_mode.compute(images=[Image.new("RGB", (16, 16))], prompts=["c"])
    assert out["scores"] == [pytest.approx(9.0)] and out["records"][0]["num_conditioning"] == 0
    import evaluate
    with pytest.raises(ValueError, match="config 'default' only"):
        evaluate.load(str(FOLDER), "evaluation", model="x")
    with pytest.raises(ValueError, match="bad fields key"):
        evaluate.load(str(FOLDER), "default", model="x", fields="pq_sc+colour")
