"""Images made by the generators under test, seeded per prompt and resumable: each image is written
whole (a temporary file renamed into place) and one that exists is never made again, so a killed
run loses at most the images in flight. Each folder's generator.json records the settings; a
folder made with other settings is refused instead of mixed.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..outputs import json_text, replaced_when_done, write_text_whole
from .models import SEED_RULE, BenchmarkError, GeneratorModel, derive_seed, shown
from .processes import Processes
from .suites import PromptSuite

#: The generator's settings file in its images folder.
GENERATOR_MANIFEST = "generator.json"
#: Settings that decide the images: a folder made with others is refused.
DECIDING = ("pipeline", "seed", "seed_rule", "steps", "width", "height", "images_per_prompt", "dtype")


def check_generator(model: GeneratorModel, suite: PromptSuite) -> None:
    """Before any work: the pipeline can load here (a folder with model_index.json, a cached or
    reachable Hub id, an importable `module:callable`, diffusers installed) and every prompt has text."""
    empty = [p.id for p in suite.prompts if not p.prompt.strip()]
    if empty:
        raise BenchmarkError(f"--generator {model.name}: suite {suite.name!r} has no prompt text for {shown(empty)}; "
                             "a generator needs one per prompt")
    pipeline = model.pipeline
    if callable(pipeline):
        return
    from ..cli.intake import looks_like_path
    from ..generators import GeneratorError, is_module_spec, load_generator

    label = f"--generator {model.name}={pipeline}"
    text = os.path.expanduser(str(pipeline))
    if is_module_spec(text):
        try:
            model.pipeline = load_generator(text)  # imports the callable now: a typo fails before any work
        except (GeneratorError, TypeError) as error:
            raise BenchmarkError(f"{label}: {error}") from None
        return
    try:
        import diffusers  # noqa: F401  (the pipelines' library, an optional extra)
    except ImportError:
        raise BenchmarkError(f"{label}: needs diffusers, which is not installed: pip install \"vlmjudge[diffusers]\"") from None
    if os.path.isdir(text):
        if not os.path.isfile(os.path.join(text, "model_index.json")):
            raise BenchmarkError(f"{label}: the folder holds no model_index.json, so it is no diffusers pipeline")
    elif os.path.exists(text):
        raise BenchmarkError(f"{label} is a file; give a diffusers pipeline folder or Hub id")
    elif looks_like_path(text):
        raise BenchmarkError(f"{label}: no such pipeline folder")
    else:
        from ..offline import unavailable_reason
        reason = unavailable_reason(text)
        if reason:
            raise BenchmarkError(f"{label}: the pipeline is {reason}; give a local pipeline folder "
                                 "(python -m vlmjudge.testing text_to_image DIR builds a tiny one)")


def folder_settings(model: GeneratorModel) -> dict[str, Any]:
    """What the generator's folder records: the model, its deciding settings, and the library."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        diffusers_version = version("diffusers")
    except PackageNotFoundError:
        diffusers_version = None
    return {**model.describe(), "seed_rule": SEED_RULE, "call_kwargs": model.settings.call_kwargs(),
            "diffusers_version": diffusers_version}


def prepare_folder(model: GeneratorModel, suite: PromptSuite) -> None:
    """Make the model's images folder and record its settings; a folder whose generator.json
    records other deciding settings is refused (its images would mix two generators' work)."""
    assert model.folder is not None
    if model.folder.is_file():
        raise BenchmarkError(f"{model.folder} is a file, where model {model.name}'s images go")
    settings = {**folder_settings(model), "suite": suite.name}
    manifest = model.folder / GENERATOR_MANIFEST
    if manifest.is_file():
        try:
            earlier = json.loads(manifest.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            raise BenchmarkError(f"{manifest} is not readable JSON; remove it or the folder to start afresh") from None
        differ = [key for key in DECIDING if isinstance(earlier, dict) and earlier.get(key) != settings.get(key)]
        if not isinstance(earlier, dict) or differ:
            shown_keys = ", ".join(f"{key} {earlier.get(key)!r} then, {settings.get(key)!r} now" for key in differ[:3]) \
                if isinstance(earlier, dict) else "not a JSON object"
            raise BenchmarkError(f"{model.folder} holds images made with other settings ({shown_keys}); "
                                 "give another --out or another model name")
    model.folder.mkdir(parents=True, exist_ok=True)
    write_text_whole(manifest, json_text(settings, str(manifest), indent=2) + "\n")


def load_pipeline(model: GeneratorModel, device: str | None) -> Any:
    """The generator, loaded once on `device` (a load failure is one line)."""
    from ..generators import GeneratorError, load_generator

    settings = model.settings
    if callable(model.pipeline):
        if type(model.pipeline).__module__.split(".")[0] == "diffusers":  # a pipeline object, called as diffusers does
            from ..generators import DiffusersTextToImage
            return DiffusersTextToImage(model.pipeline, name=model.name, batch_size=settings.batch_size,
                                        call_kwargs=settings.call_kwargs())
        return load_generator(model.pipeline)
    kwargs = {"device": device, "dtype": settings.dtype, "batch_size": settings.batch_size,
              "name": model.name, **settings.call_kwargs()}
    try:
        return load_generator(os.path.expanduser(str(model.pipeline)), **kwargs)
    except (OSError, ValueError, TypeError, ImportError, GeneratorError) as error:
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise BenchmarkError(f"--generator {model.name}={model.pipeline_label()}: cannot load: {text}") from None


def write_image(path: Path, image: Any) -> None:
    """Write one image whole (PNG): a reader sees no file or the whole file, never half of one."""
    with replaced_when_done(path) as partial:
        image.save(partial, format="PNG")


def generate(model: GeneratorModel, suite: PromptSuite, processes: Processes, bar: Any,
             on_image: Callable[[Path], None] | None = None) -> dict[str, int]:
    """Make this process's share of the model's images that do not exist yet; returns how many
    it made and how many it found made. Every process shards the full list the same way, so none
    depends on which files another has written; the pipeline loads only when something is left."""
    settings = model.settings
    tasks = [(prompt, k) for prompt in suite.prompts for k in range(settings.images_per_prompt)]
    start, end = processes.shard(len(tasks))
    todo = [(prompt, k) for prompt, k in tasks[start:end] if not model.image_path(prompt.id, k).is_file()]
    counts = {"generated": 0, "kept": end - start - len(todo)}
    bar.update(counts["kept"])
    if not todo:
        return counts
    generator = load_pipeline(model, processes.device_for(settings.device))
    for lo in range(0, len(todo), settings.batch_size):
        batch = todo[lo:lo + settings.batch_size]
        seeds = [derive_seed(settings.seed, prompt.id, k) for prompt, k in batch]
        images = generator([prompt.prompt for prompt, _ in batch], seeds)
        for (prompt, k), image in zip(batch, images, strict=True):
            path = model.image_path(prompt.id, k)
            write_image(path, image)
            counts["generated"] += 1
            bar.update(1)
            if on_image is not None:
                on_image(path)
    return counts
