"""Pure functions of TerraVis scoring and its evaluation: no judge, no records, just numbers.

The score S = exp(-lam * (N_major + alpha * N_minor)) (paper Eq. 1); aggregation over
eligible images; agreement with human 1-5 ratings (Spearman, Kendall, Pearson), with N/A
on either side excluded; image-level detection precision and recall against the majority
of human annotators.
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Hashable, Iterable, Literal, Sequence

from .taxonomy import LEVELS, TYPE_IDS, get_type


def check_weights(lam: float, alpha: float) -> None:
    """Raise unless lam > 0 and 0 <= alpha <= 1 (the ranges the paper defines).

    Examples:
        >>> check_weights(1.0, 0.5)
        >>> check_weights(1.0, 1.5)
        Traceback (most recent call last):
        ...
        ValueError: alpha must be in [0, 1], got 1.5
    """
    if not (isinstance(lam, (int, float)) and math.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be a finite number > 0, got {lam!r}")
    if not (isinstance(alpha, (int, float)) and 0 <= alpha <= 1):
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")


def score_from_counts(n_major: int, n_minor: int, lam: float = 1.0, alpha: float = 0.5) -> float:
    """S = exp(-lam (N_major + alpha N_minor)): 1 for a clean eligible image, sharply lower
    for the first violations, with diminishing further decreases.

    Examples:
        A clean eligible image scores 1; one major and two minor violations give
        exp(-(1 + 0.5 * 2)) = exp(-2):

        >>> score_from_counts(0, 0)
        1.0
        >>> round(score_from_counts(1, 2), 4)
        0.1353
        >>> round(score_from_counts(1, 2, lam=0.5), 4)
        0.3679
    """
    check_weights(lam, alpha)
    for name, n in (("n_major", n_major), ("n_minor", n_minor)):
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {n!r}")
    return math.exp(-lam * (n_major + alpha * n_minor))


def score_from_severities(severities: Iterable[str], lam: float = 1.0, alpha: float = 0.5) -> float:
    """The score of an eligible image from the severities ("major"/"minor") of its violations.

    Examples:
        >>> round(score_from_severities(["major", "minor"]), 4)
        0.2231
        >>> score_from_severities([])
        1.0
    """
    counts = Counter(severities)
    unknown = set(counts) - {"major", "minor"}
    if unknown:
        raise ValueError(f"severities must be 'major' or 'minor', got {sorted(unknown)}")
    return score_from_counts(counts["major"], counts["minor"], lam, alpha)


def mean_score(scores: Sequence[float | None]) -> float | None:
    """Mean over scored images (N/A excluded); None when none was scored.

    Examples:
        >>> mean_score([1.0, None, 0.5])
        0.75
        >>> mean_score([None, None]) is None
        True
    """
    kept = [s for s in scores if s is not None]
    return sum(kept) / len(kept) if kept else None


def mean_and_count(scores: Sequence[float | None]) -> tuple[float | None, int]:
    """The mean over scored images (N/A excluded) and how many were scored: the pair a summary
    table reports; (None, 0) when none was scored.

    Examples:
        >>> mean_and_count([1.0, None, 0.5])
        (0.75, 2)
        >>> mean_and_count([None])
        (None, 0)
    """
    kept = [s for s in scores if s is not None]
    return (sum(kept) / len(kept) if kept else None), len(kept)


def na_rate(scores: Sequence[float | None]) -> float:
    """Share of images without a score (N/A or failed).

    Examples:
        >>> na_rate([1.0, None, None, 0.5])
        0.5
    """
    if not scores:
        raise ValueError("na_rate of no images")
    return sum(s is None for s in scores) / len(scores)


def violation_breakdown(detected: Iterable[str]) -> dict[str, dict[str, float | int]]:
    """Counts and shares of detected violations by level and by type (shares describe the
    composition of the violations, not how often images violate: Figures A1-A2).

    Examples:
        >>> b = violation_breakdown(["contact_state", "relative_scale", "optical_effect"])
        >>> b["level_counts"]
        {'object': 0, 'interaction': 2, 'scene': 1}
        >>> round(b["level_shares"]["interaction"], 3)
        0.667
        >>> b["type_counts"]["relative_scale"]
        1
    """
    by_type = Counter(get_type(t).id for t in detected)
    total = sum(by_type.values())
    by_level = Counter()
    for t, n in by_type.items():
        by_level[get_type(t).level] += n
    return {
        "level_counts": {lv: by_level[lv] for lv in LEVELS},
        "level_shares": {lv: (by_level[lv] / total if total else 0.0) for lv in LEVELS},
        "type_counts": {t: by_type[t] for t in TYPE_IDS},
        "type_shares": {t: (by_type[t] / total if total else 0.0) for t in TYPE_IDS},
    }


# -- agreement with humans --------------------------------------------------------------
def human_rating(ratings: Sequence[float | None]) -> float | None:
    """One image's human score: the mean of the annotators' 1-5 ratings, or None (N/A) when
    at least half of them chose N/A.

    Examples:
        Three annotators' ratings average; N/A from at least half of them makes the image N/A:

        >>> human_rating([4, 5, 3])
        4.0
        >>> human_rating([4, None, None]) is None
        True
        >>> human_rating([4, None, 2])
        3.0
    """
    if not ratings:
        raise ValueError("human_rating of no ratings")
    na = sum(r is None for r in ratings)
    if 2 * na >= len(ratings):
        return None
    kept = [float(r) for r in ratings if r is not None]
    bad = [r for r in kept if not 1 <= r <= 5]
    if bad:
        raise ValueError(f"human ratings must be in 1..5 or None (N/A), got {bad}")
    return sum(kept) / len(kept)


def paired(pred: Sequence[float | None], human: Sequence[float | None]) -> tuple[list[float], list[float]]:
    """The pairs where neither side is N/A (None or NaN).

    Examples:
        >>> paired([0.9, None, 0.2, 0.5], [5, 3, None, 2])
        ([0.9, 0.5], [5.0, 2.0])
    """
    if len(pred) != len(human):
        raise ValueError(f"{len(pred)} predictions but {len(human)} human ratings")
    keep = [(float(p), float(h)) for p, h in zip(pred, human) if _present(p) and _present(h)]
    return [p for p, _ in keep], [h for _, h in keep]


def correlations(pred: Sequence[float | None], human: Sequence[float | None]) -> dict[str, float | int]:
    """Spearman rho, Kendall tau-b and Pearson r over the pairs with both sides rated, and
    their count n; a coefficient is NaN when undefined (fewer than 2 pairs, a constant side).

    Examples:
        >>> r = correlations([0.9, 0.1, 0.5, None], [5, 1, 4, 2])
        >>> r["n"], round(r["spearman"], 3), round(r["kendall"], 3)
        (3, 1.0, 1.0)
        >>> import math; math.isnan(correlations([1.0, 1.0], [2, 3])["spearman"])
        True
    """
    from scipy import stats

    from vlmjudge.stats import correlation

    x, y = paired(pred, human)
    out: dict[str, float | int] = {"n": len(x)}
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return {**out, "spearman": math.nan, "kendall": math.nan, "pearson": math.nan}
    out["spearman"] = _nan_if_undefined(correlation.spearman(x, y))
    out["kendall"] = float(stats.kendalltau(x, y).statistic)
    out["pearson"] = _nan_if_undefined(correlation.pearson(x, y))
    return out


def _nan_if_undefined(value: float | None) -> float:
    """TerraVis reports an undefined coefficient as NaN (not None), so its tables hold floats only."""
    return math.nan if value is None else value


def correlations_by_group(pred: Sequence[float | None], human: Sequence[float | None],
                          groups: Sequence[Hashable]) -> dict[str, dict]:
    """Correlations pooled over all images and within each group (a T2I model).

    Examples:
        >>> out = correlations_by_group([0.9, 0.1, 0.5, 0.3], [5, 1, 4, 2], ["a", "a", "b", "b"])
        >>> out["pooled"]["n"], sorted(out["by_group"])
        (4, ['a', 'b'])
        >>> round(out["by_group"]["a"]["spearman"], 6)
        1.0
    """
    if len(groups) != len(pred):
        raise ValueError(f"{len(groups)} group labels for {len(pred)} predictions")
    out = {"pooled": correlations(pred, human), "by_group": {}}
    for g in sorted(set(groups), key=str):
        idx = [i for i, gi in enumerate(groups) if gi == g]
        out["by_group"][g] = correlations([pred[i] for i in idx], [human[i] for i in idx])
    return out


def majority(labels: Sequence[bool | None], missing: Literal["against", "ignore"] = "against") -> bool | None:
    """The human reference "has a violation": True when a majority of ALL the annotators said so,
    i.e. at least two of three (paper, Appendix, image-level detection / Table A1: "a majority of
    annotators (at least two of three)"). A missing label counts against by default, so 1 positive
    with 2 missing is not a positive; `missing="ignore"` takes the majority over the labels given
    (the rule before issue 24). None when no annotator answered.

    Examples:
        Two of three annotators make a positive; a missing label counts against by default:

        >>> majority([True, True, False])
        True
        >>> majority([True, None, None])
        False
        >>> majority([True, None, None], missing="ignore")
        True
    """
    if missing not in ("against", "ignore"):
        raise ValueError(f"missing must be 'against' or 'ignore', got {missing!r}")
    given = [bool(v) for v in labels if v is not None]
    if not given:
        return None
    voters = len(labels) if missing == "against" else len(given)
    return 2 * sum(given) > voters


def detection_precision_recall(predicted: Sequence[bool | None],
                               human_labels: Sequence[Sequence[bool | None] | bool | None]) -> dict[str, float | int]:
    """Image-level "has a violation" precision and recall against the human majority label;
    images without a prediction or a human label are left out, and counted.

    Examples:
        >>> r = detection_precision_recall([True, True, False, None],
        ...                                [[True, True, False], [False, False, True], True, True])
        >>> r["tp"], r["fp"], r["fn"], r["skipped"]
        (1, 1, 1, 1)
        >>> r["precision"], r["recall"]
        (0.5, 0.5)
    """
    if len(predicted) != len(human_labels):
        raise ValueError(f"{len(predicted)} predictions but {len(human_labels)} human labels")
    tp = fp = fn = tn = skipped = 0
    for p, h in zip(predicted, human_labels):
        ref = majority(h) if isinstance(h, (list, tuple)) else h
        if p is None or ref is None:
            skipped += 1
            continue
        tp += p and ref
        fp += p and not ref
        fn += (not p) and ref
        tn += (not p) and not ref
    n = tp + fp + fn + tn
    return {
        "n": n, "skipped": skipped, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
        "precision": tp / (tp + fp) if tp + fp else math.nan,
        "recall": tp / (tp + fn) if tp + fn else math.nan,
        "predicted_positive_rate": (tp + fp) / n if n else math.nan,
        "reference_positive_rate": (tp + fn) / n if n else math.nan,
    }


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall tau-b between two equally long score vectors (NaN when undefined).

    Examples:
        >>> round(kendall_tau([1, 2, 3], [1, 3, 2]), 4)
        0.3333
    """
    from scipy import stats

    if len(a) != len(b):
        raise ValueError(f"vectors differ in length: {len(a)} vs {len(b)}")
    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return math.nan
    return float(stats.kendalltau(list(a), list(b)).statistic)


def _present(v: object) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))

