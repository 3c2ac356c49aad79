"""Every report's summary table shows each mean with its 95% interval and n, and summary.json
holds the same numbers: the bounds around the mean, n the images (or pairs) averaged."""
import json
from html import escape

import pytest
from interval_checks import check_summary
from report_inputs import _vs2_record, make_report

from vlmjudge.reports.page import fmt_number
from vlmjudge.stats.interval import INTERVAL_HEADING, interval_text


def _summary_section(out):
    html = (out / "report.html").read_text(encoding="utf-8")
    return html[html.index('<section id="summary">'):html.index("</section>")]


def _read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _intervals_and_values(method, tmp_path, out):
    """(name, the summary.json interval, the values it averages) for each mean of a method's summary."""
    data = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    if method == "terravis":
        from terravis import load_records
        records, _ = load_records(tmp_path / "terravis.jsonl")
        return [("score", data["evaluators"][0]["score_interval"], [r.score for r in records])]
    if method == "viescore2":
        records = _read_jsonl(tmp_path / "results.jsonl")
        return [("score", data["summary"]["intervals"]["score"], [r["score"] for r in records])]
    if method == "fager":
        verdicts = _read_jsonl(tmp_path / "fager_run" / "details.jsonl")
        return [("overall", data["summary"]["intervals"]["overall"], [v["score"] for v in verdicts]),
                *[(level, data["summary"]["intervals"][level], [v["level_scores"][level] for v in verdicts])
                  for level in ("level_1", "level_2", "level_3")]]
    pairs = json.loads((tmp_path / "compare.json").read_text(encoding="utf-8"))["pairs"]
    return [(key, data["summary"]["intervals"][key], [p[key] for p in pairs])
            for key in ("score", "clip", "dino", "mllm_content", "mllm_perceptual")]


@pytest.mark.parametrize("scored", [True, False], ids=["results", "empty"])
@pytest.mark.parametrize("method", ["terravis", "viescore2", "fager", "regeneration"])
def test_summary_shows_each_mean_with_its_interval_and_n(method, scored, tmp_path):
    out = make_report(method, tmp_path, scored=scored)
    table = _summary_section(out)
    assert escape(INTERVAL_HEADING) in table
    found = _intervals_and_values(method, tmp_path, out)
    for name, interval, values in found:
        check_summary(interval, values)
        assert escape(interval_text(interval, fmt_number)) in table, name
    if scored:  # the results runs average at least two differing values somewhere
        assert any(interval["low"] is not None and interval["low"] < interval["high"] for _, interval, _ in found)


def test_identical_scores_give_a_zero_width_interval(tmp_path):
    from vlmjudge.cli import main

    source = tmp_path / "results.jsonl"
    source.write_text("".join(json.dumps(_vs2_record(name, 6.5, "none")) + "\n" for name in ("a", "b", "c")))
    assert main(["viescore2", "report", str(source), "--out", str(tmp_path / "rep")]) == 0
    interval = json.loads((tmp_path / "rep" / "summary.json").read_text())["summary"]["intervals"]["score"]
    assert interval == {"mean": 6.5, "low": 6.5, "high": 6.5, "n": 3}
    assert "6.500 [6.500, 6.500] (n=3)" in _summary_section(tmp_path / "rep")
