"""One rule for an image's low-resolution flag: it sits where the method's records keep their
annotations (TerraVis: `meta`, FAGER: `provenance`, VIEScore2 and Regeneration: the top level),
whichever path wrote them, and every reader finds it there and in older runner files (top level)."""
import json

import pytest
from PIL import Image

from vlmjudge.cli.distributed import main as runner_main
from vlmjudge.outputs import read_jsonl, resolution_note_of, with_resolution_note

NOTE = "low resolution: 32x32"


def test_the_note_goes_into_the_first_holder_the_record_has():
    fager_like = {"score": 1.0, "provenance": {"judge": "j"}, "meta": {"path": "a.png"}}
    placed = with_resolution_note(fager_like, NOTE)
    assert placed["provenance"] == {"judge": "j", "resolution_note": NOTE} and placed["meta"] == {"path": "a.png"}
    assert fager_like["provenance"] == {"judge": "j"}  # the caller's record is left as it was
    assert with_resolution_note({"meta": {}}, NOTE) == {"meta": {"resolution_note": NOTE}}
    assert with_resolution_note({"score": 7.0, "meta": None}, NOTE) == {"score": 7.0, "meta": None, "resolution_note": NOTE}
    assert with_resolution_note({"score": 7.0}, None) == {"score": 7.0}


@pytest.mark.parametrize("record", [{"resolution_note": NOTE}, {"meta": {"resolution_note": NOTE}},
                                    {"provenance": {"resolution_note": NOTE}}])
def test_the_note_is_read_wherever_it_sits(record):
    assert resolution_note_of(record) == NOTE
    assert resolution_note_of({"meta": {"path": "a.png"}}) is None


def _fager_row(image):
    from fager.schema import QAItem, QASet

    qa = QASet(index="small", prompt="a cat", items=[
        QAItem(level="level_1", category="existence", importance="high", question="Is a cat shown?",
               source_fact="A cat is shown")])
    return {"image": str(image), "prompt": "a cat", "id": "small", "qa_set": qa.model_dump_json()}


@pytest.mark.parametrize("method,holder", [("terravis", "meta"), ("fager", "provenance")])
def test_the_runner_puts_the_note_where_the_method_keeps_it(method, holder, tmp_path, tiny_vlm_path):
    image = tmp_path / "imgs" / "small.png"
    image.parent.mkdir()
    Image.new("RGB", (32, 32), (120, 80, 60)).save(image)
    source = image.parent
    if method == "fager":
        source = tmp_path / "rows.jsonl"
        source.write_text(json.dumps(_fager_row(image)) + "\n")
    out = tmp_path / "records.jsonl"
    argv = [method, "--input", str(source), "--output", str(out), "--model", tiny_vlm_path("qwen3_vl"),
            "--judge-kwargs", json.dumps({"device": "cpu"})]
    assert runner_main(argv) == 0
    [record] = read_jsonl(out)
    assert "resolution_note" not in record
    assert "32x32" in record[holder]["resolution_note"]
