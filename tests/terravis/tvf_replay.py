"""Scripted replay answers keyed by (stage, check): every image is eligible and has one major
(biological anatomy) and one minor (support) violation, so its score is exp(-1.5)."""
import math

from terravis import TYPE_IDS
from vlmjudge.backends.replay import ReplayJudge

SCORE = math.exp(-1.5)


def stage_answers(eligible="Yes"):
    answers = {("eligibility", ""): eligible, ("eligibility_reason", ""): '{"reason": "a flat logo"}'}
    for t in TYPE_IDS:
        answers[("detection", t)] = "No"
    answers[("detection", "biological_anatomy")] = "Yes"
    answers[("detection", "support_stability")] = "Yes"
    answers[("evidence", "biological_anatomy")] = '{"aspect": "hand", "evidence": "Six fingers."}'
    answers[("evidence", "support_stability")] = '{"aspect": "cup", "evidence": "It floats."}'
    answers[("severity", "biological_anatomy")] = "Major"
    answers[("severity", "support_stability")] = "Minor"
    return answers


def stage_judge(eligible="Yes"):
    return ReplayJudge(stage_answers(eligible), key_fields=("stage", "check"))


#: Per-image behaviours for item-keyed answers.
KINDS = ("clean", "flawed", "na")
KIND_SCORE = {"clean": 1.0, "flawed": SCORE, "na": None}


def item_answers(kinds):
    """Answers keyed by (item, stage, check): `kinds` maps an image id to clean (no
    violation), flawed (the two violations of `stage_answers`) or na (ineligible)."""
    answers = {}
    for item, kind in kinds.items():
        script = stage_answers("No" if kind == "na" else "Yes")
        if kind == "clean":
            script = {k: ("No" if k[0] == "detection" else v) for k, v in script.items()}
        answers.update({(item, stage, check): value for (stage, check), value in script.items()})
    return answers


def item_judge(kinds):
    return ReplayJudge(item_answers(kinds), key_fields=("item", "stage", "check"))


def write_item_answers(path, kinds):
    """The same answers as a replay JSONL file (for `backend="replay"` in other processes)."""
    import json
    with open(path, "w") as fh:
        for (item, stage, check), text in item_answers(kinds).items():
            fh.write(json.dumps({"meta": {"item": item, "stage": stage, "check": check}, "text": text}) + "\n")
    return path


class StageReplay(ReplayJudge):
    """`--backend tvf_replay:StageReplay` for CLI tests: the stage answers, any --model."""

    def __init__(self, model=None, **kwargs):
        super().__init__(stage_answers(), key_fields=("stage", "check"), model_id=str(model), **kwargs)
