"""Issue 21, one set of output conventions: for each method, its CLI scoring command and
`python -m vlmjudge.distributed` write the same layout (records JSONL with no manifest line, the
manifest beside it as <stem>.manifest.json, the default answer cache as <stem>.cache.sqlite), name
images by their path relative to the input root, and `vlmjudge <method> report` reads both.

Every run uses a tiny random Qwen3-VL through the transformers backend (and tiny CLIP/DINOv2 for
Regeneration), so each command loads and runs a real judge."""
import json
from pathlib import Path

import pytest
from PIL import Image

from vlmjudge.cli import main as vlmjudge_main
from vlmjudge.cli.distributed import main as runner_main
from vlmjudge.outputs import default_cache_path, is_manifest_line, manifest_path, read_jsonl, read_run

#: Two images whose stems collide: ids must keep their folders apart.
IMAGES = ("a/cat.png", "b/cat.png")
METHODS = ("terravis", "viescore2", "fager", "regeneration")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, tiny_vlm_path, tiny_encoder_dirs):
    """The image tree, the tiny judge and encoders, and each method's extra input files."""
    root = tmp_path_factory.mktemp("layout_inputs")
    for k, name in enumerate(IMAGES):
        (root / "imgs" / name).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (64, 64), (90 * k, 120, 60)).save(root / "imgs" / name)
        (root / "refs" / name).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (64, 64), (80, 90 * k, 60)).save(root / "refs" / Path(name).name.replace("cat", f"cat{k}"))
        (root / "gens").mkdir(exist_ok=True)
        Image.new("RGB", (64, 64), (70, 90 * k, 50)).save(root / "gens" / Path(name).name.replace("cat", f"cat{k}"))
    return {"root": root, "model": tiny_vlm_path("qwen3_vl"), "encoders": tiny_encoder_dirs}


def _qa_set(index):
    from fager.schema import QAItem, QASet

    return QASet(index=index, prompt="a cat", items=[
        QAItem(level="level_1", category="existence", importance="high", question="Is a cat shown?",
               source_fact="A cat is shown")])


def cli_argv(method, inputs, out):
    """The method's scoring (or compare) command over the inputs, writing its records to `out`."""
    root, model = inputs["root"], inputs["model"]
    judge = ["--model", model, "--device", "cpu", "--out", str(out)]
    if method == "terravis":
        return ["terravis", "score", str(root / "imgs"), *judge, "--quiet"]
    if method == "viescore2":
        prompts = root / "prompts.txt"
        prompts.write_text("a cat\na cat\n")
        return ["viescore2", "score", str(root / "imgs"), "--prompts", str(prompts), "--fields", "overall", *judge]
    if method == "fager":
        from fager.qa_store import format_qa_csv

        items = root / "items.csv"
        items.write_text("index,prompt,image\n" + "".join(f"{name},a cat,imgs/{name}\n" for name in IMAGES))
        (root / "QA.csv").write_text(format_qa_csv([_qa_set(name) for name in IMAGES]))
        return ["fager", "score", str(items), "--qa", str(root / "QA.csv"), *judge]
    enc = inputs["encoders"]
    return ["regeneration", "compare", str(root / "refs"), str(root / "gens"), "--clip-model", enc["clip"],
            "--dino-model", enc["dino"], "--encoder-device", "cpu", *judge]


def runner_argv(method, inputs, out):
    """`python -m vlmjudge.distributed METHOD` over the same inputs (a folder, or JSONL rows of columns)."""
    root = inputs["root"]
    source = root / "imgs"
    config = {}
    if method != "terravis":
        source = root / f"{method}_rows.jsonl"
        if method == "regeneration":
            rows = [{"reference": str(root / "refs" / f"cat{k}.png"), "generated": str(root / "gens" / f"cat{k}.png")}
                    for k in range(len(IMAGES))]
            config = {"clip_model": inputs["encoders"]["clip"], "dino_model": inputs["encoders"]["dino"],
                      "device": "cpu"}
        else:
            rows = [{"image": str(root / "imgs" / name), "prompt": "a cat", "id": name} for name in IMAGES]
            if method == "fager":
                rows = [{**row, "qa_set": _qa_set(row["id"]).model_dump_json()} for row in rows]
        source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return [method, "--input", str(source), "--output", str(out), "--model", inputs["model"],
            "--judge-kwargs", json.dumps({"device": "cpu"}), "--config", json.dumps(config)]


def record_ids(method, records):
    """The image ids a method's records carry (Regeneration pairs by stem: no image ids to compare)."""
    key = "id" if method != "regeneration" else None
    return None if key is None else [str(r[key]) for r in records]


def assert_layout(method, out):
    """Records as JSON lines with no manifest line, the manifest and the answer cache beside them."""
    rows = read_jsonl(out)
    assert len(rows) == len(IMAGES) and not any(is_manifest_line(row) for row in rows)
    manifest = json.loads(manifest_path(out).read_text(encoding="utf-8"))
    assert manifest["method"] == method and manifest.get("model")
    assert default_cache_path(out).is_file() and default_cache_path(out).stat().st_size > 0
    assert not list(out.parent.glob("*.partial"))
    return rows


@pytest.mark.parametrize("method", METHODS)
def test_cli_and_runner_write_one_layout_that_the_report_reads(method, inputs, tmp_path):
    outs = {"cli": tmp_path / "cli" / "records.jsonl", "runner": tmp_path / "runner" / "records.jsonl"}
    assert vlmjudge_main(cli_argv(method, inputs, outs["cli"])) == 0
    assert runner_main(runner_argv(method, inputs, outs["runner"])) == 0
    ids = {path: record_ids(method, assert_layout(method, out)) for path, out in outs.items()}
    if method != "regeneration":
        assert ids["cli"] == ids["runner"] == list(IMAGES)  # relative to the input root: the stems collide
    for path, out in outs.items():
        report = tmp_path / f"report_{path}"
        assert vlmjudge_main([method, "report", str(out), "--out", str(report)]) == 0, path
        assert (report / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
        summary = json.loads((report / "summary.json").read_text(encoding="utf-8"))
        assert len(IMAGES) in counts(summary), (path, summary)  # the report read every record


#: The keys under which the reports' summary.json count what they read.
COUNT_KEYS = ("n_images", "images", "n_pairs", "n")


def counts(value):
    """Every count of records in a report's summary.json (nested anywhere but in a copied manifest)."""
    if isinstance(value, dict):
        found = [v for k, v in value.items() if k in COUNT_KEYS and isinstance(v, int)]
        return found + [c for k, v in value.items() if k != "manifest" for c in counts(v)]
    if isinstance(value, list):
        return [c for v in value for c in counts(v)]
    return []


def test_a_rerun_of_the_runner_is_answered_from_its_default_cache(inputs, tmp_path, capsys):
    out = tmp_path / "records.jsonl"
    stats = tmp_path / "stats.json"
    argv = [*runner_argv("terravis", inputs, out), "--stats", str(stats)]
    assert runner_main(argv) == 0
    first = json.loads(stats.read_text())["stats"][0]["model_calls"]
    assert runner_main(argv) == 0
    assert first > 0 and json.loads(stats.read_text())["stats"][0]["model_calls"] == 0
    assert runner_main([*argv, "--no-cache"]) == 0
    assert json.loads(stats.read_text())["stats"][0]["model_calls"] == first


def test_older_line_one_manifests_still_read(tmp_path):
    """TerraVis files of earlier releases carry the manifest as line 1; every reader still takes them."""
    from terravis import load_records, score_annotation

    record = score_annotation({"image_id": "a/cat.png", "eligible": True, "violations": []}).to_json()
    old = tmp_path / "old.jsonl"
    old.write_text(json.dumps({"manifest": {"method": "terravis", "model": "judge-A"}}) + "\n"
                   + json.dumps(record) + "\n")
    records, manifest = read_run(old)
    assert manifest == {"method": "terravis", "model": "judge-A"} and [r["id"] for r in records] == ["a/cat.png"]
    assert load_records(old)[1]["model"] == "judge-A"
    assert vlmjudge_main(["terravis", "report", str(old), "--out", str(tmp_path / "rep")]) == 0
    assert "judge-A" in (tmp_path / "rep" / "report.html").read_text(encoding="utf-8")


def test_a_corrupt_line_is_named_by_file_and_line(tmp_path, capsys):
    from vlmjudge.outputs import JsonlError

    bad = tmp_path / "records.jsonl"
    bad.write_text('\n{"image_id": \n{"image_id": "a.png"}\n')
    with pytest.raises(JsonlError, match=r"records\.jsonl:2: not valid JSON"):
        read_jsonl(bad)
    for method in METHODS:
        assert vlmjudge_main([method, "report", str(bad), "--out", str(tmp_path / method)]) == 2
        assert f"{bad}:2" in capsys.readouterr().err, method
