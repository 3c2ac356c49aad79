"""The analyses over saved records reproduce hand-computed values on a small synthetic set."""
import math

import pytest
from PIL import Image

from terravis import score_annotations
from terravis.evaluation import (agreement, alpha_sweep, check_ablation, classify_styles, detection_agreement,
                               model_means, model_ranking, ranking_agreement, style_split)

E = math.exp


@pytest.fixture
def records():
    """i1 A: anatomy major; i2 A: clean; i3 B: structure + scale minor; i4 B: anatomy minor;
    i5 B: N/A; i6 A: structure major + anatomy major."""
    return score_annotations([
        {"image_id": "i1", "eligible": True, "meta": {"model": "A"},
         "violations": [{"type": "biological_anatomy", "severity": "major"}]},
        {"image_id": "i2", "eligible": True, "meta": {"model": "A"}},
        {"image_id": "i3", "eligible": True, "meta": {"model": "B"},
         "violations": [{"type": "structural_distortion", "severity": "minor"},
                        {"type": "relative_scale", "severity": "minor"}]},
        {"image_id": "i4", "eligible": True, "meta": {"model": "B"},
         "violations": [{"type": "biological_anatomy", "severity": "minor"}]},
        {"image_id": "i5", "eligible": False, "meta": {"model": "B"}},
        {"image_id": "i6", "eligible": True, "meta": {"model": "A"},
         "violations": [{"type": "structural_distortion", "severity": "major"},
                        {"type": "biological_anatomy", "severity": "major"}]},
    ])


HUMAN = {"i1": 2, "i2": 5, "i3": 3, "i4": 4, "i5": 3, "i6": [1, 2, None]}  # i6: mean of 1 and 2


def rho(dx, dy):
    """Pearson on (mid-)ranks, from deviations worked out by hand."""
    return sum(a * b for a, b in zip(dx, dy)) / math.sqrt(sum(a * a for a in dx) * sum(b * b for b in dy))


# Human ranks over i1, i2, i3, i4, i6 are 2, 5, 3, 4, 1: deviations from 3.
DY = [-1, 2, 0, 1, -2]


def test_agreement_pooled_and_per_model(records):
    out = agreement(records, HUMAN, groups="model")
    # scores e^-1, 1, e^-1, e^-0.5, e^-2 -> ranks 2.5, 5, 2.5, 4, 1
    assert out["pooled"]["n"] == 5
    assert out["pooled"]["spearman"] == pytest.approx(rho([-0.5, 2, -0.5, 1, -2], DY))  # 9.5 / sqrt(95)
    assert out["by_group"]["A"]["spearman"] == pytest.approx(1.0) and out["by_group"]["A"]["n"] == 3
    assert out["by_group"]["B"]["n"] == 2  # i5 is N/A
    assert agreement(records, HUMAN)["pooled"] == out["pooled"]
    with pytest.raises(KeyError, match="i6"):
        agreement(records, {k: v for k, v in HUMAN.items() if k != "i6"})


def test_alpha_sweep_table_a3(records):
    rows = alpha_sweep(records, HUMAN, alphas=(0.0, 0.5, 1.0), lams=(1.0, 3.0))
    by = {(r["lam"], r["alpha"]): r for r in rows}
    assert by[(1.0, 0.0)]["spearman"] == pytest.approx(rho([-1, 1, 1, 1, -2], DY))         # 8 / sqrt(80)
    assert by[(1.0, 0.5)]["spearman"] == pytest.approx(rho([-0.5, 2, -0.5, 1, -2], DY))
    assert by[(1.0, 1.0)]["spearman"] == pytest.approx(rho([0.5, 2, -1.5, 0.5, -1.5], DY))  # 7 / sqrt(90)
    for alpha in (0.0, 0.5, 1.0):  # lambda never changes a rank correlation, but may change Pearson
        assert by[(3.0, alpha)]["spearman"] == pytest.approx(by[(1.0, alpha)]["spearman"])
        assert by[(3.0, alpha)]["kendall"] == pytest.approx(by[(1.0, alpha)]["kendall"])
    assert by[(3.0, 0.5)]["pearson"] != pytest.approx(by[(1.0, 0.5)]["pearson"])


def test_check_ablation_table_a2(records):
    out = check_ablation(records, HUMAN)
    full = rho([-0.5, 2, -0.5, 1, -2], DY)
    assert out["full"]["spearman"] == pytest.approx(full)
    # anatomy alone: e^-1, 1, 1, e^-0.5, e^-1 -> ranks 1.5, 4.5, 4.5, 3, 1.5
    assert out["single"]["biological_anatomy"]["spearman"] == pytest.approx(rho([-1.5, 1.5, 1.5, 0, -1.5], DY))
    assert math.isnan(out["single"]["contact_state"]["spearman"])  # never detected: constant scores
    # without anatomy: 1, 1, e^-1, 1, e^-1 -> ranks 4, 4, 1.5, 4, 1.5
    loo = out["leave_one_out"]["biological_anatomy"]
    assert loo["spearman"] == pytest.approx(rho([1, 1, -1.5, 1, -1.5], DY))                 # 5 / sqrt(75)
    assert loo["delta"] == pytest.approx(loo["spearman"] - full)
    assert out["leave_one_out"]["contact_state"]["delta"] == pytest.approx(0.0)


def test_detection_agreement(records):
    labels = {"i1": [True, True, False], "i2": [False] * 3, "i3": [False, False, True], "i4": [True] * 3,
              "i5": [True] * 3, "i6": [True, False, True]}
    out = detection_agreement(records, labels)
    assert (out["tp"], out["fp"], out["fn"], out["tn"], out["skipped"]) == (3, 1, 0, 1, 1)
    assert out["precision"] == 0.75 and out["recall"] == 1.0


def test_style_split(records):
    styles = {"i1": "photorealistic", "i2": "photorealistic", "i5": "photorealistic",
              "i3": "stylized", "i4": "stylized", "i6": "stylized"}
    out = style_split(records, HUMAN, styles)
    assert out["photorealistic"]["n"] == 2 and out["stylized"]["n"] == 3
    # stylized: (e^-1, 3), (e^-0.5, 4), (e^-2, 1.5): concordant
    assert out["stylized"]["spearman"] == pytest.approx(1.0) and out["stylized"]["kendall"] == pytest.approx(1.0)


def test_classify_styles_with_a_plugged_classifier_and_checks():
    labels = classify_styles(["a", "b"], ["x", "y"], classifier=lambda imgs: ["stylized"] * len(imgs))
    assert labels == {"x": "stylized", "y": "stylized"}
    with pytest.raises(ValueError, match="labels"):
        classify_styles(["a", "b"], ["x", "y"], classifier=lambda imgs: ["stylized"])


def test_default_siglip_classifier_loads_lazily(tmp_path):
    from terravis.style import SigLIPStyleClassifier
    from vlmjudge.testing.tiny_encoders import build_tiny_siglip

    path = build_tiny_siglip(tmp_path / "siglip")
    clf = SigLIPStyleClassifier(path)
    assert clf._model is None
    imgs = [Image.new("RGB", (40, 30), (200, 10, 10)), Image.new("RGB", (64, 64), (10, 10, 200))]
    labels = classify_styles(imgs, ["r", "b"], classifier=clf)
    assert set(labels.values()) <= {"photorealistic", "stylized"} and clf._model is not None
    # The label is the argmax over captions: check it against the model's own logits.
    import torch
    inputs = clf._processor(text=[c for caps in clf.prompts.values() for c in caps], images=imgs,
                            padding="max_length", return_tensors="pt")
    with torch.inference_mode():
        best = clf._model(**inputs).logits_per_image.argmax(-1).tolist()
    caption_labels = [k for k, caps in clf.prompts.items() for _ in caps]
    assert [labels["r"], labels["b"]] == [caption_labels[i] for i in best]


def test_model_ranking_and_agreement_table_a4(records):
    means = model_means(records, "model")
    assert means == {"A": pytest.approx((E(-1) + 1 + E(-2)) / 3), "B": pytest.approx((E(-1) + E(-0.5)) / 2)}
    ranking = model_ranking(means)
    assert [r["model"] for r in ranking] == ["A", "B"] and [r["rank"] for r in ranking] == [1, 2]
    evaluators = {"gpt": {"A": 0.5, "B": 0.4, "C": 0.3}, "gemma": {"A": 0.6, "B": 0.2, "C": 0.3},
                  "qwen": {"A": 0.1, "B": 0.2, "C": 0.3}}
    out = ranking_agreement(evaluators)
    assert out["pairs"][("gpt", "gemma")] == pytest.approx(1 / 3)
    assert out["pairs"][("gpt", "qwen")] == pytest.approx(-1.0)
    assert out["pairs"][("gemma", "qwen")] == pytest.approx(-1 / 3)
    assert out["mean"] == pytest.approx(-1 / 3)
    assert model_ranking({"x": 0.5, "y": 0.5, "z": 0.9})[1]["rank"] == 2
    with pytest.raises(ValueError):
        ranking_agreement({"only": {"A": 1.0}})
