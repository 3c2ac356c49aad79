"""`vlmjudge terravis score` then `report` on a tiny Qwen3-VL: the records equal the Python
API's, a rerun asks the model nothing, and the report holds the rankings, figures and HTML."""
import contextlib
import csv
import io
import json
import re
from html import escape

import pytest

from interval_checks import check_printed, printed_interval
from terravis import evaluation, load_records
from vlmjudge.cli import main

PNG = b"\x89PNG\r\n\x1a\n"


def model_calls(text):
    return int(re.search(r"model calls: (\d+)", text).group(1))


def resumed(text):
    """Answers an earlier run stored (the rerun's whole work), as the summary line names them."""
    return int(re.search(r"answers from an earlier run: (\d+)", text).group(1))


def comparable(record):
    out = record.to_json(probs=False)
    out.pop("id")
    out.pop("meta")
    return out


@pytest.fixture(scope="module")
def scored(tmp_path_factory, tiny_model, pack_file, images, reference):
    """One `score` run and its rerun; (out path, first stdout, rerun stdout, image root)."""
    root = images["modelA/white.png"].parents[1]
    out = tmp_path_factory.mktemp("run") / "results.jsonl"
    argv = ["terravis", "score", str(root), "--model", tiny_model, "--device", "cpu", "--pack", str(pack_file),
            "--out", str(out), "--quiet"]
    runs = []
    for _ in range(2):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(argv) == 0
        runs.append(buf.getvalue())
    return out, runs[0], runs[1], root


def test_score_writes_the_python_api_records_and_a_rerun_makes_no_model_call(scored, reference):
    out, first, rerun, root = scored
    records, manifest = load_records(out)
    assert manifest["method"] == "terravis" and manifest["pack_version"].startswith("default-v1+")
    assert manifest["n_images"] == len(reference) and manifest["backend"] == "transformers"
    assert [r.id for r in records] == sorted(reference)  # ids: the path relative to the input root
    by_rel = {r.id: r for r in records}
    for rel, ref in reference.items():
        assert comparable(by_rel[rel]) == comparable(ref), rel
        assert by_rel[rel].meta["path"] == str((root / rel).resolve())
    assert model_calls(first) > 0
    # the rerun answers every request from the cache; the first run computed identical requests of one
    # call once (the core judge's dedupe, issue 19 item 8), so it made at most as many model calls
    assert model_calls(rerun) == 0 and resumed(rerun) >= model_calls(first) > 0
    assert resumed(first) == 0  # a first run resumes nothing, whatever it reuses within itself
    assert out.with_name("results.cache.sqlite").is_file()
    assert not out.with_name("results.jsonl.partial").exists()
    n_na = sum(r.status == "not_applicable" for r in reference.values())
    assert f"scored {len(reference) - n_na}, not applicable {n_na}, failed 0 of {len(reference)}" in rerun
    # the mean over the scored images, with its 95% interval and n (N/A images left out)
    for run in (first, rerun):
        check_printed(run, "mean ", [r.score for r in records])


def test_summary_of_identical_scores_has_a_zero_width_interval(tmp_path, capsys):
    from types import SimpleNamespace

    from terravis.cli import _TerraVisScore
    from vlmjudge.cli.intake import Screened

    command = _TerraVisScore(SimpleNamespace(), tmp_path / "results.jsonl")
    command.manifest = {"method": "terravis"}
    command.judge = SimpleNamespace(stats=SimpleNamespace(model_calls=0, resumed_from_cache=0, reused_within_run=0))
    command.tv = SimpleNamespace(manifest=lambda: {"method": "terravis"})
    written = [{"status": "scored", "score": 0.5}] * 3 + [{"status": "not_applicable", "score": None}]
    command.summarize(Screened(kept=[0, 1, 2, 3]), (written, []))
    out = capsys.readouterr().out
    assert printed_interval(out, "mean ") == (0.5, 0.5, 0.5, 3)
    assert "scored 3, not applicable 1, failed 0 of 4" in out


def test_report_writes_rankings_figures_and_the_worst_images(scored, reference, tmp_path):
    out, _, _, root = scored
    human = tmp_path / "ratings.csv"
    ids = sorted(reference)
    ratings = {i: [5 - k, 4 - k, None if k == 3 else 5 - k] for k, i in enumerate(ids)}
    with open(human, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["image_id", "rating", "has_violation"])
        for i, rs in ratings.items():
            for r in rs:
                w.writerow([i, "NA" if r is None else r, int(r is not None and r < 5)])
    rep = tmp_path / "report"
    assert main(["terravis", "report", str(out), "--out", str(rep), "--human", str(human)]) == 0
    for name in ("violations_by_level.png", "violations_by_type.png", "score_histogram.png"):
        assert (rep / name).read_bytes()[:8] == PNG and (rep / name).stat().st_size > 5000

    summary = json.loads((rep / "summary.json").read_text())
    (ev,) = summary["evaluators"]
    expected = {}
    for rel, r in reference.items():
        if r.score is not None:
            expected.setdefault(rel.split("/")[0], []).append(r.score)
    means = {m: sum(v) / len(v) for m, v in expected.items()}
    assert ev["model_means"] == pytest.approx(means)
    assert [row["model"] for row in ev["ranking"]] == sorted(means, key=lambda m: -means[m])
    records, _ = load_records(out)
    direct = evaluation.agreement(records, ratings)["pooled"]
    assert ev["human"]["agreement"]["pooled"]["n"] == direct["n"] > 1
    assert ev["human"]["agreement"]["pooled"]["spearman"] == pytest.approx(direct["spearman"], nan_ok=True)
    assert len(ev["human"]["alpha_sweep"]) == 5 and "detection" in ev["human"]

    rows = list(csv.DictReader(open(rep / "ranking.csv")))
    assert [r["model"] for r in rows if r["rank"]] == [row["model"] for row in ev["ranking"]]

    page = (rep / "report.html").read_text()
    scored_records = [r for r in reference.values() if r.score is not None]
    assert page.count('src="data:image/jpeg;base64,') == len(scored_records)
    for r in scored_records:
        for c in r.checks:
            if c.detected:
                assert escape(c.name) in page and escape(c.evidence or "no evidence given") in page
    for name in ("violations_by_level.png", "violations_by_type.png", "score_histogram.png"):
        assert f'src="{name}"' in page
