"""FAGER as an `evaluate` metric: factuality of text-to-image outputs against verified rubrics.

A thin subclass of `vlmjudge.faces.ScoredModule` over the registered method (`fager.spec.SPEC`):
images and prompts are the features; reference images (`reference_images`) or ready QA sets are
keyword arguments of `add_batch` / `compute`; the judge and the pipeline options are load-time
keywords (or, for the inputs given to one `compute` call, compute keywords). Images are scored
when they are added and only their verdicts are stored, so in evaluate's multi-process mode each
process scores its own shard and `compute()` only aggregates.
"""
import datasets
import evaluate

from fager.records import Verdict
from fager.spec import SPEC, parse_qa_value
from vlmjudge.faces.module import ScoredModule

_CITATION = """\
@misc{fager,
  title = {FAGER: FActually Grounded Evaluation and Refinement for text-to-image generation},
}
"""

_DESCRIPTION = """\
FAGER checks whether an image shows the visually verifiable facts its prompt states or
implies. Agents build a three-level factual rubric per prompt (fact proposal, extraction
from reference images, verification) and turn each fact into a yes-expected question; a
vision-language judge answers yes, no or unknown from the image alone. yes = 1, no = 0,
unknown = 0.5; the overall score is the mean over all answered questions x 100. Level 1 is
asked first: at or below 20 the image is `regenerate` and levels 2-3 are skipped; otherwise
an overall score of at least 95 is `keep`, anything lower `edit`, with an edit instruction.
"""

_KWARGS_DESCRIPTION = """
Args:
    images (`list` of images): the generated images (PIL images, paths or bytes).
    prompts (`list` of `str`): one prompt per image.
    reference_images (`list`, optional): per image, a reference image, a list of them, or None;
        used only when QA sets are built.
    qa_sets (`list`, optional): per image, a QA set (dict, JSON or QA.csv text); when given,
        no rubric is built for that image. At load time (`evaluate.load("fager", qa_sets=[...])`),
        QA sets (dicts or JSON) are matched to added images by prompt: how images added through
        `evaluate.combine`, which passes only images and prompts, skip the rubric build.
    ids (`list` of `str`, optional): names of the items (reference lookup, replay, reports).
    The judge arguments of every face: model (Hub id or folder of the image judge; no model:
    the method's default model, Qwen/Qwen3-VL-8B-Instruct), backend ("transformers" (default),
    "openai", "replay"), revision, device, dtype, cache, judge_kwargs (`dict`, more backend
    options: batch_size, key_fields, ...); or judge, a ready vlmjudge judge.
    text_judge / text_model (optional): a separate judge for the text agents (text_model is
        loaded with the same judge arguments).
    regenerate_threshold (`float`, default 20), keep_threshold (`float`, default 95),
    inclusive (`bool`, default True): the gate.
    pipeline_kwargs (`dict`, optional): more arguments for `fager.Fager`.
    The judge options (judge ... pipeline_kwargs) are given at load time
    (`evaluate.load("fager", judge=..., ...)`) to score images as they are added; given to
    `compute` together with images, they score only those images.
Returns (the keys of every module first):
    `fager`: mean overall score (0-100) over the images that could be scored (None if none),
    `fager_ci`: its 95% interval [low, high] (None under two scored images), `fager_n`,
    `scores`: per-image overall scores (None where unscorable), `n_items`, `n_scored`; then
    `decisions`, `feedback`, `level_1`, `level_2`, `level_3`: per-image level scores,
    `parse_failures`: answers that could not be read (left out of every mean).
Examples:
    A tiny random judge, built offline, stands in for a real one here (the default model is
    Qwen/Qwen3-VL-8B-Instruct); a given QA set means that no rubric is built:

    >>> import tempfile
    >>> from PIL import Image
    >>> from vlmjudge.testing import build_tiny_vlm
    >>> tiny_judge = build_tiny_vlm(tempfile.mkdtemp() + "/tiny-vlm")
    >>> fager = evaluate.load("fager", model=tiny_judge, device="cpu")
    >>> qa_set = {"prompt": "A red apple", "items": [
    ...     {"question": "Is there an apple?", "level": "level_1", "category": "existence",
    ...      "importance": "high", "source_fact": "an apple"},
    ...     {"question": "Is the apple red?", "level": "level_2", "category": "color",
    ...      "importance": "medium", "source_fact": "the apple is red"}]}
    >>> image = Image.new("RGB", (32, 32), "red")
    >>> out = fager.compute(images=[image], prompts=["A red apple"], qa_sets=[qa_set])
    >>> out["n_scored"], out["decisions"][0] in ("keep", "edit", "regenerate"), 0.0 <= out["fager"] <= 100.0
    (1, True, True)
"""



@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class FAGER(ScoredModule, evaluate.Metric):
    """FAGER scores of generated images, with decisions and feedback."""

    spec = SPEC
    columns = {"images": "image", "prompts": "prompt", "reference_images": "references", "qa_sets": "qa_set"}
    required = ("images", "prompts")
    load_at_load_time = False  # a judge given to compute alone is enough: none is loaded before it is needed
    options = ("text_judge", "text_model", "regenerate_threshold", "keep_threshold", "inclusive", "pipeline_kwargs")

    def __init__(self, *args, qa_sets=None, **kwargs):
        super().__init__(*args, **kwargs)
        #: Load-time QA sets by prompt, for images added without one (evaluate.combine routes
        #: only the features, images and prompts, so this is how a combined FAGER gets its sets).
        self._qa_by_prompt = {}
        for value in qa_sets or ():
            qa = parse_qa_value(value, "")
            if qa is None or qa.prompt in self._qa_by_prompt:
                raise ValueError(f"load-time qa_sets need one set per prompt, got {value!r:.80}")
            self._qa_by_prompt[qa.prompt] = qa

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"images": datasets.Image(), "prompts": datasets.Value("string")}),
        )

    @property
    def pipeline(self):
        """The FAGER pipeline of the load-time options, its judge loaded on first use."""
        return self.scorer().fager

    def make_scorer(self, judge, settings):
        """The spec's scorer, with a text judge loaded from `text_model` (same judge arguments)."""
        config = {k: settings[k] for k in ("text_judge", "regenerate_threshold", "keep_threshold", "inclusive")
                  if settings.get(k) is not None}
        if settings.get("text_model") is not None and config.get("text_judge") is None:
            config["text_judge"] = self.load_judge({**settings, "judge": None, "model": settings["text_model"]})
        return self.spec.build(judge, **config, **dict(settings.get("pipeline_kwargs") or {}))

    def prepare_batch(self, batch):
        """Images added without a QA set take the load-time set of their prompt, if any."""
        if self._qa_by_prompt:
            given = batch.get("qa_set") or [None] * len(batch["prompt"])
            batch["qa_set"] = [q if q is not None else self._qa_by_prompt.get(p)
                               for q, p in zip(given, batch["prompt"])]
        return batch

    def _compute(self, record):
        verdicts = [Verdict.model_validate(v) for v in self.read_records(record)]
        out = self.shared_result([v.score for v in verdicts])
        out.update(decisions=[v.decision for v in verdicts], feedback=[v.feedback for v in verdicts],
                   level_1=[v.level_scores.level_1 for v in verdicts],
                   level_2=[v.level_scores.level_2 for v in verdicts],
                   level_3=[v.level_scores.level_3 for v in verdicts],
                   parse_failures=sum(v.counts.failed for v in verdicts))
        return out
