"""T2IScoreScore's own statistics (`vlmjudge.stats.human_sets.error_graphs`): the authors' per-graph
ordering and separation reproduced on their released scores, averaged over graphs and not pooled,
with unscored images treated as the release treats them, and clear refusals."""
import csv
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from vlmjudge.stats.correlation import spearman
from vlmjudge.stats.human_sets.error_graphs import (MAX_WALKS, error_count, error_graph_statistics, graph_ordering,
                                                    graph_separation, ks_statistic, walks)
from vlmjudge.stats.human_sets.t2iscorescore import read_t2iscorescore

RELEASE = Path(__file__).resolve().parents[2] / "data" / "t2iscorescore_release"
METRICS = ("clipscore", "llava_tifa", "gpt4v_dsg")


def released_scores(metric: str) -> dict[str, float]:
    """The release's score of each image by `metric`, keyed by the image path (unscored left out)."""
    with (RELEASE / "scores.csv").open(newline="") as handle:
        return {row["file_name"]: float(row[metric]) for row in csv.DictReader(handle) if row[metric]}


def published(metric: str) -> dict[str, dict[str, float]]:
    """The authors' per-graph values of `metric`: graph -> spearman, ks_test, num_walks."""
    with (RELEASE / "metametrics.csv").open(newline="") as handle:
        return {row["id"]: {key: float(row[key]) for key in ("spearman", "ks_test", "num_walks")}
                for row in csv.DictReader(handle) if row["metric"] == metric}


@pytest.mark.parametrize("metric", METRICS)
def test_the_authors_per_graph_values_are_reproduced(metric):
    rows = read_t2iscorescore(RELEASE)
    result = error_graph_statistics(rows, released_scores(metric), n_resamples=50)
    theirs = published(metric)
    assert [graph["graph"] for graph in result["per_graph"]] == list(theirs)
    for graph in result["per_graph"]:
        assert graph["ordering"] == pytest.approx(theirs[graph["graph"]]["spearman"], abs=1e-12), graph
        assert graph["separation"] == pytest.approx(theirs[graph["graph"]]["ks_test"], abs=1e-12), graph
    ordering = result["measures"]["ordering"]
    assert ordering["mean"] == pytest.approx(np.mean([value["spearman"] for value in theirs.values()]), abs=1e-12)
    assert ordering["n"] == 6 and ordering["low"] <= ordering["mean"] <= ordering["high"]


def test_the_walks_are_the_authors_walks():
    rows = read_t2iscorescore(RELEASE)
    theirs = published("clipscore")
    for graph in theirs:
        nodes = [f"{row['errors']}{row['branch']}" for row in rows if row["prompt_id"] == graph]
        assert len(walks(nodes)) == theirs[graph]["num_walks"], graph  # every image scored: every walk counts
    assert max(value["num_walks"] for value in theirs.values()) == 300


def test_a_missing_score_leaves_the_walk_and_takes_its_node_out_of_separation():
    """Graph 164: LLaVA-TIFA did not score one image of node "1"; the release keeps the node's other
    images in the walks and leaves the node out of every Kolmogorov-Smirnov pair."""
    rows = [row for row in read_t2iscorescore(RELEASE) if row["prompt_id"] == "164"]
    scores = released_scores("llava_tifa")
    assert "images/164-04.jpg" not in scores
    [graph] = error_graph_statistics(rows, scores, n_resamples=10)["per_graph"]
    assert graph["images"] == len(rows) - 1
    with_all = {**scores, "images/164-04.jpg": 0.0}
    [complete] = error_graph_statistics(rows, with_all, n_resamples=10)["per_graph"]
    assert graph["separation"] == published("llava_tifa")["164"]["ks_test"] != complete["separation"]


def test_ordering_is_averaged_over_graphs_not_pooled():
    """Two prompts each ordered perfectly by the judge, one prompt scored higher throughout: the
    per-graph ordering is 1, the correlation pooled over both graphs much lower."""
    rows, judge = [], {}
    for graph, offset in (("easy", 0.5), ("hard", 0.0)):
        for errors in range(4):
            rows.append({"id": f"{graph}/{errors}", "prompt_id": graph, "errors": errors, "branch": ""})
            judge[f"{graph}/{errors}"] = offset + 0.4 - 0.1 * errors
    hard_first = {key: value + (0.5 if key.startswith("hard") else -0.5) for key, value in judge.items()}
    for scores in (judge, hard_first):
        result = error_graph_statistics(rows, scores, n_resamples=20)
        assert result["measures"]["ordering"]["mean"] == pytest.approx(1.0)
        assert result["measures"]["separation"]["mean"] == pytest.approx(1.0)
    pooled = spearman([hard_first[row["id"]] for row in rows], [-row["errors"] for row in rows])
    assert pooled < 0.5


def test_separation_is_the_two_sample_ks_statistic_and_ignores_direction():
    rng = np.random.default_rng(3)
    for _ in range(20):
        a, b = rng.normal(size=rng.integers(1, 9)), rng.normal(0.5, size=rng.integers(1, 9)).round(1)
        assert ks_statistic(a, b) == pytest.approx(scipy_stats.ks_2samp(a, b).statistic, abs=1e-12)
    right = graph_separation({"0": [0.9, 0.8], "1": [0.2, 0.1]})
    backwards = graph_separation({"0": [0.2, 0.1], "1": [0.9, 0.8]})
    assert right == backwards == 1.0
    ordered = graph_ordering({"0": [0.9, 0.8], "1": [0.2, 0.1]})
    assert ordered == pytest.approx(-graph_ordering({"0": [0.2, 0.1], "1": [0.9, 0.8]})) and ordered > 0.8


def test_walks_step_over_missing_counts_and_need_a_node_without_error():
    assert walks(["0a", "0b", "2a", "2b"]) == [("0a", "2a"), ("0a", "2b"), ("0b", "2a"), ("0b", "2b")]
    assert walks(["1a", "2"]) == []
    assert graph_ordering({"1a": [0.5], "2": [0.1]}) is None
    assert graph_ordering({"0": [0.5, 0.5], "1": [0.5]}) == 0.0  # no spread counts 0, as released


def test_graphs_the_judge_never_scored_are_listed_not_counted():
    rows = [{"id": f"{graph}{errors}", "prompt_id": graph, "errors": errors, "branch": ""}
            for graph in "ab" for errors in range(3)]
    result = error_graph_statistics(rows, {"a0": 0.9, "a1": 0.5, "a2": 0.1}, n_resamples=20)
    for measure in result["measures"].values():
        assert measure["n"] == 1 and measure["without_value"] == ["b"]
        assert measure["mean"] == 1.0 and measure["low"] is None  # no interval from one graph
    one_count = [{"id": f"c{k}", "prompt_id": "c", "errors": 0, "branch": ""} for k in range(3)]
    [graph] = error_graph_statistics(one_count, {"c0": 0.1, "c1": 0.4, "c2": 0.2})["per_graph"]
    assert (graph["ordering"], graph["separation"]) == (0.0, 0.0)  # as the release scores its graph 103


def test_a_node_without_an_error_count_and_a_graph_of_too_many_walks_are_refused():
    with pytest.raises(ValueError, match="node 'b' does not start with an error count"):
        error_count("b")
    crowded = [f"{level}{chr(97 + k)}" for level in range(8) for k in range(5)]  # 5 ** 8 walks
    assert 5 ** 8 > MAX_WALKS
    with pytest.raises(ValueError, match=f"a graph with {5 ** 8} walks"):
        walks(crowded)
    assert math.isclose(len(walks(crowded[:35])), 5 ** 7)
