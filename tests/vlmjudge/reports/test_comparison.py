"""`vlmjudge compare` on runs of all four methods written by the CLI and by the distributed runner:
the JSON holds what `vlmjudge.stats` gives when called directly, runs measured with different
instruments are refused in one line (status 2), and `--allow-mixed` compares them with a banner."""
import json

import numpy as np
import pytest
from test_output_layout import cli_argv, inputs, runner_argv  # noqa: F401  (inputs is a fixture)

import vlmjudge
from vlmjudge.cli import main as vlmjudge_main
from vlmjudge.cli.distributed import main as runner_main
from vlmjudge.outputs import manifest_path, read_run, write_jsonl, write_manifest
from vlmjudge.registry import get_method
from vlmjudge.stats.board import NO_STATUS, ROW
from vlmjudge.stats.paired import paired_bootstrap
from vlmjudge.stats.pairing import align
from vlmjudge.stats.statistic import item_rows, value_of
from vlmjudge.stats.swap import paired_swap_test

METHODS = ("terravis", "viescore2", "fager", "regeneration")
RESAMPLES = 300


def _scored(method, record, value):
    """A record of the method carrying `value` as its score (the tiny judge scores every image alike)."""
    out = dict(record)
    if method == "terravis":
        out.update(status="scored", score=value / 10, eligible=True)
    elif method == "viescore2":
        out.update(score=value)
    elif method == "fager":
        out.update(score=10 * value)
    else:
        out.update(clip=50 + value, dino=40 + value)
    return out


@pytest.fixture(scope="module")
def runs(inputs, tmp_path_factory):  # noqa: F811
    """Per method and writer, run a (as written) and run b (its records re-valued, same manifest)."""
    root = tmp_path_factory.mktemp("compare_runs")
    made = {}
    for method in METHODS:
        for writer, argv, main in (("cli", cli_argv, vlmjudge_main), ("runner", runner_argv, runner_main)):
            a = root / method / writer / "a" / "records.jsonl"
            assert main(argv(method, inputs, a)) == 0
            records, manifest = read_run(a)
            write_jsonl(a, [_scored(method, r, 3.0 + k) for k, r in enumerate(records)])
            b = root / method / writer / "b" / "records.jsonl"
            write_jsonl(b, [_scored(method, r, 5.0 + 2 * k) for k, r in enumerate(records)])
            write_manifest(b, manifest)
            made[method, writer] = (a, b)
    return made


@pytest.mark.parametrize("writer", ["cli", "runner"])
@pytest.mark.parametrize("method", METHODS)
def test_compare_matches_the_stats_called_directly(method, writer, runs, tmp_path):
    a, b = runs[method, writer]
    out = tmp_path / "cmp"
    assert vlmjudge_main(["compare", str(a), str(b), "--out", str(out), "--resamples", str(RESAMPLES)]) == 0
    result = json.loads((out / "comparison.json").read_text())
    assert result["method"] == method and result["labels"] == ["a", "b"] and result["mixed"] is False
    (pair,) = result["pairwise"]
    assert {"a", "b", "n", "diff", "low", "high", "p_value", "p_holm"} <= set(pair)
    stat = next(iter(get_method(method).statistics.values()))
    ra, rb = read_run(a)[0], read_run(b)[0]
    boot = paired_bootstrap(item_rows(ra, stat), item_rows(rb, stat), statistic=stat.compute, n_resamples=RESAMPLES,
                            value=ROW, status_key=NO_STATUS)
    paired = align(item_rows(ra, stat), item_rows(rb, stat), value=ROW, status_key=NO_STATUS)
    test = paired_swap_test(paired.a, paired.b, stat.compute, RESAMPLES)
    assert pair["diff"] == pytest.approx(value_of(rb, stat) - value_of(ra, stat)) and pair["diff"] > 0
    assert (pair["n"], pair["diff"], pair["low"], pair["high"]) == pytest.approx((boot.n, boot.diff, boot.low, boot.high))
    assert pair["p_value"] == pytest.approx(test.pvalue) and pair["p_holm"] == pytest.approx(test.pvalue)
    board = {row["label"]: row for row in result["leaderboard"]}
    assert board["b"]["value"] == pytest.approx(value_of(rb, stat)) and board["b"]["rank"] == 1
    assert board["a"]["low"] <= board["a"]["value"] <= board["a"]["high"]
    html = (out / "report.html").read_text()
    assert "forest.png" in html and (out / "forest.png").stat().st_size > 0 and 'id="mixed"' not in html


def test_holm_over_three_runs_and_the_python_entry(runs):
    a, b = runs["fager", "cli"]
    records_a, records_b = read_run(a)[0], read_run(b)[0]
    records_c = [dict(r, score=r["score"] + 1.0) for r in records_a]
    result = vlmjudge.compare([records_a, records_b, records_c], method="fager", n_resamples=RESAMPLES)
    pairs = result["pairwise"]
    assert [(p["a"], p["b"]) for p in pairs] == [("run0", "run1"), ("run0", "run2"), ("run1", "run2")]
    p = np.array([q["p_value"] for q in pairs])
    from vlmjudge.stats.multiple import holm
    assert np.allclose([q["p_holm"] for q in pairs], holm(p)) and all(q["p_holm"] >= q["p_value"] for q in pairs)
    assert result["unpaired"] == {"run0": [], "run1": [], "run2": []}


def test_mixed_runs_are_refused_in_one_line_unless_allowed(runs, tmp_path, capsys):
    a, _ = runs["viescore2", "cli"]
    other, _ = runs["fager", "cli"]
    assert vlmjudge_main(["compare", str(a), str(other), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "different method" in err and not (tmp_path / "x").exists()
    judge = tmp_path / "judge" / "records.jsonl"
    records, manifest = read_run(a)
    write_jsonl(judge, records)
    write_manifest(judge, {**manifest, "model": "another/judge", "checkpoint": "sha256:other"})
    assert vlmjudge_main(["compare", str(a), str(judge), "--out", str(tmp_path / "y")]) == 2
    assert "different judge" in capsys.readouterr().err
    out = tmp_path / "mixed"
    assert vlmjudge_main(["compare", str(a), str(judge), "--out", str(out), "--allow-mixed",
                          "--resamples", str(RESAMPLES), "--labels", "first,second"]) == 0
    result = json.loads((out / "comparison.json").read_text())
    assert result["mixed"] is True and any("different judge" in r for r in result["mixed_reasons"])
    assert 'id="mixed"' in (out / "report.html").read_text() and manifest_path(judge).is_file()
