"""Shared fixtures of the FAGER tests: the vendored released ABO run (tests/data/fager, MIT), and
a tiny Qwen3-VL judge built once for the agent tests."""
from __future__ import annotations

from pathlib import Path

import pytest

from fager import read_qa_csv
from fager.saved_runs import rescore_details

from fagent_helpers import released, released_answers

ABO = Path(__file__).resolve().parents[1] / "data" / "fager" / "ABO"


@pytest.fixture(scope="session")
def abo() -> Path:
    """The released ABO folder: QA.csv, intermediate/, results/{real,flux2}/."""
    assert (ABO / "QA.csv").is_file(), f"vendored FAGER data missing under {ABO}"
    return ABO


@pytest.fixture(scope="session")
def abo_dir() -> Path:
    """The released ABO folder (QA.csv, prompts.csv, results/{real,flux2}/)."""
    assert (ABO / "QA.csv").is_file(), f"vendored FAGER data missing under {ABO}"
    return ABO


@pytest.fixture(scope="module")
def abo_five(abo_dir):
    """Five released prompts with their QA sets (QASet objects), recorded real-image answers and
    released scores."""
    records = released(abo_dir, "real")[:5]
    qa = {q.index: q for q in read_qa_csv(abo_dir / "QA.csv")}
    ids = [str(r["index"]) for r in records]
    return {"records": records, "ids": ids, "prompts": [r["original_prompt"] for r in records],
            "qa": [qa[i] for i in ids], "answers": released_answers(records),
            "scores": [v.score for v in rescore_details(abo_dir / "results" / "real" / "details.jsonl")[:5]]}


@pytest.fixture(scope="module")
def tiny_vlm_dir(tiny_vlm_path) -> str:
    """The suite's tiny random Qwen3-VL checkpoint (yes_bias 0)."""
    return tiny_vlm_path("qwen3_vl")


@pytest.fixture(scope="module")
def tiny_judge(tiny_vlm_dir):
    """The tiny Qwen3-VL loaded as a transformers judge on CPU."""
    from vlmjudge import load_judge
    return load_judge(tiny_vlm_dir, backend="transformers", device="cpu", batch_size=8)
