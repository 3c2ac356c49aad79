"""A toy method for the registry and conformance tests: P("Yes") to "Is this a photo?"."""
from __future__ import annotations

from dataclasses import dataclass

from vlmjudge.registry import MethodSpec
from vlmjudge.requests import Request


@dataclass
class ToyRecord:
    id: str
    score: float | None
    valid: bool

    def to_json(self) -> dict:
        """The shared record layout: id, status, score first."""
        return {"id": self.id, "status": "scored" if self.valid else "failed", "score": self.score,
                "valid": self.valid}


class ToyScorer:
    def __init__(self, judge, question: str = "Is this a photo?"):
        self.judge, self.question = judge, question

    def score_batch(self, batch):
        n = SPEC.check_batch(batch)
        requests = [Request(images=[img], text=self.question, prefix="Answer:", meta={"item_id": i})
                    for i, img in enumerate(batch["image"][:n])]
        probs = self.judge.choice_probs(requests, ["Yes", "No"])
        ids = [str(i) for i in batch["id"]] if "id" in batch else [str(i) for i in range(n)]
        return [ToyRecord(i, p["Yes"], True) if p else ToyRecord(i, None, False) for i, p in zip(ids, probs)]


def _render(record):
    text = "n/a" if record.score is None else f"{record.score:.3f}"
    return {"score_text": text, "markdown": f"**P(Yes)** = {text}"}


SPEC = MethodSpec(name="toyphoto", inputs=("image",), optional_inputs=("id",), build=ToyScorer, score_range=(0.0, 1.0),
                  normalize=lambda s: s, render=_render, description="A toy method for tests.")
