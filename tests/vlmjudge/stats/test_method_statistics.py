"""Each method's own statistic, as `vlmjudge.stats` recomputes it on resamples, equals the
method's own summary on the full data (the identity resample), and a resample changes it."""
import math

import numpy as np
import pytest

from vlmjudge.registry import get_method
from vlmjudge.stats.statistic import stacked, value_of


def _stat(method, name):
    return get_method(method).statistics[name]


def test_terravis_mean_and_violation_shares_match_summarize():
    from terravis.core import summarize
    from terravis.human import score_annotations
    from terravis.records import ImageRecord

    rng = np.random.default_rng(3)
    types = ["support_stability", "relative_scale", "optical_effect", "contact_state"]
    annotations = [{"image_id": f"im{k}", "eligible": bool(k % 5),
                    "violations": [{"type": str(t), "severity": str(rng.choice(["major", "minor"]))}
                                   for t in rng.choice(types, size=int(rng.integers(0, 3)), replace=False)
                                   if k % 5]}
                   for k in range(30)]
    records = score_annotations(annotations)
    records.append(ImageRecord("broken", status="failed"))
    summary = summarize(records)
    rows = [r.to_json() for r in records]
    assert value_of(rows, _stat("terravis", "mean_score")) == pytest.approx(summary["mean_score"])
    for level, share in summary["level_shares"].items():
        assert value_of(rows, _stat("terravis", f"level_share_{level}")) == pytest.approx(share)
    for t in types:
        assert value_of(rows, _stat("terravis", f"type_share_{t}")) == pytest.approx(summary["type_shares"][t])
    x = stacked(rows, _stat("terravis", "mean_score"))
    assert len(x) == summary["n_scored"]  # N/A and failed images are left out


def test_viescore2_score_f1_iou_and_srcc_match_the_evaluation():
    from viescore2.evaluation import Reference, srcc
    from viescore2.grid import Grid
    from viescore2.report import summarize_run
    from viescore2.saved_runs import suite_report

    rng = np.random.default_rng(5)
    texts, refs = [], []
    for k in range(25):
        pred = {(int(r), int(c)) for r, c in rng.integers(1, 5, (int(rng.integers(0, 4)), 2))}
        true = {(int(r), int(c)) for r, c in rng.integers(1, 5, (int(rng.integers(0, 4)), 2))}
        cells = "\n".join(f"r{r}: {c}" for r, c in sorted(pred)) or "none"
        texts.append(f"score: {int(rng.integers(0, 11))}/10\n{cells}")
        refs.append(Reference(Grid(true, n=4), {"score": float(rng.integers(0, 11))}))
    report = suite_report(texts, refs, n=4)
    rows = [{**row, "id": f"x{k}", "human_score": ref.scores["score"]} for k, (row, ref) in enumerate(zip(report["rows"], refs))]
    f1 = value_of(rows, _stat("viescore2", "micro_f1"))
    assert round(f1, 4) == report["summary"]["cell_f1_micro"]
    assert value_of(rows, _stat("viescore2", "pooled_iou")) == pytest.approx(f1 / (2 - f1))  # Jaccard from F1
    expected = srcc([r["pred_score"] for r in rows], [r["human_score"] for r in rows]).value
    assert value_of(rows, _stat("viescore2", "srcc")) == pytest.approx(expected)
    runs = [{"id": r["id"], "score": r["pred_score"], "status": "ok"} for r in rows]
    assert value_of(runs, _stat("viescore2", "mean_score")) == pytest.approx(summarize_run(runs)["mean_score"])


def test_fager_overall_levels_and_ab_accuracy_match_the_method():
    from fager.evaluation import TIE_MODES, ab_test
    from fager.report import summarize_verdicts
    from fager.schema import QAItem
    from fager.scoring import score_answers
    from fager.statistics import ab_records

    rng = np.random.default_rng(7)
    items = [QAItem(question=f"q{k}?", level=f"level_{1 + k % 3}", category="existence", importance="high",
                    source_fact=f"fact {k}") for k in range(6)]
    verdicts = [score_answers(items, [str(a) for a in rng.choice(["yes", "no", "unknown"], 6)], prompt=f"p{k}")
                .model_copy(update={"id": f"p{k}"}) for k in range(20)]
    summary = summarize_verdicts(verdicts)
    rows = [v.model_dump(mode="json") for v in verdicts]
    assert value_of(rows, _stat("fager", "overall")) == pytest.approx(summary["mean_overall"])
    for level, mean in summary["mean_level"].items():
        if mean is not None:
            assert value_of(rows, _stat("fager", f"mean_{level}")) == pytest.approx(mean)
    factual = {f"p{k}": float(rng.integers(0, 5)) for k in range(40)}
    generated = {f"p{k}": float(rng.integers(0, 5)) for k in range(40)}
    for tie in TIE_MODES:
        report = ab_test(factual, generated, tie=tie)
        assert value_of(ab_records(report), _stat("fager", f"ab_accuracy_{tie}")) == pytest.approx(report.accuracy)


def test_regeneration_clip_and_dino_match_the_benchmark_summary():
    from regeneration.evaluation.benchmark import summarize
    from regeneration.records import ItemResult

    rng = np.random.default_rng(11)
    results = [ItemResult(id=f"i{k}", status="scored", score=50.0, clip=float(rng.uniform(60, 100)),
                          dino=float(rng.uniform(30, 90))) for k in range(15)] + [ItemResult(id="bad", status="failed")]
    summary = summarize("m", results)
    rows = [r.to_json() for r in results]
    assert value_of(rows, _stat("regeneration", "clip")) == pytest.approx(summary["clip"])
    assert value_of(rows, _stat("regeneration", "dino")) == pytest.approx(summary["dino"])


@pytest.mark.parametrize("method", ["terravis", "viescore2", "fager", "regeneration"])
def test_every_compute_takes_a_batch_of_resamples_like_one_resample(method):
    """A vectorised compute (axis=1 over (resamples, n, k)) gives what one call per resample gives."""
    rng = np.random.default_rng(0)
    for name, stat in get_method(method).statistics.items():
        width = {"terravis": 3 if "level" in name else 18, "viescore2": 3 if name in ("micro_f1", "pooled_iou") else 2}
        k = width.get(method, 1) if not name.endswith("mean_score") else 1
        x = rng.integers(0, 4, (6, 12, k)).astype(float)
        try:
            batch = np.asarray(stat.compute(x, axis=1))
        except TypeError:
            continue  # a compute without axis (SRCC) is called once per resample
        single = np.array([float(stat.compute(row)) for row in x])
        assert np.allclose(batch, single, equal_nan=True), name
        assert not math.isnan(single[0]) or method == "fager"
