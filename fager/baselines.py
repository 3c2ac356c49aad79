"""The VQAScore-style baseline for the Factual A/B test: P("Yes") to the whole prompt as one question.

The paper (Sec. 4.2, Tab. 1) compares FAGER with VQAScore, which "reformulates the prompt
as a single yes/no question, and uses the VQA model's predicted probability of answering
'Yes' as the score": P("Yes") under the softmax over the whole vocabulary. Here that is one
`choice_probs(..., normalize=False)` request per image for the pack's option words (Yes,
No), on any judge that exposes token probabilities (transformers, replay, servers that
return top logprobs). `normalize=True` gives P(Yes) / (P(Yes) + P(No)) instead, which is
not VQAScore: it reorders pairs (raw 0.40 vs 0.50 becomes 0.80 vs 0.50 when P(No) is 0.10
and 0.50). A request the judge fails on, or answers only with a bound (truncated), has no
score (None), which the A/B test refuses rather than counting as zero.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vlmjudge.images import to_pil
from vlmjudge.requests import Request

from .evaluation import ABReport, TieMode, ab_test
from .pack import PromptPack, load_pack

BASELINE_QUESTION_ID = "vqascore"


class VQAScoreBaseline:
    """P(Yes | image, "Does this image show '<prompt>'?") per image, in [0, 1].

    `normalize=False` (the default, VQAScore's definition): the full-vocabulary probability of
    the Yes token; True: normalised over the two options (this package's first release).
    """

    #: Bumped when the default score changes; "vqascore-2": raw P("Yes") by default.
    version = "vqascore-2"

    def __init__(self, judge: Any, pack: PromptPack | Mapping | str | None = None, *,
                 normalize: bool = False) -> None:
        if judge is None:
            raise ValueError("VQAScoreBaseline needs a judge")
        self.judge = judge
        self.prompt = load_pack(pack).baseline
        self.normalize = normalize

    def requests(self, images: Sequence[Any], prompts: Sequence[str], ids: Sequence[Any] | None = None) -> list[Request]:
        """One request per image: the prompt as a single yes/no question."""
        images, prompts = list(images), list(prompts)
        if len(images) != len(prompts):
            raise ValueError(f"{len(images)} images for {len(prompts)} prompts")
        if not images:
            raise ValueError("nothing to score: no images")
        ids = [str(i) for i in ids] if ids is not None else [str(i) for i in range(len(images))]
        if len(ids) != len(images):
            raise ValueError(f"{len(ids)} ids for {len(images)} images")
        out = []
        for i, (image, prompt, item_id) in enumerate(zip(images, prompts, ids)):
            if not isinstance(prompt, str) or not prompt.strip():
                raise ValueError(f"prompts[{i}] must be a non-empty string, got {prompt!r}")
            out.append(Request(images=[to_pil(image, index=i)], text=self.prompt.user.replace("{prompt}", prompt),
                               system=self.prompt.system or None, prefix=self.prompt.prefix,
                               meta={"item_id": item_id, "question_id": BASELINE_QUESTION_ID,
                                     "stage": "baseline"}))
        return out

    def score(self, images: Sequence[Any], prompts: Sequence[str], ids: Sequence[Any] | None = None) -> list[float | None]:
        """P(Yes) per image (raw, or normalised over the options); None where the judge gave nothing
        or only a bound (a truncated answer: a server's top-k without an option, counted in
        `judge.stats.truncated_options`)."""
        yes = self.prompt.options[0]
        probs = self.judge.choice_probs(self.requests(images, prompts, ids), list(self.prompt.options),
                                        normalize=self.normalize)
        return [float(p[yes]) if p and not p.truncated else None for p in probs]


def baseline_ab_test(baseline: VQAScoreBaseline, factual_images: Sequence[Any], generated_images: Sequence[Any],
                     prompts: Sequence[str], ids: Sequence[Any], tie: TieMode = "full") -> ABReport:
    """The Factual A/B test of the baseline: factual vs generated image per prompt id.

    An image without a score is an error: a failed request must not decide a pair.
    """
    ids = [str(i) for i in ids]
    factual = baseline.score(factual_images, prompts, [f"{i}:factual" for i in ids])
    generated = baseline.score(generated_images, prompts, [f"{i}:generated" for i in ids])
    missing = [i for i, a, b in zip(ids, factual, generated) if a is None or b is None]
    if missing:
        raise ValueError(f"the baseline has no score for id(s) {missing[:10]}")
    return ab_test(dict(zip(ids, factual)), dict(zip(ids, generated)), tie=tie, strict=True)


__all__ = ["BASELINE_QUESTION_ID", "VQAScoreBaseline", "baseline_ab_test"]
