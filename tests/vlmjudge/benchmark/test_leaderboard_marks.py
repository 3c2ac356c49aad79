"""The benchmark leaderboard's marks (issue 52, item 3): a model scored on fewer of the paired
prompts than another is marked (unscored column) and warned of in the JSON, the printed lines and
the page; a Kendall tau between rankings of 2 models is absent with "too few models"."""
from __future__ import annotations

import pytest

from vlmjudge.benchmark.cli import print_leaderboard
from vlmjudge.benchmark.leaderboard import build_leaderboard
from vlmjudge.benchmark.report import write_benchmark_report

IDS = ("p0", "p1", "p2", "p3", "p4")


@pytest.fixture
def issue_trial(make_runs):
    """The issue's trial on a benchmark: model B has 3 of 5 prompts N/A and scores high on the rest."""
    return make_runs({"A": {"terravis": dict(zip(IDS, (0.5, 0.6, 0.55, 0.4, 0.62)))},
                      "B": {"terravis": dict(zip(IDS, (0.9, 0.95, None, None, None)))},
                      "C": {"terravis": dict(zip(IDS, (0.52, 0.64, 0.58, 0.41, 0.66)))}})


def test_a_model_scored_on_fewer_prompts_is_marked_and_warned(issue_trial, suite_of, tmp_path, capsys):
    suite = suite_of(IDS)
    board = build_leaderboard(issue_trial, suite, n_resamples=100)
    rows = {row["model"]: row for row in board["rows"]}
    assert rows["B"]["rank"] == 1 and (rows["B"]["n_unscored"], rows["B"]["n_items"]) == (3, 5)
    assert rows["A"]["n_unscored"] == 0 and rows["B"]["unreliable"]
    assert board["warnings"][0] == ("terravis: run B: 3 of 5 items N/A, failed or absent; its mean score is over "
                                    "2 items, the others' over 5")
    print_leaderboard(board)
    out = capsys.readouterr().out
    assert "terravis #1 B" in out and "unscored=3 of 5" in out and "warning: terravis: run B: 3 of 5" in out
    write_benchmark_report(board, issue_trial, suite, tmp_path / "report", dpi=30)
    page = (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
    assert "unscored (N/A, failed)" in page and "3 of 5" in page and "run B: 3 of 5 items" in page


def test_tau_between_rankings_of_two_models_is_too_few_models(make_runs, suite_of, tmp_path):
    runs = make_runs({"A": {"terravis": dict(zip(IDS, (0.5, 0.6, 0.55, 0.4, 0.62))),
                            "viescore2": dict(zip(IDS, (5, 6, 5, 4, 6)))},
                      "B": {"terravis": dict(zip(IDS, (0.3, 0.4, 0.35, 0.2, 0.42))),
                            "viescore2": dict(zip(IDS, (3, 4, 3, 2, 4)))}})
    board = build_leaderboard(runs, suite_of(IDS), n_resamples=50)
    [pair] = board["ranking_agreement"]["pairs"]
    assert pair["tau"] is None and pair["reason"] == "too few models: 2 (a rank correlation needs at least 3)"
    assert board["ranking_agreement"]["mean"] is None
    write_benchmark_report(board, runs, suite_of(IDS), tmp_path / "report", dpi=30)
    assert "too few models: 2" in (tmp_path / "report" / "report.html").read_text(encoding="utf-8")
