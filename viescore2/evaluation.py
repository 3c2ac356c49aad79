"""Evaluation as in the paper: cell-level localization, score correlations, preferences, pixel-IoU.

Localization pools cell counts over all examples with a ground-truth grid (micro P/R/F1)
and averages per-image grid IoU over the examples whose ground truth is not empty. An
unparseable grid is a parse failure: it has no true positive, misses every ground-truth
cell and is never counted as a clean image recognised. Per category, a parsed output is
credited as the release credits it: a section it does not write is an empty prediction.
Coverage marks (``!``) get their own micro P/R/F1 against the references' marks. Correlations use only valid
(parsed) pairs, need at least ``MIN_PAIRS`` = 3 of them (as the release), are undefined (None)
for constant vectors, and always carry their pair counts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from vlmjudge.stats import correlation

from .grid import CATEGORIES, DEFAULT_N, SCORE_KEYS, CategoryGrids, Grid, Localization, ParsedOutput, union_of
from .parsing import parse_grid, parse_output
from .scoring import overall_score


MIN_PAIRS = 3  # the release reports no correlation from fewer valid pairs


@dataclass(frozen=True)
class Reference:
    """Ground truth for one example: a grid or two category grids (or none), scores, and its source.

    Examples:
        >>> ref = Reference.from_record({"id": 7, "grid": "r1: 1,2", "pq": 8, "sc": 2})
        >>> sorted(ref.localization.cells), ref.scores, ref.id
        ([(1, 1), (1, 2)], {'pq': 8.0, 'sc': 2.0}, '7')
        >>> ref.overall
        4.0
    """

    localization: Localization | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    id: str | None = None
    source: str | None = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any], n: int = DEFAULT_N) -> "Reference":
        """From ``{"id", "grid" | "artifact" + "misalign" (grid text or null), "score", "pq", "sc"}``."""
        def grid(key: str) -> Grid | None:
            text = record.get(key)
            if text is None or (isinstance(text, str) and not text.strip()):
                return None  # absent: no such ground truth (``none`` is the clean grid)
            try:
                return parse_grid(text, n=n, strict=True)[0]
            except ValueError as err:
                raise ValueError(f"reference {record.get('id')!r}, field {key!r}: {err}") from None

        single, art, mis = grid("grid"), grid("artifact"), grid("misalign")
        if single is not None and (art is not None or mis is not None):
            raise ValueError(f"reference {record.get('id')!r}: give 'grid' or 'artifact'+'misalign', not both")
        if (art is None) != (mis is None):
            raise ValueError(f"reference {record.get('id')!r}: 'artifact' and 'misalign' come together")
        loc: Localization | None = CategoryGrids(art, mis) if art is not None else single
        scores = {}
        for key in SCORE_KEYS:
            value = record.get(key)
            if value is None or (isinstance(value, float) and math.isnan(value)):
                continue
            if not 0.0 <= float(value) <= 10.0:
                raise ValueError(f"reference {record.get('id')!r}: {key}={value} outside 0..10")
            scores[key] = float(value)
        rid = record.get("id")
        return cls(loc, scores, None if rid is None else str(rid))

    @property
    def overall(self) -> float | None:
        """The stored overall target, else sqrt(pq * sc)."""
        return overall_score(self.scores)


def grid_iou(pred: Grid | None, target: Grid) -> float | None:
    """|G ∩ Ĝ| / |G ∪ Ĝ|; an unparseable prediction (None) scores 0; None when both are empty.

    Examples:
        Two of four cells in the union agree; an unparseable prediction scores 0:

        >>> from viescore2.grid import Grid
        >>> target = Grid({(1, 1), (1, 2), (2, 2)}, n=4)
        >>> grid_iou(Grid({(1, 1), (1, 2), (3, 3)}, n=4), target), grid_iou(None, target)
        (0.5, 0.0)
        >>> grid_iou(Grid(n=4), Grid(n=4)) is None
        True
    """
    if pred is None:
        return 0.0 if not target.is_empty else None
    if pred.n != target.n:
        raise ValueError(f"predicted grid is {pred.n}x{pred.n}, target grid is {target.n}x{target.n}")
    union = pred.cells | target.cells
    return len(pred.cells & target.cells) / len(union) if union else None


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 else None


def localization_metrics(preds: Sequence[Grid | None], targets: Sequence[Grid]) -> dict[str, Any]:
    """Micro P/R/F1, mean per-image grid IoU over non-empty targets, false alarms and parse failures.

    Examples:
        Cells pooled over images; IoU averaged over images with defects; a parse failure misses
        all its cells and a clean image with a predicted cell is a false alarm:

        >>> from viescore2.grid import Grid
        >>> preds = [Grid({(1, 1), (1, 2), (3, 3)}, n=4), None, Grid({(1, 1)}, n=4)]
        >>> targets = [Grid({(1, 1), (1, 2), (2, 2)}, n=4), Grid({(2, 2)}, n=4), Grid(n=4)]
        >>> m = localization_metrics(preds, targets)
        >>> m["tp"], m["fp"], m["fn"], m["micro_f1"], m["grid_iou"]
        (2, 2, 2, 0.5, 0.25)
        >>> m["false_alarms"], m["parse_failures"]
        (1, 1)
    """
    if len(preds) != len(targets):
        raise ValueError(f"{len(preds)} predictions but {len(targets)} targets")
    tp = fp = fn = 0
    ious: list[float] = []
    clean = false_alarms = clean_correct = clean_failures = failures = 0
    for pred, target in zip(preds, targets):
        if pred is None:
            failures += 1
            fn += len(target.cells)
        else:
            if pred.n != target.n:
                raise ValueError(f"predicted grid is {pred.n}x{pred.n}, target grid is {target.n}x{target.n}")
            tp += len(pred.cells & target.cells)
            fp += len(pred.cells - target.cells)
            fn += len(target.cells - pred.cells)
        if target.is_empty:
            clean += 1
            if pred is None:
                clean_failures += 1
            elif pred.is_empty:
                clean_correct += 1
            else:
                false_alarms += 1
        else:
            ious.append(grid_iou(pred, target))
    return {
        "grid_images": len(targets), "tp": tp, "fp": fp, "fn": fn,
        "micro_precision": _ratio(tp, tp + fp), "micro_recall": _ratio(tp, tp + fn),
        "micro_f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "grid_iou": float(np.mean(ious)) if ious else None, "grid_iou_images": len(ious),
        "clean_images": clean, "false_alarms": false_alarms, "clean_correct": clean_correct,
        "clean_parse_failures": clean_failures, "parse_failures": failures,
    }


@dataclass(frozen=True)
class Correlation:
    """A correlation with the number of valid pairs it used out of all pairs.

    Examples:
        >>> srcc([1, 2, 3, None, 5], [2, 4, 5, 1, 9])
        Correlation(value=1.0, n_valid=4, n_total=5)
    """

    value: float | None
    n_valid: int
    n_total: int


def _valid(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def _valid_pairs(preds: Sequence[float | None], targets: Sequence[float | None]) -> list[tuple[float, float]]:
    if len(preds) != len(targets):
        raise ValueError(f"{len(preds)} predictions but {len(targets)} targets")
    return [(float(p), float(t)) for p, t in zip(preds, targets) if _valid(p) and _valid(t)]


def _correlate(coefficient: Callable[[list, list], float | None], preds: Sequence[float | None],
               targets: Sequence[float | None], min_pairs: int) -> Correlation:
    """`coefficient` over the valid pairs, with their count: one rule of what too few pairs give."""
    pairs = _valid_pairs(preds, targets)
    if len(pairs) < max(min_pairs, 2):
        return Correlation(None, len(pairs), len(preds))
    return Correlation(coefficient([p for p, _ in pairs], [t for _, t in pairs]), len(pairs), len(preds))


def srcc(preds: Sequence[float | None], targets: Sequence[float | None], min_pairs: int = MIN_PAIRS) -> Correlation:
    """Spearman correlation with average ranks over valid pairs; None if fewer than ``min_pairs`` or constant.

    Examples:
        Fewer than three valid pairs give no correlation, and say how many there were:

        >>> srcc([1, None, 3], [2, 4, 5])
        Correlation(value=None, n_valid=2, n_total=3)
        >>> round(srcc([1, 2, 3, 4], [1, 3, 2, 4]).value, 4)
        0.8
    """
    return _correlate(correlation.spearman, preds, targets, min_pairs)


def pearson(preds: Sequence[float | None], targets: Sequence[float | None], min_pairs: int = MIN_PAIRS) -> Correlation:
    """Pearson correlation over valid pairs; None if fewer than ``min_pairs`` or constant.

    Examples:
        >>> round(pearson([1, 2, 3], [2, 4, 6.5]).value, 4)
        0.9979
    """
    return _correlate(correlation.pearson, preds, targets, min_pairs)


def same_support(preds_a: Sequence[float | None], preds_b: Sequence[float | None],
                 targets: Sequence[float | None]) -> tuple[Correlation, Correlation]:
    """SRCC of two methods restricted to the pairs both parsed, so their supports match.

    Examples:
        Only the pairs both methods parsed count, for both:

        >>> a, b = same_support([1, 2, None, 4, 5], [1, None, 3, 4, 6], [1, 2, 3, 5, 4])
        >>> (a.n_valid, round(a.value, 4)), (b.n_valid, round(b.value, 4))
        ((3, 0.5), (3, 0.5))
    """
    if not len(preds_a) == len(preds_b) == len(targets):
        raise ValueError("same_support needs equally long sequences")
    keep = [i for i in range(len(targets)) if _valid(preds_a[i]) and _valid(preds_b[i]) and _valid(targets[i])]
    a, b, t = ([seq[i] for i in keep] for seq in (preds_a, preds_b, targets))
    ca, cb = srcc(a, t), srcc(b, t)
    return Correlation(ca.value, ca.n_valid, len(targets)), Correlation(cb.value, cb.n_valid, len(targets))



@dataclass(frozen=True)
class Preference:
    """Pairwise preference accuracy with its tie and unparseable counts, and each pair's credit.

    Examples:
        >>> preference_accuracy([7, 5, 6], [5, 5, None], ["A", "B", "A"])
        Preference(accuracy=0.6666666666666666, pairs=3, ties=1, unparseable=1, credits=(1.0, 0.5, 0.5))
    """

    accuracy: float
    pairs: int
    ties: int
    unparseable: int
    credits: tuple[float, ...] = ()


_CHOICES = {0: 0, 1: 1, "A": 0, "B": 1, "a": 0, "b": 1}


def pair_credit(first: float | None, second: float | None, preferred: int | str,
                nan_is_unparsed: bool = True) -> float:
    """1 when the higher score is the preferred side (0/"A" first, 1/"B" second), 0 when it is the other,
    0.5 for a tie or an unparsed side. A NaN score is unparsed (the paper's rule); ``nan_is_unparsed=False``
    compares it as a number, as the release does (``NaN > b`` is false, so the second side wins).

    Examples:
        >>> pair_credit(7, 5, "A"), pair_credit(7, 5, "B"), pair_credit(7, 7, "A"), pair_credit(None, 5, "B")
        (1.0, 0.0, 0.5, 0.5)
        >>> pair_credit(float("nan"), 5, "B", nan_is_unparsed=False)
        1.0
    """
    if isinstance(preferred, bool) or preferred not in _CHOICES:
        raise ValueError(f"preferred must be 0/1 or 'A'/'B', got {preferred!r}")
    present = _valid if nan_is_unparsed else (lambda v: v is not None)
    if not (present(first) and present(second)) or first == second:
        return 0.5
    return 1.0 if (0 if first > second else 1) == _CHOICES[preferred] else 0.0


def preference_accuracy(scores_first: Sequence[float | None], scores_second: Sequence[float | None],
                        preferred: Sequence[int | str], nan_is_unparsed: bool = True) -> Preference:
    """Higher score wins; ``preferred`` is 0/"A" (first) or 1/"B" (second); ties and unparseable pairs count 0.5.

    Examples:
        A win, a tie and an unparseable pair: (1 + 0.5 + 0.5) / 3:

        >>> round(preference_accuracy([7, 5, 6], [5, 5, None], [0, 1, 0]).accuracy, 4)
        0.6667
    """
    if not len(scores_first) == len(scores_second) == len(preferred):
        raise ValueError("preference_accuracy needs equally long sequences")
    if not scores_first:
        raise ValueError("no pairs")
    present = _valid if nan_is_unparsed else (lambda v: v is not None)
    credits = tuple(pair_credit(a, b, human, nan_is_unparsed) for a, b, human in
                    zip(scores_first, scores_second, preferred))
    bad = sum(1 for a, b in zip(scores_first, scores_second) if not (present(a) and present(b)))
    ties = sum(1 for a, b in zip(scores_first, scores_second) if present(a) and present(b) and a == b)
    return Preference(sum(credits) / len(credits), len(credits), ties, bad, credits)


def grid_to_mask(grid: Grid, height: int, width: int) -> np.ndarray:
    """Upsample a grid to an (H, W) mask: each pixel takes the cell holding its centre.

    Examples:
        >>> from viescore2.grid import Grid
        >>> grid_to_mask(Grid({(1, 1)}, n=2), 4, 4).astype(int).tolist()
        [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    """
    rows = np.minimum(((np.arange(height) + 0.5) * grid.n / height).astype(int), grid.n - 1)
    cols = np.minimum(((np.arange(width) + 0.5) * grid.n / width).astype(int), grid.n - 1)
    return grid.to_array()[rows[:, None], cols[None, :]]


def pixel_iou(grid: Grid, mask: np.ndarray) -> float | None:
    """IoU between a grid upsampled to the mask's size and a dense binary mask; None if both are empty.

    Examples:
        >>> import numpy as np
        >>> from viescore2.grid import Grid
        >>> mask = np.zeros((4, 4), dtype=bool); mask[:2, :2] = True; mask[0, 2] = True
        >>> pixel_iou(Grid({(1, 1)}, n=2), mask)
        0.8
    """
    from .raster import as_mask
    dense = as_mask(mask)
    pred = grid_to_mask(grid, *dense.shape)
    union = int((pred | dense).sum())
    return int((pred & dense).sum()) / union if union else None


def category_prediction(parsed: ParsedOutput, name: str) -> Grid | None:
    """The predicted grid of one category, as the release credits it: the category's section; an empty
    grid when the output parsed but wrote no such section (one section, or a flat grid); None on a failure.

    Examples:
        A category the output left clean is an empty grid; a failed output is None:

        >>> from viescore2.parsing import parse_output
        >>> parsed = parse_output("artifact:\\nr1: 1!\\nmisalign:\\nnone", n=4)
        >>> category_prediction(parsed, "artifact").lines(), category_prediction(parsed, "misalign").is_empty
        (['r1: 1!'], True)
        >>> category_prediction(parse_output("unreadable", n=4), "artifact") is None
        True
    """
    if not parsed.grid_parsed:
        return None
    return parsed.sections.get(name, Grid(n=parsed.union.n))


def coverage_metrics(preds: Sequence[ParsedOutput], targets: Sequence[Grid]) -> dict[str, Any]:
    """Micro P/R/F1 of the coverage marks (``!``) over all cells: the marks of the prediction's category
    sections against the targets' marks, as the release counts them (a flat grid or a failure marks nothing).

    Examples:
        >>> from viescore2.grid import Grid
        >>> from viescore2.parsing import parse_output
        >>> parsed = parse_output("artifact:\\nr1: 1!\\nmisalign:\\nnone", n=4)
        >>> m = coverage_metrics([parsed], [Grid({(1, 1), (2, 2)}, marks={(1, 1), (2, 2)}, n=4)])
        >>> m["coverage_tp"], m["coverage_fn"], m["coverage_recall"]
        (1, 1, 0.5)
    """
    tp = fp = fn = 0
    for parsed, target in zip(preds, targets):
        sections = parsed.sections if parsed.grid_parsed else {}
        marks = frozenset().union(*(g.marks for g in sections.values()))
        tp, fp, fn = tp + len(marks & target.marks), fp + len(marks - target.marks), fn + len(target.marks - marks)
    return {"coverage_images": len(targets), "coverage_tp": tp, "coverage_fp": fp, "coverage_fn": fn,
            "coverage_precision": _ratio(tp, tp + fp), "coverage_recall": _ratio(tp, tp + fn),
            "coverage_f1": _ratio(2 * tp, 2 * tp + fp + fn)}


def _correlation_fields(name: str, corr: Correlation) -> dict[str, Any]:
    return {f"srcc_{name}": corr.value, f"srcc_{name}_pairs": corr.n_valid, f"srcc_{name}_total": corr.n_total}


def evaluate_suite(texts: Sequence[str], references: Sequence[Reference], n: int = DEFAULT_N) -> dict[str, Any]:
    """Every metric for judge texts against references, as one flat dict (None where undefined).

    Examples:
        >>> from viescore2.grid import Grid
        >>> texts = ["score: 6/10\\nr1: 1", "score: 9/10\\nnone", "score: 3/10\\nr2: 2"]
        >>> refs = [Reference(Grid({(1, 1)}, n=4), {"score": 5}), Reference(Grid(n=4), {"score": 8}),
        ...         Reference(Grid({(2, 2), (2, 3)}, n=4), {"score": 2})]
        >>> result = evaluate_suite(texts, refs, n=4)
        >>> result["micro_f1"], result["grid_iou"], result["clean_correct"], result["srcc_overall"]
        (0.8, 0.75, 1, 1.0)
    """
    if len(texts) != len(references):
        raise ValueError(f"{len(texts)} predictions but {len(references)} references")
    parsed: list[ParsedOutput] = [parse_output(t, n=n) for t in texts]
    result: dict[str, Any] = {"examples": len(texts), "grid_size": n}

    loc = [(p, r.localization) for p, r in zip(parsed, references) if r.localization is not None]
    result.update(localization_metrics([p.union for p, _ in loc], [union_of(g) for _, g in loc]))
    split = [(p, g) for p, g in loc if isinstance(g, CategoryGrids)]
    for name in CATEGORIES if split else ():
        part = localization_metrics([category_prediction(p, name) for p, _ in split],
                                    [getattr(g, name) for _, g in split])
        result.update({f"{name}_{k}": v for k, v in part.items()})
    if split:
        result.update(coverage_metrics([p for p, _ in split], [g.union() for _, g in split]))

    overall = [(p.overall, r.overall) for p, r in zip(parsed, references) if r.overall is not None]
    result.update(_correlation_fields("overall", srcc([a for a, _ in overall], [b for _, b in overall])))
    for key in ("pq", "sc"):
        pairs = [(p.scores.get(key), r.scores[key]) for p, r in zip(parsed, references) if key in r.scores]
        result.update(_correlation_fields(key, srcc([a for a, _ in pairs], [b for _, b in pairs])))
    return result


def example_rows(ids: Sequence[str], texts: Sequence[str], references: Sequence[Reference],
                 n: int = DEFAULT_N) -> list[dict[str, Any]]:
    """Each example's result as `viescore2 evaluate --out` writes it: how its grid was read, its
    scores and overall score, and its grid IoU (None without a ground-truth grid)."""
    rows = []
    for key, text, ref in zip(ids, texts, references):
        parsed = parse_output(text, n=n)
        iou = grid_iou(parsed.union, union_of(ref.localization)) if ref.localization is not None else None
        rows.append({"id": key, "grid_status": parsed.status.value, "scores": dict(parsed.scores),
                     "overall": parsed.overall, "grid_iou": iou})
    return rows
