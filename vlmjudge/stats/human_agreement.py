"""How closely a judge's scores follow people's, with bootstrap intervals.

Switching the judge model changes a metric, so its agreement with human ratings has to be
measured again: Pearson, Spearman, Kendall tau-b and tau-c, and pairwise accuracy with tie
calibration (Deutsch, Foster and Freitag 2023, "Ties Matter"), which credits a metric for
calling a tie where people tie instead of punishing every tie as tau does. Intervals come from
a percentile bootstrap over items (whole groups when groups are given); `inter_annotator` gives
the human ceiling a judge can be held to, and `agreement_difference` answers which of two judges
agrees better on the same items. Correlations go through scipy.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

from .correlation import pearson, spearman
from .pair_accuracy import PairTable

STATISTICS = ("pearson", "spearman", "kendall_tau_b", "kendall_tau_c", "pairwise_accuracy")
LEVELS = ("item", "system")
#: Resamples whose pairwise accuracy is computed together (`PairTable.accuracies`).
_BLOCK = 64


@dataclass(frozen=True)
class Estimate:
    """A statistic on the full data and its bootstrap percentile interval.

    `n_resamples` counts the resamples the interval rests on: a resample where one side is
    constant has no correlation and is left out rather than counted as a guess.
    """

    value: float
    low: float
    high: float
    n_resamples: int


@dataclass(frozen=True)
class PairwiseAccuracy(Estimate):
    """Tie-calibrated pairwise accuracy; `epsilon` is the tie threshold chosen on the full data."""

    epsilon: float


@dataclass(frozen=True)
class Difference:
    """Paired bootstrap of `statistic(a) - statistic(b)` over the same resampled items.

    `p_greater` is the one-sided bootstrap p-value for "a agrees better than b": the share of
    resamples where the difference is not above 0, with one added to both counts so it is never 0.
    """

    statistic: str
    diff: float
    low: float
    high: float
    p_greater: float
    n_resamples: int


@dataclass(frozen=True)
class HumanCeiling:
    """Leave-one-out agreement of each annotator with the mean of the others.

    `per_annotator[statistic][k]` is annotator k against the others; `mean[statistic]` averages
    those, the level a judge matching people as well as people match each other would reach.
    """

    per_annotator: dict[str, tuple[float, ...]]
    mean: dict[str, float]


def _scores(values, name: str) -> np.ndarray:
    """One 1-D float array, or a ValueError saying which positions hold NaN."""
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one score per item (1-D), got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(f"{name} holds NaN or inf at positions {bad[:10].tolist()}"
                         + (f" and {bad.size - 10} more" if bad.size > 10 else ""))
    return array


def _paired(metric, human, names=("metric", "human")) -> tuple[np.ndarray, np.ndarray]:
    """Both score lists checked: finite, equal length, at least two items."""
    m, h = _scores(metric, names[0]), _scores(human, names[1])
    if m.size != h.size:
        raise ValueError(f"{names[0]} has {m.size} scores but {names[1]} has {h.size}")
    if m.size < 2:
        raise ValueError(f"agreement needs at least 2 items, got {m.size}")
    return m, h


def _require_variation(values: np.ndarray, name: str) -> None:
    """Correlation is undefined when one side never changes: say so instead of returning NaN."""
    if np.ptp(values) == 0:
        raise ValueError(f"every {name} score is {values[0]:g}: the correlation is undefined "
                         "for a constant input")


CORRELATIONS = {
    "pearson": pearson,  # the suite's one Pearson and Spearman (vlmjudge.stats.correlation)
    "spearman": spearman,
    "kendall_tau_b": lambda m, h: scipy_stats.kendalltau(m, h, variant="b").statistic,
    "kendall_tau_c": lambda m, h: scipy_stats.kendalltau(m, h, variant="c").statistic,
}


def _correlations(m: np.ndarray, h: np.ndarray, labels=("metric", "human"),
                  names=tuple(CORRELATIONS)) -> dict[str, float]:
    """The named correlations (Kendall's through scipy), after the constant check."""
    _require_variation(m, labels[0])
    _require_variation(h, labels[1])
    return {name: float(CORRELATIONS[name](m, h)) for name in names}


def tie_calibrated_accuracy(metric, human) -> tuple[float, float]:
    """Pairwise accuracy with tie calibration: (accuracy, epsilon).

    Every pair of items counts, human ties included. The metric calls a pair tied when its
    scores differ by at most epsilon; a pair is agreed on when both sides tie it or both order it
    the same way. Epsilon is the candidate giving the highest accuracy, the smallest on equal
    accuracy; the candidates are 0 and every observed |metric difference|, since accuracy only
    changes where epsilon crosses one of those. One sort of the pairs of distinct (metric, human)
    values, then cumulative counts (`vlmjudge.stats.pair_accuracy`): O(k^2 log k) time and O(k^2)
    memory for k distinct pairs of values, at most n.

    >>> tie_calibrated_accuracy([0.5, 0.75, 0.0], [5, 5, 1])
    (1.0, 0.25)
    """
    m, h = _paired(metric, human)
    return PairTable(m, h).accuracy()


def statistic_value(metric, human, statistic: str = "spearman") -> float:
    """One statistic on the full data, no interval: what ranks judges on the items they share.

    >>> round(statistic_value([0.1, 0.4, 0.35, 0.8], [1, 2, 3, 4]), 6), statistic_value([1, 2], [2, 1], "pearson")
    (0.8, -1.0)
    """
    _check_statistic(statistic)
    m, h = _paired(metric, human)
    if statistic == "pairwise_accuracy":
        return tie_calibrated_accuracy(m, h)[0]
    return _correlations(m, h, names=(statistic,))[statistic]


def _item_draw(names, m: np.ndarray, h: np.ndarray, index: np.ndarray) -> dict[str, float]:
    """The named correlations on one resample of items; one undefined there (a constant side) is absent."""
    correlation_names = [name for name in names if name != "pairwise_accuracy"]
    if correlation_names and np.ptp(m[index]) > 0 and np.ptp(h[index]) > 0:
        return _correlations(m[index], h[index], names=correlation_names)
    return {}


def _item_draws(names, m: np.ndarray, h: np.ndarray, table: PairTable | None,
                indices) -> Iterator[dict[str, float]]:
    """`_item_draw` of each resample in turn, with its pairwise accuracy (when named) computed for a
    block of resamples at once; a statistic undefined in a resample is absent from its draw."""
    block: list[np.ndarray] = []
    for index in itertools.chain(indices, [None]):
        if index is not None:
            block.append(index)
            if len(block) < _BLOCK:
                continue
        if not block:
            break
        accuracies = [np.nan] * len(block) if table is None else \
            table.accuracies(np.stack([np.bincount(i, minlength=m.size) for i in block]))
        for drawn_index, accuracy in zip(block, accuracies):
            drawn = _item_draw(names, m, h, drawn_index)
            if "pairwise_accuracy" in names and not np.isnan(accuracy):
                drawn["pairwise_accuracy"] = float(accuracy)
            yield drawn
        block = []


def _system_draw(m: np.ndarray, h: np.ndarray) -> dict[str, float]:
    """Every statistic on one resample's system means (few systems: no pair table needed)."""
    out = {"pairwise_accuracy": tie_calibrated_accuracy(m, h)[0]}
    if np.ptp(m) > 0 and np.ptp(h) > 0:
        out.update(_correlations(m, h))
    return out


def _check_statistic(name: str) -> None:
    """A statistic this module computes, or a ValueError naming the choices."""
    if name not in STATISTICS:
        raise ValueError(f"unknown statistic {name!r}; choose one of {STATISTICS}")


def _groups(groups, n: int) -> np.ndarray:
    """Group labels as integer codes, one per item."""
    labels = np.asarray(groups)
    if labels.ndim != 1 or labels.size != n:
        raise ValueError(f"groups must name one group per item: got {labels.size} labels "
                         f"for {n} items")
    return np.unique(labels, return_inverse=True)[1]


def _system_means(m: np.ndarray, h: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-system mean metric and mean human score (systems with no item in `codes` drop out)."""
    counts = np.bincount(codes)
    present = counts > 0
    return ((np.bincount(codes, weights=m)[present] / counts[present]),
            (np.bincount(codes, weights=h)[present] / counts[present]))


def _resamples(n: int, codes, rng, count: int, within: bool):
    """Index draws for the bootstrap: items, whole groups, or items within each group.

    `within=False` with codes draws whole groups with replacement (items that share a prompt
    move together); `within=True` redraws each group's own items (system level, so every
    system stays in every resample).
    """
    if codes is None:
        for _ in range(count):
            yield rng.integers(0, n, n)
        return
    members = [np.flatnonzero(codes == g) for g in range(codes.max() + 1)]
    for _ in range(count):
        if within:
            yield np.concatenate([rng.choice(ids, ids.size) for ids in members])
        else:
            yield np.concatenate([members[g] for g in rng.integers(0, len(members), len(members))])


def _interval(draws: list[float], confidence: float, what: str) -> tuple[float, float]:
    """Percentile interval of the usable bootstrap draws."""
    if not draws:
        raise ValueError(f"no bootstrap resample gave a defined {what}: each drew a constant "
                         "side or a single distinct item; more items or more varied scores are "
                         "needed")
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    return float(low), float(high)


def _check_options(n_resamples: int, confidence: float) -> None:
    """Bootstrap settings that make sense, or a ValueError."""
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be at least 1, got {n_resamples}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")


def agreement(metric, human, *, level: str = "item", groups=None, n_resamples: int = 1000,
              confidence: float = 0.95, seed: int = 0) -> dict[str, Estimate]:
    """Agreement of metric scores with human scores, each statistic with a bootstrap interval.

    `level="item"` correlates the items; `groups` (e.g. the prompt of each image) makes the
    bootstrap draw whole groups. `level="system"` needs `groups` naming each item's system,
    correlates the systems' mean scores, and redraws items within each system. Pairwise
    accuracy re-chooses epsilon in every resample, so its interval carries that choice too.
    Kendall tau-c counts tied pairs in its denominator, so it stays below 1 on tied scores even
    when metric and human are identical; tau-b and pairwise accuracy reach 1 there.

    >>> result = agreement([0.1, 0.4, 0.35, 0.8, 0.7], [1, 2, 3, 4, 5], n_resamples=200)
    >>> round(result["spearman"].value, 2), result["pairwise_accuracy"].value
    (0.8, 0.8)
    """
    _check_options(n_resamples, confidence)
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    m, h = _paired(metric, human)
    codes = None if groups is None else _groups(groups, m.size)
    if level == "system":
        if codes is None:
            raise ValueError('level="system" needs groups naming the system of each item')
        full_m, full_h = _system_means(m, h, codes)
        if full_m.size < 2:
            raise ValueError(f"system-level agreement needs at least 2 systems, got {full_m.size}")
    else:
        full_m, full_h = m, h
    values = {name: (value, 0.0) for name, value in _correlations(full_m, full_h).items()}
    table = None if level == "system" else PairTable(m, h)
    values["pairwise_accuracy"] = (tie_calibrated_accuracy(full_m, full_h) if table is None
                                   else table.accuracy())
    draws: dict[str, list[float]] = {name: [] for name in STATISTICS}
    indices = _resamples(m.size, codes, np.random.default_rng(seed), n_resamples, within=level == "system")
    drawn_all = (_system_draw(*_system_means(m[index], h[index], codes[index])) for index in indices) \
        if table is None else _item_draws(STATISTICS, m, h, table, indices)
    for drawn in drawn_all:
        for name, value in drawn.items():
            draws[name].append(value)
    result: dict[str, Estimate] = {}
    for name in STATISTICS:
        low, high = _interval(draws[name], confidence, name)
        value, epsilon = values[name]
        if name == "pairwise_accuracy":
            result[name] = PairwiseAccuracy(value, low, high, len(draws[name]), epsilon)
        else:
            result[name] = Estimate(value, low, high, len(draws[name]))
    return result


def agreement_difference(metric_a, metric_b, human, *, statistic: str = "spearman", groups=None,
                         n_resamples: int = 1000, confidence: float = 0.95,
                         seed: int = 0) -> Difference:
    """Which of two judges agrees better with people: a paired bootstrap of the difference.

    Both metrics are scored on the same drawn items in every resample (whole groups when given),
    so what the items share cancels out of the difference.

    >>> human = list(range(12))
    >>> close = [0, 2, 1, 3, 4, 6, 5, 7, 8, 9, 11, 10]
    >>> loose = [3, 0, 5, 1, 2, 8, 4, 11, 6, 10, 7, 9]
    >>> d = agreement_difference(close, loose, human, n_resamples=200)
    >>> round(d.diff, 3), d.low > 0, d.p_greater < 0.05
    (0.238, True, True)
    """
    _check_options(n_resamples, confidence)
    _check_statistic(statistic)
    a, h = _paired(metric_a, human, ("metric_a", "human"))
    b, _ = _paired(metric_b, human, ("metric_b", "human"))
    codes = None if groups is None else _groups(groups, a.size)
    pairwise = statistic == "pairwise_accuracy"
    tables = [PairTable(a, h), PairTable(b, h)] if pairwise else [None, None]
    full = [{statistic: t.accuracy()[0]} if pairwise else _item_draw((statistic,), x, h, np.arange(a.size))
            for x, t in zip((a, b), tables)]
    for label, values, x in zip(("metric_a", "metric_b"), full, (a, b)):
        if statistic not in values:
            _correlations(x, h, (label, "human"))  # raises the reason it is undefined
    draws = []
    first_indices, second_indices = itertools.tee(_resamples(a.size, codes, np.random.default_rng(seed),
                                                             n_resamples, within=False))
    for first, second in zip(_item_draws((statistic,), a, h, tables[0], first_indices),
                             _item_draws((statistic,), b, h, tables[1], second_indices)):
        if statistic in first and statistic in second:
            draws.append(first[statistic] - second[statistic])
    low, high = _interval(draws, confidence, f"{statistic} difference")
    p_greater = (1 + sum(d <= 0 for d in draws)) / (1 + len(draws))
    diff = full[0][statistic] - full[1][statistic]
    return Difference(statistic, float(diff), low, high, float(p_greater), len(draws))


def inter_annotator(ratings) -> HumanCeiling:
    """The human ceiling: each annotator against the mean of the others, then averaged.

    `ratings` is items x annotators with NaN where an annotator did not rate an item; each
    annotator is compared on the items they rated that at least one other annotator rated too.

    >>> ceiling = inter_annotator([[1, 1, 2], [2, 3, 2], [3, 3, 4], [5, 4, 5]])
    >>> [round(r, 2) for r in ceiling.per_annotator["spearman"]]
    [1.0, 0.95, 0.95]
    """
    table = np.asarray(ratings, dtype=float)
    if table.ndim != 2 or table.shape[1] < 2:
        raise ValueError(f"ratings must be items x annotators with at least 2 annotators, "
                         f"got shape {table.shape}")
    if np.isinf(table).any():
        raise ValueError("ratings hold inf; mark a missing rating with NaN")
    per = _leave_one_out(table)
    return HumanCeiling({name: tuple(per[name]) for name in CEILING_STATISTICS},
                        {name: float(np.mean(per[name])) for name in CEILING_STATISTICS})


#: The statistics of the human ceiling.
CEILING_STATISTICS = ("pearson", "spearman", "kendall_tau_b")


def _leave_one_out(table: np.ndarray) -> dict[str, list[float]]:
    """Each annotator's correlations with the mean of the others, on the items both sides rated."""
    names = CEILING_STATISTICS
    per: dict[str, list[float]] = {name: [] for name in names}
    for k in range(table.shape[1]):
        others = np.delete(table, k, axis=1)
        rows = ~np.isnan(table[:, k]) & (~np.isnan(others)).any(axis=1)
        if rows.sum() < 2:
            raise ValueError(f"annotator {k} shares fewer than 2 rated items with the others")
        own, rest = table[rows, k], np.nanmean(others[rows], axis=1)
        values = _correlations(own, rest, (f"annotator {k}'s", "other annotators' mean"))
        for name in names:
            per[name].append(values[name])
    return per


def ceiling_interval(ratings, *, n_resamples: int = 1000, confidence: float = 0.95,
                     seed: int = 0) -> dict[str, Estimate]:
    """The human ceiling's mean per statistic with a percentile bootstrap interval over items.

    Each resample redraws the items (rows of `ratings`, items x annotators, NaN where unrated) and
    recomputes every annotator against the mean of the others. It takes the raters as
    interchangeable, every item's raters drawn from one pool; a resample where some annotator
    shares under 2 items with the others, or has no spread, is left out (`n_resamples` counts
    the rest).

    >>> ceiling = ceiling_interval([[1, 1, 2], [2, 3, 2], [3, 3, 4], [5, 4, 5], [4, 5, 4]], n_resamples=50)
    >>> ceiling["spearman"].low <= ceiling["spearman"].value <= ceiling["spearman"].high
    True
    """
    _check_options(n_resamples, confidence)
    table = np.asarray(ratings, dtype=float)
    full = inter_annotator(table).mean
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {name: [] for name in CEILING_STATISTICS}
    for _ in range(n_resamples):
        drawn = table[rng.integers(0, len(table), len(table))]
        try:
            per = _leave_one_out(drawn)
        except ValueError:  # too few shared items, or no spread, in this resample
            continue
        for name in CEILING_STATISTICS:
            draws[name].append(float(np.mean(per[name])))
    out = {}
    for name in CEILING_STATISTICS:
        low, high = _interval(draws[name], confidence, f"human ceiling {name}")
        out[name] = Estimate(full[name], low, high, len(draws[name]))
    return out
