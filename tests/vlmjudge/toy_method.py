"""A toy method for the registry and conformance tests: P("Yes") to "Is this a photo?"."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from vlmjudge.registry import MethodSpec
from vlmjudge.requests import Request


@dataclass
class ToyRecord:
    score: float | None
    valid: bool

    def to_json(self) -> dict:
        return asdict(self)


class ToyScorer:
    def __init__(self, judge, question: str = "Is this a photo?"):
        self.judge, self.question = judge, question

    def score_batch(self, batch):
        n = SPEC.check_batch(batch)
        requests = [Request(images=[img], text=self.question, prefix="Answer:", meta={"item_id": i})
                    for i, img in enumerate(batch["image"][:n])]
        probs = self.judge.choice_probs(requests, ["Yes", "No"])
        return [ToyRecord(p["Yes"], True) if p else ToyRecord(None, False) for p in probs]


def _render(record):
    text = "n/a" if record.score is None else f"{record.score:.3f}"
    return {"score_text": text, "markdown": f"**P(Yes)** = {text}"}


SPEC = MethodSpec(name="toyphoto", inputs=("image",), build=ToyScorer, score_range=(0.0, 1.0),
                  normalize=lambda s: s, render=_render, description="A toy method for tests.")
