"""Every `report` also reads what `python -m vlmjudge.distributed METHOD` writes: the method's
records as JSON lines (each method's own `to_json`), no manifest, ids without folders, and the
low-resolution flag as a top-level `resolution_note`."""
import json

from report_inputs import _verdict, _vs2_record

from vlmjudge.cli import main

NOTE = "image is 30x30 px, under 64 px"


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _report(method, source, out):
    assert main([method, "report", str(source), "--out", str(out)]) == 0
    return (out / "report.html").read_text(encoding="utf-8")


def test_terravis_reads_runner_records(tmp_path):
    from terravis import score_annotation

    clean = score_annotation({"image_id": "0", "eligible": True, "violations": []}).to_json()
    flawed = score_annotation({"image_id": "1", "eligible": True, "violations": [
        {"type": "optical_effect", "severity": "minor", "aspect": "cup", "evidence": "No shadow."}]}).to_json()
    html = _report("terravis", _write(tmp_path / "records.jsonl", [clean, {**flawed, "resolution_note": NOTE}]),
                   tmp_path / "rep")
    assert "all images" in html and "The 2 lowest-scored images" in html
    assert f'title="{NOTE}"' in html


def test_viescore2_reads_runner_records(tmp_path):
    rows = [_vs2_record("0", 7.0, "r1: 1"), {**_vs2_record("1", 3.5, "none"), "resolution_note": NOTE}]
    html = _report("viescore2", _write(tmp_path / "records.jsonl", rows), tmp_path / "rep")
    assert "The 2 lowest-scored images" in html and f'title="{NOTE}"' in html


def test_fager_reads_runner_records(tmp_path):
    from fager.records import Verdict
    from fager.spec import FagerRecord

    rows = [FagerRecord(Verdict.model_validate(_verdict("0", 75.0, "edit"))).to_json(),
            {**FagerRecord(Verdict.model_validate(_verdict("1", 10.0, "regenerate"))).to_json(),
             "resolution_note": NOTE}]
    html = _report("fager", _write(tmp_path / "records.jsonl", rows), tmp_path / "rep")
    assert "The 2 lowest-scored images" in html and f'title="{NOTE}"' in html and "regenerate" in html


def test_regeneration_reads_runner_records(tmp_path):
    from regeneration.asking.judging import MLLMScores
    from regeneration.spec import PairRecord

    rated = PairRecord(id="x", clip=80.0, dino=60.0, score=70.0, valid=True, mllm=MLLMScores(content=5, perceptual=2))
    plain = PairRecord(id="y", clip=40.0, dino=20.0, score=30.0, valid=True)
    rows = [rated.to_json(), {**plain.to_json(), "resolution_note": NOTE}]
    html = _report("regeneration", _write(tmp_path / "records.jsonl", rows), tmp_path / "rep")
    assert "The 2 lowest-scored pairs" in html and f'title="{NOTE}"' in html
    assert html.index(">y") < html.index(">x")  # lowest first
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text())["summary"]
    assert summary["mean_mllm_content"] == 1.0 and summary["mean_score"] == 50.0


def _compare_rows():
    from regeneration.evaluation.compare import pair_row
    from regeneration.asking.judging import MLLMScores
    from regeneration.spec import PairRecord

    rated = PairRecord(id="pair", clip=90.0, dino=70.0, score=80.0, valid=True, mllm=MLLMScores(content=3, perceptual=5))
    low = PairRecord(id="pair", clip=30.0, dino=10.0, score=20.0, valid=True, mllm=MLLMScores(content=1, perceptual=None))
    return [pair_row("cat", rated), pair_row("dog", low, resolution_note=NOTE)]


def test_regeneration_reads_what_compare_writes_as_json_and_csv(tmp_path):
    from regeneration.evaluation.compare import Pairing, result_json, write_csv

    rows = _compare_rows()
    pairing = Pairing(pairs=[], references_only=[tmp_path / "owl.png"])
    (tmp_path / "compare.json").write_text(json.dumps(result_json({"pairs": 2}, rows, pairing)))
    write_csv(tmp_path / "compare.csv", rows)
    for name in ("compare.json", "compare.csv"):
        out = tmp_path / f"rep-{name}"
        html = _report("regeneration", tmp_path / name, out)
        summary = json.loads((out / "summary.json").read_text())["summary"]
        assert summary["n_pairs"] == 2 and summary["mean_score"] == 50.0 and summary["mean_mllm_content"] == 0.25
        assert f'title="{NOTE}"' in html and html.index(">dog") < html.index(">cat")
    assert "owl.png" in (tmp_path / "rep-compare.json" / "report.html").read_text()
