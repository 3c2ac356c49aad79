"""The paper's analyses over saved records, without asking a judge again.

Agreement with humans (pooled and per T2I model), image-level detection against the human
majority, the weight sweep (Table A3), single-check and leave-one-check-out ablations
(Table A2), the photorealistic vs stylized split, and T2I-model rankings with their
agreement between evaluators (Kendall tau, Table A4).

Human ratings are given per image id: a number (the mean 1-5 rating), None (N/A), or the
list of each annotator's ratings (None for N/A), reduced with `scoring.human_rating`.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Mapping, Sequence

from .records import ImageRecord
from vlmjudge.stats import rankings

from .scoring import correlations, correlations_by_group, detection_precision_recall, human_rating
from .taxonomy import TYPE_IDS

HumanRatings = Mapping[str, "float | None | Sequence[float | None]"]


def human_value(value: Any) -> float | None:
    """One image's human score from a mean, None (N/A), or the annotators' ratings.

    Examples:
        >>> human_value([5, 5, 4]), human_value(3), human_value(None), human_value([4, None, None])
        (4.666666666666667, 3.0, None, None)
    """
    if value is None or isinstance(value, (int, float)):
        return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
    return human_rating(list(value))


def _aligned(records: Sequence[ImageRecord], human: HumanRatings) -> list[float | None]:
    missing = [r.id for r in records if r.id not in human]
    if missing:
        raise KeyError(f"no human rating for images {missing[:5]}{' ...' if len(missing) > 5 else ''}")
    return [human_value(human[r.id]) for r in records]


def groups_of(records: Sequence[ImageRecord], groups: Mapping[str, str] | str) -> list[str]:
    """Each record's group (T2I model): from a mapping by image id, or a key of `record.meta`.

    Examples:
        >>> from terravis.records import ImageRecord
        >>> records = [ImageRecord("a", meta={"model": "sdxl"}), ImageRecord("b", meta={"model": "flux"})]
        >>> groups_of(records, "model"), groups_of(records, {"a": "x", "b": "y"})
        (['sdxl', 'flux'], ['x', 'y'])
    """
    if isinstance(groups, str):
        missing = [r.id for r in records if groups not in r.meta]
        if missing:
            raise KeyError(f"records {missing[:5]} have no meta[{groups!r}]")
        return [str(r.meta[groups]) for r in records]
    missing = [r.id for r in records if r.id not in groups]
    if missing:
        raise KeyError(f"no group for images {missing[:5]}")
    return [str(groups[r.id]) for r in records]


def agreement(records: Sequence[ImageRecord], human: HumanRatings,
              groups: Mapping[str, str] | str | None = None) -> dict[str, Any]:
    """Spearman, Kendall and Pearson of record scores with human ratings, N/A on either side
    excluded; pooled, and per group when `groups` is given.

    Examples:
        Image "d" has no human rating (N/A) and is left out:

        >>> from terravis.records import ImageRecord
        >>> records = [ImageRecord(i, score=s) for i, s in [("a", 1.0), ("b", 0.61), ("c", 0.37), ("d", 0.5)]]
        >>> r = agreement(records, {"a": [5, 5, 4], "b": 4, "c": [2, 3, None], "d": None})["pooled"]
        >>> r["n"], r["spearman"], r["kendall"]
        (3, 1.0, 1.0)
    """
    pred, ref = [r.score for r in records], _aligned(records, human)
    if groups is None:
        return {"pooled": correlations(pred, ref)}
    return correlations_by_group(pred, ref, groups_of(records, groups))


def detection_agreement(records: Sequence[ImageRecord],
                        human_labels: Mapping[str, Sequence[bool | None] | bool | None]) -> dict[str, Any]:
    """Image-level "has a violation" precision/recall against the annotators' majority.

    Examples:
        >>> from terravis.records import ImageRecord
        >>> records = [ImageRecord("a", score=1.0), ImageRecord("b", score=0.61, n_minor=1),
        ...            ImageRecord("c", score=0.37, n_major=1)]
        >>> r = detection_agreement(records, {"a": [False, False, True], "b": [True, False, False], "c": True})
        >>> r["tp"], r["fp"], r["tn"], r["precision"]
        (1, 1, 1, 0.5)
    """
    missing = [r.id for r in records if r.id not in human_labels]
    if missing:
        raise KeyError(f"no human labels for images {missing[:5]}")
    return detection_precision_recall([r.has_violation for r in records],
                                      [human_labels[r.id] for r in records])


def alpha_sweep(records: Sequence[ImageRecord], human: HumanRatings,
                alphas: Iterable[float] = (0.0, 0.25, 0.5, 0.75, 1.0),
                lams: Iterable[float] = (1.0,)) -> list[dict[str, Any]]:
    """Correlations after re-scoring every record with each (lam, alpha) (Table A3); lam
    alone never changes Spearman or Kendall.

    Examples:
        Re-scored without asking a judge: with alpha = 0 the minor violation stops counting, so
        "b" ties the clean image "a":

        >>> from terravis.records import CheckRecord, ImageRecord
        >>> def record(image_id, **severities):
        ...     checks = [CheckRecord(t, detected=True, severity=s) for t, s in severities.items()]
        ...     return ImageRecord(image_id, score=1.0, checks=checks)
        >>> records = [record("a"), record("b", optical_effect="minor"), record("c", contact_state="major")]
        >>> rows = alpha_sweep(records, {"a": 5, "b": 4, "c": 2}, alphas=(0.0, 0.5))
        >>> [(row["alpha"], round(row["spearman"], 3)) for row in rows]
        [(0.0, 0.866), (0.5, 1.0)]
    """
    ref = _aligned(records, human)
    rows = []
    for lam in lams:
        for alpha in alphas:
            pred = [r.rescore(lam, alpha) for r in records]
            rows.append({"lam": lam, "alpha": alpha, **correlations(pred, ref)})
    return rows


def check_ablation(records: Sequence[ImageRecord], human: HumanRatings, lam: float = 1.0,
                   alpha: float = 0.5, metric: str = "spearman") -> dict[str, Any]:
    """Each check alone and the full set without each check (Table A2): correlations, and
    for leave-one-out the change `delta` of `metric` from the full set.

    Examples:
        >>> from terravis.records import CheckRecord, ImageRecord
        >>> def record(image_id, **severities):
        ...     checks = [CheckRecord(t, detected=True, severity=s) for t, s in severities.items()]
        ...     return ImageRecord(image_id, score=1.0, checks=checks)
        >>> records = [record("a"), record("b", optical_effect="minor"), record("c", contact_state="major")]
        >>> result = check_ablation(records, {"a": 5, "b": 4, "c": 2})
        >>> result["full"]["spearman"], round(result["leave_one_out"]["optical_effect"]["delta"], 3)
        (1.0, -0.134)
    """
    ref = _aligned(records, human)
    full = correlations([r.rescore(lam, alpha) for r in records], ref)
    single, loo = {}, {}
    for t in TYPE_IDS:
        single[t] = correlations([r.rescore(lam, alpha, only=[t]) for r in records], ref)
        without = correlations([r.rescore(lam, alpha, drop=[t]) for r in records], ref)
        loo[t] = {**without, "delta": without[metric] - full[metric]}
    return {"full": full, "single": single, "leave_one_out": loo}


def style_split(records: Sequence[ImageRecord], human: HumanRatings,
                styles: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Correlations within each style class (photorealistic, stylized), N/A excluded.

    Examples:
        >>> from terravis.records import ImageRecord
        >>> scores = {"a": 1.0, "b": 0.6, "c": 0.4, "d": 0.9, "e": 0.2}
        >>> records = [ImageRecord(i, score=s) for i, s in scores.items()]
        >>> styles = {"a": "photo", "b": "photo", "c": "photo", "d": "stylized", "e": "stylized"}
        >>> split = style_split(records, {"a": 5, "b": 4, "c": 2, "d": 3, "e": 4}, styles)
        >>> sorted(split), split["photo"]["n"], round(split["photo"]["spearman"], 6)
        (['photo', 'stylized'], 3, 1.0)
    """
    labels = groups_of(records, styles)
    return correlations_by_group([r.score for r in records], _aligned(records, human), labels)["by_group"]


def classify_styles(images: Sequence[Any], ids: Sequence[str],
                    classifier: Callable[[Sequence[Any]], Sequence[str]] | None = None) -> dict[str, str]:
    """Style labels by image id from any classifier (images -> labels); the default is
    zero-shot SigLIP, loaded on first use.

    Examples:
        Any callable from images to labels will do (the default loads SigLIP):

        >>> classify_styles(["img0", "img1"], ["a", "b"], classifier=lambda images: ["photo", "stylized"])
        {'a': 'photo', 'b': 'stylized'}
    """
    if len(images) != len(ids):
        raise ValueError(f"{len(images)} images for {len(ids)} ids")
    if classifier is None:
        from .style import SigLIPStyleClassifier
        classifier = SigLIPStyleClassifier()
    labels = list(classifier(list(images)))
    if len(labels) != len(ids):
        raise ValueError(f"the classifier returned {len(labels)} labels for {len(ids)} images")
    return dict(zip(ids, labels))


def model_means(records: Sequence[ImageRecord], groups: Mapping[str, str] | str = "model") -> dict[str, float]:
    """Mean score per T2I model over its scored images (models with none are left out).

    Examples:
        >>> from terravis.records import ImageRecord
        >>> runs = [("a", 1.0, "sdxl"), ("b", 0.5, "sdxl"), ("c", None, "flux"), ("d", 0.6, "flux")]
        >>> records = [ImageRecord(i, score=s, meta={"model": m}) for i, s, m in runs]
        >>> model_means(records)
        {'sdxl': 0.75, 'flux': 0.6}
    """
    sums: dict[str, list[float]] = {}
    for r, g in zip(records, groups_of(records, groups)):
        if r.score is not None:
            sums.setdefault(g, []).append(r.score)
    return {g: sum(v) / len(v) for g, v in sums.items()}


def model_ranking(means: Mapping[str, float]) -> list[dict[str, Any]]:
    """T2I models best first, with 1-based ranks (ties share the best rank).

    Examples:
        >>> [(row["model"], row["rank"]) for row in model_ranking({"sdxl": 0.75, "flux": 0.6, "dalle": 0.75})]
        [('dalle', 1), ('sdxl', 1), ('flux', 3)]
    """
    place = dict(zip(means, rankings.ranks(list(means.values()), ties="min").tolist()))
    ordered = sorted(means.items(), key=lambda kv: (-kv[1], kv[0]))
    return [{"model": model, "mean_score": mean, "rank": int(place[model])} for model, mean in ordered]


def ranking_agreement(evaluators: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """Kendall tau between the T2I-model mean scores of every pair of evaluators (over the
    models both rated), and their mean (Table A4).

    Examples:
        Two evaluators order three T2I models with one swapped pair: tau = (2 - 1) / 3:

        >>> result = ranking_agreement({"terravis": {"A": 0.8, "B": 0.5, "C": 0.3},
        ...                             "human": {"A": 4.1, "B": 3.0, "C": 3.5}})
        >>> round(result["pairs"]["terravis", "human"], 4), round(result["mean"], 4)
        (0.3333, 0.3333)
    """
    if len(evaluators) < 2:
        raise ValueError("ranking agreement needs at least two evaluators")
    result = rankings.ranking_agreement(evaluators)
    return {"pairs": result["pairs"], "mean": result["mean"]}
