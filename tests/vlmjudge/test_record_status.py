"""Every method's Python record carries `status` as its JSON record does: the record types of the
four packages (`records.py`) and the records their registered scorers return (`spec.py`), each
scored, failed and, where the method has it, not applicable."""
from __future__ import annotations

import pytest

from fager.records import Verdict
from fager.schema import QAItem
from fager.scoring import score_answers
from fager.spec import FagerRecord
from regeneration.records import ItemResult
from regeneration.spec import PairRecord
from terravis.records import ImageRecord
from viescore2.records import VIEScore2Record
from vlmjudge.record_schema import check_record

ITEM = QAItem(question="Is there a cup?", level="level_1", category="existence", importance="high",
              source_fact="a cup")


def _vs2(fields: str, read_status: str, scores: dict, missing: list) -> VIEScore2Record:
    return VIEScore2Record(id="a.png", prompt="a cup", fields=fields, grid_size=4, text="", finish_reason="stop",
                           read_status=read_status, scores=scores, missing=missing)


def _verdicts() -> dict[str, Verdict]:
    """A verdict with its question answered, and one whose only question got no answer."""
    return {"scored": score_answers([ITEM], ["yes"], index="a"),
            "failed": score_answers([ITEM], [None], index="a")}


CASES = {
    "terravis scored": (lambda: ImageRecord("a.png", score=0.5, eligible=True), "scored"),
    "terravis not applicable": (lambda: ImageRecord("a.png", status="not_applicable", score=None, eligible=False),
                                "not_applicable"),
    "terravis failed": (lambda: ImageRecord("a.png", status="failed", score=None), "failed"),
    "viescore2 scored": (lambda: _vs2("pq_sc", "ok", {"pq": 9.0, "sc": 4.0}, []), "scored"),
    "viescore2 failed": (lambda: _vs2("pq_sc", "error", {}, ["pq", "sc"]), "failed"),
    "viescore2 not applicable": (lambda: _vs2("grid", "ok", {}, []), "not_applicable"),
    "fager verdict scored": (lambda: _verdicts()["scored"], "scored"),
    "fager verdict failed": (lambda: _verdicts()["failed"], "failed"),
    "fager scorer record scored": (lambda: FagerRecord(_verdicts()["scored"]), "scored"),
    "fager scorer record failed": (lambda: FagerRecord(_verdicts()["failed"]), "failed"),
    "regeneration item scored": (lambda: ItemResult("a", "scored", score=61.5), "scored"),
    "regeneration item failed": (lambda: ItemResult("a", "failed", reason="no candidate"), "failed"),
    "regeneration pair scored": (lambda: PairRecord("a.png", 70.0, 53.0, 61.5, True), "scored"),
    "regeneration pair failed": (lambda: PairRecord("a.png", None, None, None, False, errors=["unreadable"]),
                                 "failed"),
}


def _json(record) -> dict:
    return record.model_dump(mode="json") if isinstance(record, Verdict) else record.to_json()


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_python_record_carries_the_status_of_its_json_record(case):
    make, status = CASES[case]
    record = make()
    as_json = _json(record)
    assert record.status == as_json["status"] == status
    check_record(as_json, case)  # the shared layout: id, status, score, and a score exactly when scored


def test_every_record_type_of_the_layout_is_covered():
    """A record type added to a package's records.py or spec.py joins the cases above."""
    covered = {type(make()) for make, _ in CASES.values()}
    assert covered == {ImageRecord, VIEScore2Record, Verdict, FagerRecord, ItemResult, PairRecord}
