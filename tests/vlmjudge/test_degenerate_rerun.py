"""A degenerate model answer is a counted parse failure, and a rerun from the response cache neither
crashes on it nor turns it into a score (issue 19: the crash used to be cached with the answer).

A scripted judge answers every generation with one of the issue's degenerate texts and puts all
probability on the first option (so every TerraVis check is positive and asks for evidence). The
second run of each method reads the same answers back from the cache with no model call.
"""
from __future__ import annotations

from typing import Any

import pytest
from PIL import Image

from vlmjudge.backends.replay import ReplayJudge

DEGENERATE = {
    "deep brackets": '{"aspect": ' + "[" * 1000,
    "huge column": "r1: " + "1" * 4400,
    "huge number": '{"answer":"yes","x":' + "9" * 5000 + "}",
    "stars": "*" * 32000 + "x",
}


class DegenerateJudge(ReplayJudge):
    """Every generated text is the given degenerate answer; every decision the first option."""

    def __init__(self, text: str, **kwargs: Any) -> None:
        super().__init__({}, model_id="degenerate", **kwargs)
        self.text = text

    def _recorded(self, request) -> Any:
        return self.text

    def _probs(self, request, options, normalize: bool = True) -> dict[str, float]:
        return {option: float(k == 0) for k, option in enumerate(options)}


def images(n: int = 2) -> list[Image.Image]:
    return [Image.new("RGB", (64, 64), colour) for colour in ("red", "blue", "green")[:n]]


@pytest.mark.parametrize("name", list(DEGENERATE))
def test_terravis_counts_a_degenerate_evidence_and_a_cached_rerun_agrees(name, tmp_path):
    from terravis import TerraVis
    cache = tmp_path / "responses.sqlite"
    first_judge = DegenerateJudge(DEGENERATE[name], cache=str(cache))
    first = [r.to_json() for r in TerraVis(first_judge).score(images())]
    assert first_judge.stats.model_calls > 0
    assert all(r["parse_failures"] > 0 for r in first), "each unreadable evidence is counted"
    rerun_judge = DegenerateJudge(DEGENERATE[name], cache=str(cache))
    again = [r.to_json() for r in TerraVis(rerun_judge).score(images())]
    assert rerun_judge.stats.model_calls == 0 and again == first


@pytest.mark.parametrize("name", list(DEGENERATE))
def test_viescore2_fails_a_degenerate_answer_and_a_cached_rerun_agrees(name, tmp_path):
    from viescore2 import VIEScore2
    cache = tmp_path / "responses.sqlite"
    prompts = ["a red square", "a blue square"]
    first_judge = DegenerateJudge(DEGENERATE[name], cache=str(cache))
    first = VIEScore2(first_judge).score(images(), prompts)
    assert first_judge.stats.model_calls == 2
    assert all(r.score is None and r.status in ("failed", "partial") for r in first)
    rerun_judge = DegenerateJudge(DEGENERATE[name], cache=str(cache))
    again = VIEScore2(rerun_judge).score(images(), prompts)
    assert rerun_judge.stats.model_calls == 0
    assert [r.to_json() for r in again] == [r.to_json() for r in first]
