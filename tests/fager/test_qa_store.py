"""QA sets on disk: the released QA.csv round trip and the keyed store."""
from __future__ import annotations

import csv
import io
import json

import pytest

from fager.qa_store import (
    QA_COLUMNS, AgentModels, QAFormatError, QARecord, QASetKey, QAStore, format_qa_csv, parse_qa_csv, read_qa_csv,
    write_qa_csv,
)
from fager.schema import ReferenceExtraction, Rubric, Verification

MODELS = AgentModels(proposal="gpt-5.4-mini", extraction="Qwen/Qwen3-VL-8B-Instruct",
                     verification="gpt-5.4-mini", qa="gpt-5.4-mini")


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_released_qa_csv_loads_and_writes_back(abo, tmp_path):
    original = (abo / "QA.csv").read_text(encoding="utf-8")
    sets = read_qa_csv(abo / "QA.csv")
    assert len(sets) == 50
    assert sum(len(s.items) for s in sets) == 501
    assert sets[0].index == "1" and sets[0].prompt == "Amazon Elements Melatonin 3mg, 260 Tablets"
    assert [i.level for i in sets[0].items] == ["level_1"] * 2 + ["level_2"] * 4 + ["level_3"] * 2
    out = tmp_path / "QA.csv"
    write_qa_csv(sets, out)
    written = out.read_text(encoding="utf-8")
    assert _rows(written) == _rows(original)  # equal after CSV normalisation
    assert written == original  # and, with minimal quoting and LF line ends, byte for byte


def test_qa_csv_errors_name_the_line():
    header = ",".join(QA_COLUMNS)
    good = '1,p,level_1,existence,high,Is it?,yes,yes|no|unknown,It is.'
    assert len(parse_qa_csv(f"{header}\n{good}\n")) == 1
    with pytest.raises(QAFormatError, match="header"):
        parse_qa_csv("index,prompt\n1,p\n")
    with pytest.raises(QAFormatError, match=":2: gold_answer"):
        parse_qa_csv(f"{header}\n{good.replace(',yes,', ',no,')}\n")
    with pytest.raises(QAFormatError, match=":2: expected 9 fields"):
        parse_qa_csv(f"{header}\n1,p,level_1\n")
    with pytest.raises(QAFormatError, match=":2:"):
        parse_qa_csv(f"{header}\n{good.replace('level_1', 'level_4')}\n")
    other = good.replace("1,p", "2,q").replace("Is it?", "Is that?")
    with pytest.raises(QAFormatError, match="not contiguous"):
        parse_qa_csv(f"{header}\n{good}\n{other}\n{good.replace('Is it?', 'Is this?')}\n")
    with pytest.raises(QAFormatError, match="two prompts"):
        parse_qa_csv(f"{header}\n{good}\n{good.replace('1,p', '1,other')}\n")


def test_key_digest_depends_on_every_part():
    key = QASetKey(prompt="a water molecule", models=MODELS, prompt_pack="fager-prompts-1")
    assert key.digest() == QASetKey(prompt="a water molecule", models=MODELS, prompt_pack="fager-prompts-1").digest()
    others = [key.model_copy(update={"prompt": "a water molecule "}),
              key.model_copy(update={"prompt_pack": "fager-prompts-2"}),
              key.model_copy(update={"models": MODELS.model_copy(update={"qa": "other"})})]
    assert len({key.digest(), *(k.digest() for k in others)}) == 4


def _released_record(abo, index: str) -> QARecord:
    qa_set = next(s for s in read_qa_csv(abo / "QA.csv") if s.index == index)
    lines = (abo / "intermediate" / "3_verification_results" / "results.jsonl").read_text("utf-8").splitlines()
    raw = next(json.loads(line) for line in lines if json.loads(line)["id"] == index)
    verification = Verification.model_validate({k: raw[k] for k in ("verified_rubric", "dropped", "added")})
    reference = ReferenceExtraction(status="ok", summary="Front label of an amber bottle.",
                                    visual_elements=["Amber bottle", "Black cap"], confidence=0.93, notes="")
    key = QASetKey(prompt=qa_set.prompt, models=MODELS, prompt_pack="fager-prompts-1")
    return QARecord(key=key, qa=qa_set, rubric=verification.verified_rubric, verification=verification,
                    proposal=Rubric.empty(), references=[reference])


def test_store_round_trip(abo, tmp_path):
    store = QAStore(tmp_path / "qa")
    record = _released_record(abo, "3")
    assert record.key not in store and store.get(record.key) is None
    folder = store.put(record)
    assert folder == store.path_for(record.key)
    assert sorted(p.name for p in folder.iterdir()) == ["QA.csv", "key.json", "proposal.json", "references.json",
                                                       "rubric.json", "verification.json"]
    assert read_qa_csv(folder / "QA.csv")[0].items == record.qa.items
    assert record.key in store
    assert store.get(record.key) == record
    assert list(store.keys()) == [record.key]
    slim = record.model_copy(update={"verification": None, "references": None, "proposal": None})
    store.put(slim)
    assert store.get(record.key) == slim
    assert not (folder / "verification.json").exists()


def test_store_detects_a_tampered_key(abo, tmp_path):
    store = QAStore(tmp_path)
    record = _released_record(abo, "1")
    folder = store.put(record)
    other = record.key.model_copy(update={"prompt_pack": "edited"})
    (folder / "key.json").write_text(other.model_dump_json(), encoding="utf-8")
    with pytest.raises(QAFormatError, match="different key"):
        store.get(record.key)


def test_record_must_be_consistent(abo):
    record = _released_record(abo, "1")
    with pytest.raises(ValueError, match="differs from key prompt"):
        QARecord(key=record.key.model_copy(update={"prompt": "another"}), qa=record.qa)
    with pytest.raises(ValueError, match="verified rubric"):
        QARecord(key=record.key, qa=record.qa, rubric=Rubric.empty(), verification=record.verification)


def test_format_writes_empty_index_for_unindexed_sets(abo):
    qa_set = read_qa_csv(abo / "QA.csv")[0].model_copy(update={"index": None})
    rows = _rows(format_qa_csv([qa_set]))
    assert rows[0] == list(QA_COLUMNS) and rows[1][0] == ""
    assert parse_qa_csv(format_qa_csv([qa_set]))[0] == qa_set
