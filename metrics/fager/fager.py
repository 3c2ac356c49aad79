"""FAGER as an `evaluate` metric: factuality of text-to-image outputs against verified rubrics.

A thin face over `fager.pipeline.Fager`: images and prompts are the features; reference
images (`reference_images`: evaluate keeps the name `references` for itself) or ready QA
sets are keyword arguments of `add_batch` / `compute`; the judge and the pipeline options are
load-time keywords (or, for the images given to one `compute` call, compute keywords). Images
are scored when they are added (`add` / `add_batch`) and only their verdicts are stored, so in
evaluate's multi-process mode each process scores its own shard and `compute()` only aggregates.
"""
import datasets
import evaluate

from fager.pipeline import Fager as FagerPipeline
from fager.references import MappingReferences
from fager.schema import Verdict
from fager.spec import parse_qa_value
from fager.scoring import GatingPolicy
from vlmjudge.distributed import store_scored_rows
from vlmjudge.metric_support import ScoredRowsModule

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
    judge (optional): a ready vlmjudge judge; otherwise one is loaded from `model`.
    model (`str`, default "Qwen/Qwen3-VL-8B-Instruct"): Hub id or folder of the image judge.
    backend (`str`, default "transformers"): vlmjudge backend ("transformers", "openai", "replay").
    text_judge / text_model (optional): a separate judge for the text agents.
    regenerate_threshold (`float`, default 20), keep_threshold (`float`, default 95),
    inclusive (`bool`, default True): the gate.
    judge_kwargs (`dict`, optional): more arguments for `load_judge` (device, dtype, key_fields...).
    pipeline_kwargs (`dict`, optional): more arguments for `fager.pipeline.Fager`.
    The judge options (judge ... pipeline_kwargs) are given at load time
    (`evaluate.load("fager", judge=..., ...)`) to score images as they are added; given to
    `compute` together with images, they score only those images.
Returns:
    `fager`: mean overall score (0-100) over the images that could be scored (None if none),
    `scores`: per-image overall scores (None where unscorable), `decisions`, `feedback`,
    `level_1`, `level_2`, `level_3`: per-image level scores, `scored` and `unscored` counts,
    and `parse_failures`: answers that could not be read (left out of every mean).
Examples:
    A tiny random judge, built offline, stands in for a real one here (the default model is
    Qwen/Qwen3-VL-8B-Instruct); a given QA set means that no rubric is built:

    >>> import tempfile
    >>> from PIL import Image
    >>> from vlmjudge.testing import build_tiny_vlm
    >>> tiny_judge = build_tiny_vlm(tempfile.mkdtemp() + "/tiny-vlm")
    >>> fager = evaluate.load("fager", model=tiny_judge, judge_kwargs={"device": "cpu"})
    >>> qa_set = {"prompt": "A red apple", "items": [
    ...     {"question": "Is there an apple?", "level": "level_1", "category": "existence",
    ...      "importance": "high", "source_fact": "an apple"},
    ...     {"question": "Is the apple red?", "level": "level_2", "category": "color",
    ...      "importance": "medium", "source_fact": "the apple is red"}]}
    >>> image = Image.new("RGB", (32, 32), "red")
    >>> out = fager.compute(images=[image], prompts=["A red apple"], qa_sets=[qa_set])
    >>> out["scored"], out["decisions"][0] in ("keep", "edit", "regenerate"), 0.0 <= out["fager"] <= 100.0
    (1, True, True)
"""


#: What is stored per image (its verdict), instead of the images themselves.
STORED = datasets.Features({"verdict": datasets.Value("string")})
#: Keywords that configure the judge and the pipeline (load time, or one compute call).
JUDGE_OPTIONS = ("judge", "model", "backend", "text_judge", "text_model", "regenerate_threshold", "keep_threshold",
                 "inclusive", "judge_kwargs", "pipeline_kwargs")


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class FAGER(ScoredRowsModule, evaluate.Metric):
    """FAGER scores of generated images, with decisions and feedback."""

    def __init__(self, *args, qa_sets=None, **kwargs):
        self._options = {k: kwargs.pop(k) for k in JUDGE_OPTIONS if k in kwargs}
        super().__init__(*args, **kwargs)
        #: Load-time QA sets by prompt, for images added without one (evaluate.combine routes
        #: only the features, images and prompts, so this is how a combined FAGER gets its sets).
        self._qa_by_prompt = {}
        for value in qa_sets or ():
            qa = parse_qa_value(value, "")
            if qa is None or qa.prompt in self._qa_by_prompt:
                raise ValueError(f"load-time qa_sets need one set per prompt, got {value!r:.80}")
            self._qa_by_prompt[qa.prompt] = qa
        self._pipeline = None
        self._n_added = 0

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
        if self._pipeline is None:
            self._pipeline = _build_pipeline(**self._options)
        return self._pipeline

    def stored_features(self):
        """What the cache files hold: one verdict per image, not the image."""
        return STORED

    def add_batch(self, *, images=None, prompts=None, reference_images=None, qa_sets=None, ids=None, pipeline=None):
        """Score a batch of images now and store their verdicts."""
        if images is None or prompts is None:
            raise ValueError("add_batch needs images=[...] and prompts=[...]")
        if isinstance(images, (str, bytes)) or hasattr(images, "convert") or not hasattr(images, "__len__"):
            raise TypeError("images must be a list of images (wrap a single image in a list)")
        if isinstance(prompts, str) or not hasattr(prompts, "__len__"):
            raise TypeError("prompts must be a list of strings, one per image")
        images, prompts = list(images), list(prompts)
        n = len(images)
        if n == 0:
            raise ValueError("no images to score")
        for name, column in (("prompts", prompts), ("reference_images", reference_images), ("qa_sets", qa_sets),
                             ("ids", ids)):
            if column is not None and len(column) != n:
                raise ValueError(f"{name} has {len(column)} entries for {n} images")
        if ids is None:
            prefix = "" if self.num_process == 1 else f"{self.process_id}:"
            ids = [f"{prefix}{self._n_added + i}" for i in range(n)]
        if self._qa_by_prompt:
            qa_sets = [q if q is not None else self._qa_by_prompt.get(p)
                       for q, p in zip(qa_sets or [None] * n, prompts)]
        verdicts = _score(pipeline or self.pipeline, images, prompts, reference_images, qa_sets,
                          [str(i) for i in ids])
        self._n_added += n
        store_scored_rows(self, STORED, {"verdict": [v.model_dump_json() for v in verdicts]})

    def add(self, *, image=None, prompt=None, reference_image=None, qa_set=None, id=None, images=None, prompts=None):
        """Score one image now and store its verdict. `images=` / `prompts=` (the feature names,
        which `evaluate.combine(...).add` passes) name the same one example."""
        image, prompt = _one(image, images, "image"), _one(prompt, prompts, "prompt")
        self.add_batch(images=None if image is None else [image], prompts=None if prompt is None else [prompt],
                       reference_images=None if reference_image is None else [reference_image],
                       qa_sets=None if qa_set is None else [qa_set], ids=None if id is None else [id])

    def compute(self, *, images=None, prompts=None, reference_images=None, qa_sets=None, ids=None,
                predictions=None, references=None, **kwargs):
        """Score any images given here (with this call's judge options, if any), then aggregate every
        stored verdict (all processes). `predictions` / `references` (which `evaluate.combine`
        always passes) must be None: FAGER's inputs are images and prompts."""
        if predictions is not None or references is not None:
            raise ValueError("fager takes images= and prompts= (and reference_images=), not predictions/references")
        options = {k: kwargs.pop(k) for k in JUDGE_OPTIONS if k in kwargs}
        if kwargs:
            raise ValueError(f"unknown compute arguments {sorted(kwargs)}")
        columns = (images, prompts, reference_images, qa_sets, ids)
        if any(c is not None for c in columns):
            pipeline = _build_pipeline(**{**self._options, **options}) if options else None
            self.add_batch(images=images, prompts=prompts, reference_images=reference_images, qa_sets=qa_sets,
                           ids=ids, pipeline=pipeline)
        elif options:
            raise ValueError(f"judge options {sorted(options)} at compute apply only to images given there; "
                             "pass them at load time to score images as they are added")
        if self.writer is None and self.num_process == 1:
            raise ValueError("no images to aggregate: pass images= and prompts= or call add/add_batch first")
        return self.compute_stored()

    def _compute(self, verdict):
        verdicts = [Verdict.model_validate_json(v) for v in verdict]
        scores = [v.overall_score for v in verdicts]
        valid = [s for s in scores if s is not None]
        return {
            "fager": sum(valid) / len(valid) if valid else None,
            "scores": scores,
            "decisions": [v.decision for v in verdicts],
            "feedback": [v.feedback for v in verdicts],
            "level_1": [v.level_scores.level_1 for v in verdicts],
            "level_2": [v.level_scores.level_2 for v in verdicts],
            "level_3": [v.level_scores.level_3 for v in verdicts],
            "scored": len(valid),
            "unscored": len(verdicts) - len(valid),
            "parse_failures": sum(v.counts.failed for v in verdicts),
        }


def _one(singular, feature_named, name):
    """The one example of `add`, given by its own name or by the feature's name (not both)."""
    if singular is not None and feature_named is not None:
        raise ValueError(f"give {name}= or {name}s=, not both")
    return singular if singular is not None else feature_named


def _build_pipeline(judge=None, model="Qwen/Qwen3-VL-8B-Instruct", backend="transformers", text_judge=None,
                    text_model=None, regenerate_threshold=20.0, keep_threshold=95.0, inclusive=True,
                    judge_kwargs=None, pipeline_kwargs=None):
    if judge is None or (text_judge is None and text_model is not None):
        from vlmjudge import load_judge
        judge = judge if judge is not None else load_judge(model, backend=backend, **(judge_kwargs or {}))
        if text_model is not None:
            text_judge = load_judge(text_model, backend=backend, **(judge_kwargs or {}))
    policy = GatingPolicy(regenerate_threshold=regenerate_threshold, keep_threshold=keep_threshold,
                          inclusive=inclusive)
    return FagerPipeline(judge, text_judge, policy=policy, **(pipeline_kwargs or {}))


def _score(pipeline, images, prompts, reference_images, qa_sets, ids):
    """Verdicts in input order: images with a given QA set are scored against it, the others
    against a rubric the agents build (from their reference images, if any)."""
    n = len(images)
    given = [parse_qa_value(q, p) for q, p in zip(qa_sets or [None] * n, prompts)]
    provider = None
    if reference_images is not None:
        provider = MappingReferences({ids[i]: r for i, r in enumerate(reference_images) if r is not None})
    verdicts = [None] * n
    for members, use_given in (([i for i in range(n) if given[i] is not None], True),
                               ([i for i in range(n) if given[i] is None], False)):
        if not members:
            continue
        qa = [given[i].model_copy(update={"index": ids[i]}) for i in members] if use_given else None
        got = pipeline.score([images[i] for i in members], [prompts[i] for i in members], qa_sets=qa,
                             ids=[ids[i] for i in members], references=provider)
        for i, verdict in zip(members, got):
            verdicts[i] = verdict
    return verdicts
