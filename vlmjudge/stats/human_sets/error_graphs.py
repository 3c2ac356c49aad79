"""T2IScoreScore's own statistics (Saxon et al. 2024): how a judge orders and separates the images
of each prompt's semantic error graph, averaged over graphs as the authors' evaluator averages them.

A graph's nodes ("0", "1a", "1b", "2a") hold images with as many errors as the node's number; the
letter names a branch. Ordering: along each walk (one node per error count, from a node without
error up), Spearman's rho of the judge's score against minus the error count, a walk of constant
scores counting 0, averaged over walks weighted by their images. Separation: the two-sample
Kolmogorov-Smirnov statistic between every two nodes of different error counts, averaged (it
ignores direction: a judge that prefers the worse node separates as well). A correlation pooled
over all graphs also rewards telling prompts apart, which these do not; the report shows both.
"""
from __future__ import annotations

import itertools
import math
import re
from typing import Any, Mapping, Sequence

import numpy as np

#: A graph with more walks than this is refused: the published set's largest has 300.
MAX_WALKS = 100_000
#: The set's name as the report writes it.
SET_NAME = "T2IScoreScore"


def error_count(node: str) -> int:
    """The number of errors a node's images carry: its leading digits ("2b" -> 2).

    >>> error_count("2b"), error_count("0")
    (2, 0)
    """
    found = re.match(r"\d+", str(node))
    if found is None:
        raise ValueError(f"node {node!r} does not start with an error count")
    return int(found.group())


def walks(nodes: Sequence[str]) -> list[tuple[str, ...]]:
    """Every walk through a graph: a node without error, then one node of each higher error count
    the graph has (a missing count is stepped over); none when no node is free of errors.

    >>> walks(["0", "1a", "1b", "2"])
    [('0', '1a', '2'), ('0', '1b', '2')]
    """
    levels: dict[int, list[str]] = {}
    for node in dict.fromkeys(nodes):
        levels.setdefault(error_count(node), []).append(node)
    if 0 not in levels:
        return []
    choices = [levels[count] for count in sorted(levels)]
    total = math.prod(len(choice) for choice in choices)
    if total > MAX_WALKS:
        raise ValueError(f"a graph with {total} walks (nodes {sorted(dict.fromkeys(nodes))[:8]}...); "
                         f"at most {MAX_WALKS} are followed")
    return list(itertools.product(*choices))


def graph_ordering(node_scores: Mapping[str, Sequence[float | None]]) -> float | None:
    """One graph's ordering score (None: no walk holds two scored images).

    `node_scores` maps every node of the graph to the judge's score of each of its images, None
    for an image it did not score: a walk is measured over the images it scored, as the release
    drops a missing score from a walk.

    >>> graph_ordering({"0": [0.9], "1a": [0.5], "2": [0.1, None]})
    1.0
    >>> graph_ordering({"0": [0.2], "1a": [0.9], "1b": [0.1]})
    0.0
    """
    from vlmjudge.stats.correlation import spearman

    total = weight = 0.0
    for walk in walks(list(node_scores)):
        pairs = [(error_count(node), score) for node in walk for score in node_scores[node] if score is not None]
        if len(pairs) < 2:
            continue
        rho = spearman(*zip(*pairs))
        total += -(rho if rho is not None else 0.0) * len(pairs)  # no spread: no relationship, as released
        weight += len(pairs)
    return total / weight if weight else None


def ks_statistic(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the two empirical CDFs.

    >>> ks_statistic([0.8, 0.9], [0.3, 0.85])
    0.5
    """
    a, b = np.sort(np.asarray(a, dtype=float)), np.sort(np.asarray(b, dtype=float))
    points = np.concatenate([a, b])
    gaps = np.searchsorted(a, points, side="right") / a.size - np.searchsorted(b, points, side="right") / b.size
    return float(np.abs(gaps).max())


def graph_separation(node_scores: Mapping[str, Sequence[float | None]]) -> float | None:
    """One graph's separation score, None when the judge scored none of its images.

    As the release measures it, a node with an unscored image takes part in no pair (its missing
    score makes every statistic with it undefined), and a graph left without a pair of nodes of
    different error counts scores 0 (the published set's one graph with a single count does).

    >>> graph_separation({"0": [0.9, 0.8], "1a": [0.1, 0.2], "1b": [0.85, 0.3], "2": [0.1, None]})
    0.75
    """
    if all(score is None for scores in node_scores.values() for score in scores):
        return None
    whole = [(error_count(node), scores) for node, scores in node_scores.items()
             if scores and all(score is not None for score in scores)]
    statistics = [ks_statistic(a, b) for (count_a, a), (count_b, b) in itertools.combinations(whole, 2)
                  if count_a != count_b]
    return sum(statistics) / len(statistics) if statistics else 0.0


def _graphs(rows: Sequence[Mapping[str, Any]], judge: Mapping[str, float]) -> dict[str, dict[str, list]]:
    """graph -> node -> the judge's score of each of the node's images (None: not scored)."""
    graphs: dict[str, dict[str, list]] = {}
    for row in rows:
        node = f"{row['errors']}{row.get('branch', '')}"
        graphs.setdefault(str(row["prompt_id"]), {}).setdefault(node, []).append(judge.get(str(row["id"])))
    return graphs


def _average(values: list[float], options: Mapping[str, Any]) -> dict[str, Any]:
    """The mean over graphs with a percentile bootstrap interval over graphs, in the shape of
    `vlmjudge.stats.interval.mean_with_interval` (no interval under two graphs)."""
    from vlmjudge.stats.interval import bootstrap_ci

    if len(values) < 2:
        return {"mean": values[0] if values else None, "low": None, "high": None, "n": len(values)}
    interval = bootstrap_ci(values, n_resamples=options.get("n_resamples", 1000),
                            confidence=options.get("confidence", 0.95), seed=options.get("seed", 0))
    return {"mean": interval.value, "low": interval.low, "high": interval.high, "n": len(values)}


def error_graph_statistics(rows: Sequence[Mapping[str, Any]], judge: Mapping[str, float],
                           **options: Any) -> dict[str, Any]:
    """Ordering and separation per graph and their means over graphs (`measures`), each with a
    bootstrap interval over graphs (`n_resamples`, `confidence`, `seed`) and the graphs that have
    no value (`without_value`); `beside` names the pooled statistic ordering is read against.

    `rows` are the set's rows (`read_t2iscorescore`), all of them, since they give each graph's
    nodes; `judge` maps a row's id to the judge's score, for the images the judge scored.

    >>> rows = [{"id": f"{g}-{n}", "prompt_id": g, "errors": int(n[0]), "branch": n[1:]}
    ...         for g in "ab" for n in ("0", "1a", "1b", "2")]
    >>> judge = {"a-0": 0.9, "a-1a": 0.6, "a-1b": 0.5, "a-2": 0.1, "b-0": 0.2, "b-1a": 0.4}
    >>> result = error_graph_statistics(rows, judge, n_resamples=50)
    >>> result["measures"]["ordering"]["mean"], result["per_graph"][1]
    (0.0, {'graph': 'b', 'images': 2, 'ordering': -1.0, 'separation': 1.0})
    """
    per_graph = []
    for graph, node_scores in _graphs(rows, judge).items():
        scored = sum(score is not None for scores in node_scores.values() for score in scores)
        per_graph.append({"graph": graph, "images": scored,
                          "ordering": graph_ordering(node_scores), "separation": graph_separation(node_scores)})
    measures = {}
    for name in ("ordering", "separation"):
        values = [graph[name] for graph in per_graph if graph[name] is not None]
        measures[name] = {**_average(values, options),
                          "without_value": [graph["graph"] for graph in per_graph if graph[name] is None]}
    return {"name": SET_NAME, "unit": "graph", "beside": "spearman", "graphs": len(per_graph),
            "measures": measures, "per_graph": per_graph}
