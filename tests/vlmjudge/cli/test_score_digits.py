"""Issue 52, item 6: every score the suite prints has the same digits, by one rule
(`vlmjudge.text.format_score`): the score commands' summary line, compare's and the benchmark's
leaderboard lines, and the reports' tables, so one run never reads as three different numbers."""
from __future__ import annotations

import json
import math
import re

import pytest

from vlmjudge.benchmark.cli import print_leaderboard
from vlmjudge.cli import main as vlmjudge_main
from vlmjudge.cli.summary import summary_line
from vlmjudge.outputs import write_jsonl, write_manifest
from vlmjudge.reports.page import fmt_number
from vlmjudge.stats.interval import mean_with_interval
from vlmjudge.text import format_score

#: A printed number: digits, a point, more digits, perhaps an exponent.
NUMBER = re.compile(r"-?\d+\.\d+(?:e[-+]\d+)?")


@pytest.mark.parametrize("value, shown", [
    (0.81234, "0.8123"), (0.5, "0.5000"), (7.5, "7.500"), (100.0, "100.0"), (62.5, "62.50"), (0.0, "0.000"),
    (-0.0, "0.000"), (0.000123, "0.0001230"), (1.2e-5, "1.200e-05"), (-0.25, "-0.2500"), (12345.6, "12346"),
    (None, "n/a"), (math.nan, "n/a"), (math.inf, "inf"), (3, "3.000"),
])
def test_four_significant_digits_by_one_rule(value, shown):
    assert format_score(value) == shown


@pytest.mark.parametrize("value", ["0.5", [0.5], True])
def test_what_is_no_number_is_refused_not_printed(value):
    with pytest.raises(TypeError, match="format_score takes a number"):
        format_score(value)


def test_a_small_score_keeps_its_digits_and_never_reads_as_zero():
    for value in (1.234e-4, 9.99e-9, 3e-5):
        assert float(format_score(value)) == pytest.approx(value, rel=1e-3)


def test_the_summary_line_prints_mean_and_bounds_by_the_rule():
    rows = [{"status": "scored", "score": s} for s in (0.81234, 0.5, 0.000123, 0.25)]
    rows.append({"status": "not_applicable", "score": None})
    summary = mean_with_interval(r["score"] for r in rows)
    line = summary_line(rows, ["out/r.jsonl"])
    assert (f"mean {format_score(summary['mean'])} [{format_score(summary['low'])}, "
            f"{format_score(summary['high'])}] (n=4)") in line


def write_run(folder, scores, method="terravis"):
    """A run of `scores` by `method`, with the manifest compare reads."""
    folder.mkdir(parents=True)
    records = folder / "records.jsonl"
    write_jsonl(records, [{"id": f"i{k}", "status": "scored", "score": s} for k, s in enumerate(scores)])
    write_manifest(records, {"method": method})
    return records


def test_compare_prints_its_leaderboard_as_its_report_and_json_hold_it(tmp_path, capsys):
    a = write_run(tmp_path / "a", [0.81234, 0.5, 0.25, 0.125])
    b = write_run(tmp_path / "b", [0.3, 0.2, 0.1, 0.000123])
    assert vlmjudge_main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp"), "--resamples", "200"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()]  # not warnings, notes
    board = json.loads((tmp_path / "cmp" / "comparison.json").read_text())["leaderboard"]
    html = (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    assert len(lines) == len(board) == 2
    for line, row in zip(lines, board):
        shown = [format_score(row[key]) for key in ("value", "low", "high")]
        assert line == (f"{row['rank']}. {row['label']}: {shown[0]} [{shown[1]}, {shown[2]}] n={row['n']} "
                        f"unscored={row['n_unscored']} of {row['n_items']}")
        assert all(fmt_number(row[key]) == text for key, text in zip(("value", "low", "high"), shown))
        assert shown[0] in html and f"[{shown[1]}, {shown[2]}]" in html


def test_the_benchmark_prints_its_leaderboard_by_the_rule(capsys):
    board = {"rows": [{"method": "terravis", "rank": 1, "model": "a", "value": 0.71234, "low": 0.6, "high": 0.8, "n": 4},
                      {"method": "terravis", "rank": 2, "model": "b", "value": 0.000123, "low": None, "high": None,
                       "n": 1},
                      {"method": "viescore2", "rank": 1, "model": "a", "value": None, "low": None, "high": None, "n": 0}]}
    print_leaderboard(board)
    assert capsys.readouterr().out.splitlines() == [
        "terravis #1 a: 0.7123 [0.6000, 0.8000] n=4", "terravis #2 b: 0.0001230 n=1", "viescore2 #1 a: n/a n=0"]


def test_every_number_of_a_console_line_is_written_by_the_rule(tmp_path, capsys):
    """No score of compare's leaderboard lines is printed by another rule (3 or 2 decimals, `g` without
    zeros); counts (n, unscored) are whole numbers, and the warnings' p-values are not scores."""
    a = write_run(tmp_path / "a", [7.0, 3.0, 6.5, 9.25], "viescore2")
    b = write_run(tmp_path / "b", [1.0, 2.0, 3.0, 4.5], "viescore2")
    assert vlmjudge_main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp"), "--resamples", "200"]) == 0
    printed = [line.split(" n=")[0] for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()]
    numbers = NUMBER.findall("\n".join(printed))
    assert len(numbers) == 6 and all(text == format_score(float(text)) for text in numbers)
