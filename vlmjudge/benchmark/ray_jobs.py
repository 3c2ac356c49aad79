"""A benchmark on Ray Data (`--ray`): a pool of generator actors per model under test, then one pool
of judge actors, each holding one judge and every method's scorer and scoring each batch with
every method in turn (so its caches serve them all), as `vlmjudge.distributed.ray_pool` does for
one method. Images travel as paths every node reads; each batch comes back as one JSON part.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .judging import ModelItems, ShardResult, build_scorers, judge_chunk
from .methods import MethodPlan, resolve_methods
from .models import GeneratorModel, ModelImage
from .suites import PromptSuite, SuitePrompt

#: The column each judge actor's output row holds its part in.
PART = "part"


def _ray_data() -> Any:
    """ray.data, with a cluster to run on (the one RAY_ADDRESS names, else a local one)."""
    import ray
    import ray.data

    if not ray.is_initialized():
        ray.init()
    return ray.data


def _resources(settings: Any) -> dict[str, Any]:
    resources: dict[str, Any] = {"num_cpus": settings.cpus_per_actor}
    if settings.gpus_per_actor:
        resources["num_gpus"] = settings.gpus_per_actor
    return resources


class GenerateActor:
    """One generator per actor, loaded once: makes and writes the images of each batch it is sent."""

    def __init__(self, model: GeneratorModel, device: str | None) -> None:
        from .generation import load_pipeline

        self.model = model
        self.generator = load_pipeline(model, device)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        from .generation import write_image
        from .models import derive_seed

        ids, texts, ks = list(batch["prompt_id"]), list(batch["prompt"]), [int(k) for k in batch["k"]]
        images = self.generator(texts, [derive_seed(self.model.settings.seed, i, k) for i, k in zip(ids, ks)])
        paths = []
        for prompt_id, k, image in zip(ids, ks, images, strict=True):
            path = self.model.image_path(prompt_id, k)
            write_image(path, image)
            paths.append(str(path))
        return {"path": np.array(paths, dtype=object)}


def generate_ray(model: GeneratorModel, suite: PromptSuite, settings: Any, bar: Any) -> dict[str, int]:
    """Make the model's missing images on a pool of generator actors; returns the counts."""
    tasks = [(prompt, k) for prompt in suite.prompts for k in range(model.settings.images_per_prompt)]
    todo = [(prompt, k) for prompt, k in tasks if not model.image_path(prompt.id, k).is_file()]
    bar.update(len(tasks) - len(todo))
    if not todo:
        return {"generated": 0, "kept": len(tasks)}
    data = _ray_data()
    rows = [{"prompt_id": prompt.id, "prompt": prompt.prompt, "k": k} for prompt, k in todo]
    device = "cuda" if settings.gpus_per_actor else model.settings.device
    made = data.from_items(rows, override_num_blocks=min(len(rows), settings.actors * 4)).map_batches(
        GenerateActor, fn_constructor_kwargs={"model": model, "device": device},
        compute=data.ActorPoolStrategy(size=settings.actors), batch_size=model.settings.batch_size,
        batch_format="numpy", **_resources(settings)).take_all()
    bar.update(len(made))
    return {"generated": len(made), "kept": len(tasks) - len(todo)}


class JudgeActor:
    """One judge per actor (loaded once) and every method's scorer over it."""

    def __init__(self, methods: Sequence[tuple[Any, dict[str, Any]]], recipe: Any, device: str | None) -> None:
        import dataclasses

        self.plans = resolve_methods([spec for spec, _ in methods])
        for plan, (_, options) in zip(self.plans, methods):
            plan.options = dict(options)
        self.judge = None
        if any(plan.needs_judge for plan in self.plans):
            if device and recipe.backend == "transformers" and recipe.device is None:
                recipe = dataclasses.replace(recipe, device=device)
            from ..cli.progress import quiet_judge
            self.judge = quiet_judge(recipe.load())
        self.scorers = build_scorers(self.plans, self.judge)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        """One part (`ShardResult` JSON, with what judged) for a batch, chunked by model."""
        import numpy as np

        from ..distributed.accelerate_shards import scorer_manifest

        columns = {name: list(values) for name, values in batch.items()}
        result = ShardResult()
        rows = list(zip(columns["model"], columns["index"], columns["id"], columns["prompt_id"], columns["k"],
                        columns["path"], columns["note"], columns["prompt"], columns["reference"]))
        position = 0
        while position < len(rows):
            model = rows[position][0]
            chunk, prompts = [], {}
            while position < len(rows) and rows[position][0] == model:
                _, index, item_id, prompt_id, k, path, note, text, reference = rows[position]
                chunk.append((int(index), ModelImage(item_id, prompt_id, k or None, Path(path)), note or None))
                prompts[prompt_id] = SuitePrompt(prompt_id, text, {}, reference or None)
                position += 1
            judge_chunk(result, model, chunk, prompts, self.scorers, self.judge)
        made_by = getattr(self.judge, "manifest", None)
        part = {**result.as_json(), "manifests": {plan.name: scorer_manifest(s) for plan, s in self.scorers},
                "judge": made_by() if callable(made_by) else None}
        return {PART: np.array([json.dumps(part, default=str)], dtype=object)}


def judge_ray(plan: Any, models: Sequence[ModelItems], bar: Any) -> tuple[ShardResult, dict, Any]:
    """Judge every model's kept images on a pool of judge actors: (merged parts, each method's
    manifest, the judge's manifest), as the in-process phase returns them."""
    prompts = {prompt.id: prompt for prompt in plan.suite.prompts}
    rows = []
    for items in models:
        for index in items.kept:
            image = items.image(index)
            prompt = prompts[image.prompt_id]
            rows.append({"model": items.name, "index": index, "id": image.id, "prompt_id": image.prompt_id,
                         "k": image.k or "", "path": str(image.path), "note": items.notes.get(index) or "",
                         "prompt": prompt.prompt, "reference": prompt.reference or ""})
    if not rows:
        return ShardResult(), {}, None
    data = _ray_data()
    methods = [(_portable_spec(method), dict(method.options)) for method in plan.methods]
    device = "cuda" if plan.ray.gpus_per_actor else None
    parts = data.from_items(rows, override_num_blocks=max(1, min(len(rows), plan.ray.actors * 4))).map_batches(
        JudgeActor, fn_constructor_kwargs={"methods": methods, "recipe": plan.judge, "device": device},
        compute=data.ActorPoolStrategy(size=plan.ray.actors), batch_size=plan.chunk_size, batch_format="numpy",
        **_resources(plan.ray)).take_all()
    loaded = [json.loads(row[PART]) for row in parts]
    bar.update(len(rows) * len(plan.methods))
    first = loaded[0] if loaded else {}
    return ShardResult.merged(loaded), first.get("manifests", {}), first.get("judge")


def _portable_spec(method: MethodPlan) -> Any:
    """How an actor finds a method again: its registered name, else the spec itself."""
    from ..registry import method_names

    return method.name if method.name in method_names() else method.spec
