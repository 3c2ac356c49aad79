"""FAGER as an `evaluate` metric: factuality of text-to-image outputs against verified rubrics.

A thin face over `fager.pipeline.Fager`: images and prompts are the features; reference
images (`reference_images`: evaluate keeps the name `references` for itself) or ready QA
sets, the judge and the pipeline options are keyword arguments.
"""
import datasets
import evaluate

from fager.pipeline import Fager as FagerPipeline
from fager.references import MappingReferences
from fager.spec import parse_qa_value
from fager.scoring import GatingPolicy

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
        no rubric is built for that image.
    ids (`list` of `str`, optional): names of the items (reference lookup, replay, reports).
    judge (optional): a ready vlmjudge judge; otherwise one is loaded from `model`.
    model (`str`, default "Qwen/Qwen3-VL-8B-Instruct"): Hub id or folder of the image judge.
    backend (`str`, default "transformers"): vlmjudge backend ("transformers", "openai", "replay").
    text_judge / text_model (optional): a separate judge for the text agents.
    regenerate_threshold (`float`, default 20), keep_threshold (`float`, default 95),
    inclusive (`bool`, default True): the gate.
    judge_kwargs (`dict`, optional): more arguments for `load_judge` (device, dtype, key_fields...).
Returns:
    `fager`: mean overall score (0-100) over the images that could be scored (None if none),
    `scores`: per-image overall scores (None where unscorable), `decisions`, `feedback`,
    `level_1`, `level_2`, `level_3`: per-image level scores, `scored` and `unscored` counts,
    and `parse_failures`: answers that could not be read (left out of every mean).
Examples:
    >>> fager = evaluate.load("fager")  # doctest: +SKIP
    >>> out = fager.compute(images=[image], prompts=["A molecule of ethanol"])  # doctest: +SKIP
    >>> out["fager"], out["decisions"]  # doctest: +SKIP
    (87.5, ['edit'])
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class FAGER(evaluate.Metric):
    """FAGER scores of generated images, with decisions and feedback."""

    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"images": datasets.Image(), "prompts": datasets.Value("string")}),
        )

    def _compute(self, images, prompts, reference_images=None, qa_sets=None, ids=None, judge=None,
                 model="Qwen/Qwen3-VL-8B-Instruct", backend="transformers", text_judge=None, text_model=None,
                 regenerate_threshold=20.0, keep_threshold=95.0, inclusive=True, judge_kwargs=None,
                 pipeline_kwargs=None):
        n = len(images)
        for name, column in (("reference_images", reference_images), ("qa_sets", qa_sets), ("ids", ids)):
            if column is not None and len(column) != n:
                raise ValueError(f"{name} has {len(column)} entries for {n} images")
        if judge is None or (text_judge is None and text_model is not None):
            from vlmjudge import load_judge
            judge = judge if judge is not None else load_judge(model, backend=backend, **(judge_kwargs or {}))
            if text_model is not None:
                text_judge = load_judge(text_model, backend=backend, **(judge_kwargs or {}))
        ids = [str(i) for i in (ids if ids is not None else range(n))]
        policy = GatingPolicy(regenerate_threshold=regenerate_threshold, keep_threshold=keep_threshold,
                              inclusive=inclusive)
        pipeline = FagerPipeline(judge, text_judge, policy=policy, **(pipeline_kwargs or {}))
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
            "unscored": n - len(valid),
            "parse_failures": sum(v.counts.failed for v in verdicts),
        }
