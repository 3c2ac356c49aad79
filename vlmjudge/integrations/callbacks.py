"""What the Lightning and Hugging Face training callbacks share: the judge panel, the fixed prompts
with their extra inputs, the sampler and the log prefix, and the one step both take (sample an
image per prompt, then score). Importing it needs neither framework."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vlmjudge.integrations.panel import JudgePanel
from vlmjudge.integrations.samples import ScoredSamples, check_inputs, sample_images, score_samples


class PromptJudging:
    """The base of `JudgeCallback` and `JudgeTrainerCallback`: a `JudgePanel` of `methods`
    (over `judge`, with `column_names`), the `prompts` and per-prompt `inputs` (checked against
    the prompts here, so a bad callback fails when built, not after the first evaluation), the
    `sample_fn(model, prompts)` that makes the images, and the `prefix` of every logged key.
    `last` holds the latest scored samples."""

    def __init__(self, methods: Any, judge: Any, column_names: Mapping[str, str] | None, prompts: Sequence[str],
                 inputs: Mapping[str, Sequence[Any]] | None, sample_fn: Callable[[Any, list[str]], Any],
                 prefix: str) -> None:
        self.panel = JudgePanel(methods, judge, column_names)
        self.prompts = list(prompts)
        self.inputs = check_inputs(self.prompts, inputs)
        self.sample_fn = sample_fn
        self.prefix = prefix
        self.last: ScoredSamples | None = None

    def sample_and_score(self, model: Any, indices: Sequence[int] | None = None) -> ScoredSamples:
        """Sample one image per prompt (all of them, or those at `indices`) from `model` and score
        them with the panel; the result is also kept as `last`."""
        if indices is None:
            prompts, inputs = self.prompts, self.inputs
        else:
            prompts = [self.prompts[i] for i in indices]
            inputs = {k: [v[i] for i in indices] for k, v in self.inputs.items()}
        images = sample_images(self.sample_fn, model, prompts)
        scored = score_samples(self.panel, images, prompts, inputs)
        self.last = scored
        return scored

    def log_keys(self, scalars: Mapping[str, float]) -> dict[str, float]:
        """The scalars under their logged names, `<prefix>/<key>`, as floats."""
        return {f"{self.prefix}/{key}": float(value) for key, value in scalars.items()}
