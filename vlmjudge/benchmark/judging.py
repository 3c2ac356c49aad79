"""The judging phase: each model's images, checked before the judge loads, then scored chunk by
chunk with every method over the same chunk before the next, so the judge's vision and prefix
caches serve every method and each image is encoded once.

A process judges its contiguous share of all models' images (`Processes.shard`) and returns plain
JSON (records by model and method, failures, judge counters), which process 0 gathers in order.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..cli.intake import Failure, screen
from ..images import ImageInputError, to_pil
from ..outputs import with_resolution_note
from .methods import MethodPlan, batch_columns
from .models import FoundImages, ModelImage
from .processes import Processes
from .suites import PromptSuite, SuitePrompt

#: Judge counters a benchmark reports per model (the judge's `stats`, summed over processes).
COUNTERS = ("images_encoded", "model_calls", "prefill_tokens", "cache_hits", "resumed_from_cache")


@dataclass
class ModelItems:
    """One model's images to judge after the pre-load check: those kept (with their resolution
    flags), the bad ones (failures with their place among the images found), and the prompts
    it has no image for."""

    name: str
    found: FoundImages
    kept: list[int] = field(default_factory=list)
    notes: dict[int, str] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)

    def image(self, index: int) -> ModelImage:
        return self.found.images[index]


def check_model_images(name: str, found: FoundImages, on_error: str) -> ModelItems:
    """Decode every image of a model once before the judge loads: a corrupt or unreadable file is
    a counted failure (never a score), or with on_error="raise" the end of the run."""
    from ..cli.errors import CommandError
    from .models import BenchmarkError

    try:
        screened = screen([(image.path,) for image in found.images], on_error)
    except CommandError as error:  # on_error="raise": the first bad image ends the run, before the judge loads
        raise BenchmarkError(f"model {name}, {error}") from None
    failures = [Failure(f.index, found.images[f.index].id, f"{found.images[f.index].path}: {f.reason}", True)
                for f in screened.failures]
    return ModelItems(name, found, screened.kept, screened.notes, failures)


def failure_reason(record: Mapping[str, Any]) -> str:
    """Why a failed record has no score, from the fields methods keep it in."""
    errors = record.get("errors") or record.get("error")
    if isinstance(errors, (list, tuple)):
        errors = "; ".join(str(e) for e in errors)
    return str(errors) if errors else "the judge gave no answer"


def _stats(judge: Any) -> dict[str, int]:
    stats = getattr(judge, "stats", None)
    return {name: int(getattr(stats, name, 0)) for name in COUNTERS} if stats is not None else dict.fromkeys(COUNTERS, 0)


class ShardResult:
    """What one process (or Ray actor) judged: per model and method, (image index, record) pairs;
    per model, its failures and judge counters and the images it decoded."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, list[tuple[int, dict[str, Any]]]]] = {}
        self.failures: dict[str, dict[str, list[dict[str, Any]]]] = {}
        self.counters: dict[str, dict[str, int]] = {}
        #: images each process (or Ray batch) judged, in gathering order: the split made visible
        self.shares: list[int] = []

    def add_records(self, model: str, method: str, pairs: Sequence[tuple[int, dict[str, Any]]]) -> None:
        self.records.setdefault(model, {}).setdefault(method, []).extend(pairs)

    def add_failure(self, model: str, method: str, failure: Failure) -> None:
        """A failure of one method (`method`), or of the image for every method ("*")."""
        self.failures.setdefault(model, {}).setdefault(method, []).append(asdict(failure))

    def count(self, model: str, counters: Mapping[str, int]) -> None:
        mine = self.counters.setdefault(model, {"images": 0, **dict.fromkeys(COUNTERS, 0)})
        for name, value in counters.items():
            mine[name] = mine.get(name, 0) + int(value)

    def as_json(self) -> dict[str, Any]:
        images = sum(counters.get("images", 0) for counters in self.counters.values())
        return {"records": self.records, "failures": self.failures, "counters": self.counters, "images": images}

    @classmethod
    def merged(cls, parts: Sequence[Mapping[str, Any]]) -> ShardResult:
        """Every process's part in one result, each run's records in image order."""
        whole = cls()
        for part in parts:
            for model, methods in part["records"].items():
                for method, pairs in methods.items():
                    whole.add_records(model, method, [(int(i), r) for i, r in pairs])
            for model, methods in part["failures"].items():
                for method, failures in methods.items():
                    whole.failures.setdefault(model, {}).setdefault(method, []).extend(failures)
            for model, counters in part["counters"].items():
                whole.count(model, counters)
            whole.shares.append(int(part.get("images", 0)))
        for methods in whole.records.values():
            for pairs in methods.values():
                pairs.sort(key=lambda pair: pair[0])
        for methods in whole.failures.values():
            for failures in methods.values():
                failures.sort(key=lambda failure: failure["index"])
        return whole


def judge_chunk(result: ShardResult, model: str, chunk: Sequence[tuple[int, ModelImage, str | None]],
                prompts: Mapping[str, SuitePrompt], scorers: Sequence[tuple[MethodPlan, Any]], judge: Any) -> int:
    """Score one chunk of a model's images, (index, image, resolution flag) each, with every method
    in turn; returns the images decoded. Each image is decoded once for all methods, and the
    judge's counters are kept per model."""
    before = _stats(judge)
    kept, pils = [], []
    for index, image, note in chunk:
        try:  # decoded again here: the pre-load check keeps no images in memory
            pils.append(to_pil(image.path, index=index))
        except ImageInputError as error:  # the file changed since the check
            result.add_failure(model, "*", Failure(index, image.id, f"{image.path}: {error.reason}", True))
            continue
        kept.append((index, image, note))
    if kept:
        ids = [image.id for _, image, _ in kept]
        texts = [prompts[image.prompt_id].prompt for _, image, _ in kept]
        references = [prompts[image.prompt_id].reference for _, image, _ in kept]
        for plan, scorer in scorers:
            records = scorer.score_batch(batch_columns(plan.spec, ids, pils, texts, references))
            if len(records) != len(kept):
                raise RuntimeError(f"{plan.name}: score_batch returned {len(records)} records for {len(kept)} images")
            pairs = []
            for (index, _, note), record in zip(kept, records):
                row = with_resolution_note(record.to_json(), note)
                if row.get("status") == "failed":
                    result.add_failure(model, plan.name, Failure(index, row["id"], failure_reason(row)))
                pairs.append((index, row))
            result.add_records(model, plan.name, pairs)
    after = _stats(judge)
    result.count(model, {"images": len(kept), **{k: after[k] - before[k] for k in COUNTERS}})
    return len(kept)


def judge_shard(models: Sequence[ModelItems], suite: PromptSuite, scorers: Sequence[tuple[MethodPlan, Any]],
                judge: Any, processes: Processes, chunk_size: int, bar: Any) -> dict[str, Any]:
    """Judge this process's share of every model's kept images, in chunks that never span two
    models; returns the share as JSON (`ShardResult.as_json`)."""
    prompts = {prompt.id: prompt for prompt in suite.prompts}
    tasks = [(m, index) for m, items in enumerate(models) for index in items.kept]
    start, end = processes.shard(len(tasks))
    result = ShardResult()
    for items in models:
        result.count(items.name, {})
    mine = tasks[start:end]
    position = 0
    while position < len(mine):
        model = mine[position][0]
        chunk = []
        while position < len(mine) and mine[position][0] == model and len(chunk) < chunk_size:
            chunk.append(mine[position][1])
            position += 1
        items = models[model]
        entries = [(index, items.image(index), items.notes.get(index)) for index in chunk]
        done = judge_chunk(result, items.name, entries, prompts, scorers, judge)
        bar.update(done * len(scorers))
    return result.as_json()


def build_scorers(plans: Sequence[MethodPlan], judge: Any) -> list[tuple[MethodPlan, Any]]:
    """Every method over the one judge (none for a method that needs none), built before any image
    is judged, so a bad option fails in one line first."""
    from .models import BenchmarkError

    scorers = []
    for plan in plans:
        try:
            scorer = plan.spec.build(judge if plan.needs_judge else None, **plan.options)
        except (ValueError, TypeError, OSError, ImportError) as error:
            text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise BenchmarkError(f"method {plan.name} cannot be built with options {plan.options or '{}'}: {text}") from None
        scorers.append((plan, scorer))
    return scorers

