"""Helpers for the FAGER agent tests: replay answers from the released ABO run, tiny packs, images."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from vlmjudge.backends.replay import ReplayJudge

KEYS = ("item_id", "question_id")


def limits(string: int, items: int, tokens: int) -> dict:
    return {"limits": {"string": string, "items": items}, "max_new_tokens": tokens}


#: A pack whose bounds let a random tiny model close every JSON within its budget.
TINY_PACK = {"agents": {
    "proposal": limits(8, 1, 1500), "extraction": limits(8, 2, 300), "verification": limits(8, 1, 2500),
    "qa": limits(10, 64, 800), "evaluation": limits(10, 2, 100), "regenerate": limits(10, 2, 100),
    "edit": limits(10, 2, 100)}}


def released(abo: Path, side: str) -> list[dict]:
    """The released details.jsonl records of one side (real or flux2)."""
    return [json.loads(line) for line in (abo / "results" / side / "details.jsonl").read_text().splitlines()
            if line.strip()]


def released_answers(records: list[dict]) -> dict:
    """Replay answers keyed by (item id, question id): each recorded answer as the JSON the
    evaluation agent writes, and the recorded feedback where the decision needed one."""
    answers = {}
    for record in records:
        item = str(record["index"])
        for position, q in enumerate(record["per_question"]):
            answers[(item, position)] = json.dumps({"answer": q["answer"], "rationale": q["rationale"]})
        step = record["next_step"]
        if step["decision"] == "edit":
            answers[(item, "feedback")] = json.dumps({"instruction": step["edit_instruction"]})
        elif step["decision"] == "regenerate":
            answers[(item, "feedback")] = json.dumps({"constraint": step["regenerate_prompt"]})
    return answers


def keyed_replay(answers: dict, **kwargs) -> ReplayJudge:
    return ReplayJudge(answers, key_fields=KEYS, **kwargs)


def noise(seed: int, size: tuple[int, int] = (48, 64)) -> Image.Image:
    """A synthetic image (the released images are not shipped)."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8))


class KeyedReplay(ReplayJudge):
    """A replay judge keyed by item and question id, for `--backend fagent_helpers:KeyedReplay`."""

    def __init__(self, answers, **kwargs):
        super().__init__(answers, key_fields=KEYS, **kwargs)
