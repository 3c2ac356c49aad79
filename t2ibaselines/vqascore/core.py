"""VQAScore over a judge: P("Yes") to "Does this figure show "<prompt>"?", one request per image.

VQAScore (Lin et al. 2024) is the probability of the answer word at the first answer position
under the softmax over the whole vocabulary, not renormalised over Yes and No: that is
`judge.choice_probs(..., normalize=False)` on every backend. A backend that could not see the
answer word (a server's top-k without it) gives only an upper bound: the record then fails with
that bound beside it, never scored with it. An answer that measured no probability (a recorded
text) fails too, since a one-hot is not a probability.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vlmjudge.images import to_pil
from vlmjudge.options import OptionProbs
from vlmjudge.record_schema import ScoredOrFailed
from vlmjudge.requests import Request

from .pack import VQAScorePack, load_pack

#: Bumped when the score of the same pack and judge changes.
METHOD_VERSION = "vqascore-1"
#: `meta["stage"]` of every request (not hashed: it names the request in logs and replays).
STAGE = "vqascore"


@dataclass
class VQAScoreRecord(ScoredOrFailed):
    """One image: `score` is P(answer) over the full vocabulary, None when it is not known.

    `p_yes` / `p_no` are the answer's and the contrast's probabilities where the judge saw them,
    `option_mass` their sum, `truncated` whether an option holds only an upper bound (`bounds`).
    """

    id: str
    prompt: str
    score: float | None = None
    p_yes: float | None = None
    p_no: float | None = None
    option_mass: float | None = None
    truncated: bool = False
    bounds: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The record in the shared layout: id, status, score, then VQAScore's own fields."""
        return {"id": self.id, "status": self.status, "score": self.score, "valid": self.valid,
                "prompt": self.prompt, "p_yes": self.p_yes, "p_no": self.p_no, "option_mass": self.option_mass,
                "truncated": self.truncated, "bounds": dict(self.bounds), "error": self.error}


def read_probs(item_id: str, prompt: str, probs: OptionProbs, answer: str, contrast: str) -> VQAScoreRecord:
    """A record from one answer's unnormalised option probabilities.

    Examples:
        >>> read_probs("a.png", "a cat", OptionProbs({"Yes": 0.6, "No": 0.3}, mass=0.9), "Yes", "No").score
        0.6
        >>> cut = read_probs("a.png", "a cat", OptionProbs({"Yes": 0.01, "No": 0.9}, mass=0.9, bounds={"Yes": 0.01}),
        ...                  "Yes", "No")
        >>> cut.status, cut.truncated, cut.bounds, cut.p_no
        ('failed', True, {'Yes': 0.01}, 0.9)
    """
    record = VQAScoreRecord(id=item_id, prompt=prompt, truncated=probs.truncated, bounds=dict(probs.bounds))
    if not probs:
        record.error = "the judge gave no probabilities for this image (a failed request)"
        return record
    if probs.mass is None:
        record.error = "the judge's answer measured no probability (a recorded text answer): VQAScore needs P(answer)"
        return record
    seen = {option: float(probs[option]) for option in (answer, contrast) if option not in probs.bounds}
    record.p_yes, record.p_no = seen.get(answer), seen.get(contrast)
    record.option_mass = float(probs.mass)
    if answer in probs.bounds:
        record.error = (f"P({answer!r}) is not known: the backend's top log-probabilities left it out, so only "
                        f"its upper bound {probs.bounds[answer]:.3g} is (a server with more logprobs gives it)")
        return record
    record.score = record.p_yes
    return record


class VQAScore:
    """VQAScore of images against their prompts over any judge that gives token probabilities.

    Args:
        judge: a `vlmjudge` Judge that gives option probabilities (`choice_probs`).
        pack: VQAScore's prompt pack (`t2ibaselines.vqascore.load_pack`): None for the default, a
            shipped name, a JSON path or a dict over the default.

    Examples:
        A replay judge with recorded full-vocabulary probabilities stands in for a model:

        >>> from PIL import Image
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> judge = ReplayJudge({"cat.png": {"probs": {"Yes": 0.75, "No": 0.125}}}, key_fields=("item_id",))
        >>> [record] = VQAScore(judge).score([Image.new("RGB", (32, 32), "red")], ["a red square"], ["cat.png"])
        >>> record.to_json()["score"], record.option_mass
        (0.75, 0.875)
    """

    inputs = ("image", "prompt")

    def __init__(self, judge: Any, pack: VQAScorePack | Mapping[str, Any] | str | None = None) -> None:
        if judge is None or not hasattr(judge, "choice_probs"):
            raise TypeError(f"VQAScore needs a judge with choice_probs (a vlmjudge Judge), got {type(judge).__name__}")
        self.judge = judge
        self.pack = load_pack(pack)

    def requests(self, images: Sequence[Any], prompts: Sequence[str], ids: Sequence[str]) -> list[Request]:
        """One request per image: the image, then the question, in one user turn."""
        pack = self.pack
        return [Request(images=[to_pil(image, index=i)], text=pack.ask(prompt), system=pack.system or None,
                        prefix=pack.prefix, meta={"item_id": item_id, "stage": STAGE})
                for i, (image, prompt, item_id) in enumerate(zip(images, prompts, ids))]

    def score(self, images: Sequence[Any], prompts: Sequence[str],
              ids: Sequence[Any] | None = None) -> list[VQAScoreRecord]:
        """A record per image, in order (ids default to the positions)."""
        images, prompts = list(images), list(prompts)
        ids = [str(i) for i in (range(len(images)) if ids is None else ids)]
        if not images:
            raise ValueError("nothing to score: no images")
        if not len(images) == len(prompts) == len(ids):
            raise ValueError(f"{len(images)} images, {len(prompts)} prompts and {len(ids)} ids: one each per item")
        for i, prompt in enumerate(prompts):
            if not isinstance(prompt, str) or not prompt.strip():
                raise ValueError(f"prompt {i} must be a non-empty string, got {prompt!r}")
        pack = self.pack
        probs = self.judge.choice_probs(self.requests(images, prompts, ids), pack.options, normalize=False)
        return [read_probs(item_id, prompt, p, pack.answer, pack.contrast)
                for item_id, prompt, p in zip(ids, prompts, probs, strict=True)]

    def score_batch(self, batch: Mapping[str, Sequence[Any]]) -> list[VQAScoreRecord]:
        """The `MethodSpec` entry: columns `image`, `prompt` and optionally `id`."""
        missing = [column for column in self.inputs if column not in batch]
        if missing:
            raise ValueError(f"vqascore: batch lacks required columns {missing} (has {sorted(batch)})")
        return self.score(batch["image"], batch["prompt"], batch.get("id"))

    def manifest(self) -> dict[str, Any]:
        """What produced the records: method, judge, pack and the question asked."""
        return {"method": "vqascore", "method_version": METHOD_VERSION, **self.judge.manifest(),
                "pack_version": self.pack.version, "pack_sha256": self.pack.sha256, "question": self.pack.question,
                "options": self.pack.options, "normalize": False}


__all__ = ["METHOD_VERSION", "VQAScore", "VQAScoreRecord", "read_probs"]
