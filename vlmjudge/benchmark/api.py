"""`vlmjudge.benchmark(...)`: the benchmark from Python, with the command's arguments as keywords.

It reads the suite, matches the models, resolves the methods and their options, checks it all
(every refusal before any work), then runs (`runner.run_benchmark`).
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..reports.figures import DEFAULT_DPI
from .methods import MethodPlan, apply_options, resolve_methods
from .models import BenchmarkError, GeneratorSettings, generator_models
from .models import model_images as image_folders
from .runner import BenchmarkPlan, BenchmarkResult, RaySettings, run_benchmark
from .suites import PromptSuite, load_suite, read_prompts

#: The response cache's file in --out, unless another is given.
DEFAULT_CACHE = "judge.cache.sqlite"


def parse_size(size: Any) -> tuple[int | None, int | None]:
    """(width, height) from `--size`: one number for a square, `WxH`, or a (width, height) pair.

    Examples:
        >>> parse_size("512"), parse_size("768x512"), parse_size(None)
        ((512, 512), (768, 512), (None, None))
        >>> parse_size("0x5")
        Traceback (most recent call last):
        ...
        vlmjudge.benchmark.models.BenchmarkError: --size '0x5': give one whole number of pixels above 0, or WIDTHxHEIGHT
    """
    if size is None:
        return None, None
    parts = list(size) if isinstance(size, (tuple, list)) else (
        [size] if isinstance(size, int) and not isinstance(size, bool) else str(size).lower().split("x"))
    try:
        numbers = [int(part) for part in parts]
    except (TypeError, ValueError):
        numbers = []
    if len(numbers) not in (1, 2) or min(numbers) < 1:
        raise BenchmarkError(f"--size {size!r}: give one whole number of pixels above 0, or WIDTHxHEIGHT")
    return (numbers[0], numbers[-1])


def _whole(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise BenchmarkError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return value


def _amount(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise BenchmarkError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def _fraction(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 < value < 1:
        raise BenchmarkError(f"{name} must be a number between 0 and 1, got {value!r}")
    return float(value)


def read_suite(suite: PromptSuite | str | None, *, subset: str | None = None, suite_file: Any = None,
               prompts: Any = None) -> PromptSuite:
    """The suite: a PromptSuite, a suite name (`load_suite`) or your own prompts file (`read_prompts`)."""
    if (suite is None) == (prompts is None):
        raise BenchmarkError("give the prompts: --suite NAME or --prompts FILE (one of them)")
    if prompts is not None:
        if subset is not None or suite_file is not None:
            raise BenchmarkError("--subset and --suite-file go with --suite, not with --prompts")
        return read_prompts(prompts)
    if isinstance(suite, PromptSuite):
        return suite
    return load_suite(str(suite), suite_file=suite_file, subset=subset)


def default_judge_model(plans: Sequence[MethodPlan]) -> str | None:
    """The judge the methods load without one given: their default model, when they agree."""
    defaults = {plan.spec.default_model for plan in plans if plan.needs_judge}
    return defaults.pop() if len(defaults) == 1 else None


def judge_source(judge: Any, plans: Sequence[MethodPlan], cache: str | None, **arguments: Any) -> Any:
    """What the plan loads its judge from: a loaded judge or a `JudgeRecipe` as given, else the
    recipe of `judge` (a model; None: the methods' default model) with the other judge arguments."""
    if not any(plan.needs_judge for plan in plans):
        return None
    if hasattr(judge, "generate") or (hasattr(judge, "load") and hasattr(judge, "model")):
        return judge
    from ..faces.loading import judge_recipe

    default = default_judge_model(plans)
    if judge is None and default is None:
        raise BenchmarkError("the methods have different default judges: give judge= (--judge MODEL)")
    extra = {key: value for key, value in arguments.items() if key not in ("backend", "revision", "device", "dtype")}
    try:
        return judge_recipe(default, model=None if judge is None else os.fspath(judge), cache=cache,
                            backend=arguments.get("backend"), revision=arguments.get("revision"),
                            device=arguments.get("device"), dtype=arguments.get("dtype"),
                            judge_kwargs=extra, where="benchmark judge")
    except (TypeError, ValueError) as error:
        raise BenchmarkError(str(error)) from None


def cache_path(cache: Any, out: Path) -> str | None:
    """The response cache: `True` for OUT/judge.cache.sqlite, a path, or None/False for none."""
    if cache is True:
        return str(out / DEFAULT_CACHE)
    if cache in (None, False):
        return None
    return os.fspath(cache)


def benchmark(*, out: str | os.PathLike, methods: str | Sequence[Any], suite: PromptSuite | str | None = None,
              subset: str | None = None, suite_file: str | os.PathLike | None = None,
              prompts: str | os.PathLike | None = None, model_images: Mapping[str, Any] | Sequence[str] | None = None,
              generators: Mapping[str, Any] | Sequence[str] | None = None, seed: int = 0, steps: int | None = None,
              size: Any = None, images_per_prompt: int = 1, generator_device: str | None = None,
              generator_dtype: str | None = None, generator_batch_size: int = 4,
              method_options: Mapping[str, Mapping[str, Any]] | Sequence[str] | None = None, judge: Any = None,
              backend: str | None = None, revision: str | None = None, device: str | None = None,
              dtype: str | None = None, batch_size: int = 8, judge_kwargs: Mapping[str, Any] | None = None,
              cache: Any = True, chunk_size: int = 16, on_error: str = "skip", human: str | os.PathLike | None = None,
              human_format: str = "labels", n_resamples: int = 2000, stats_seed: int = 0, confidence: float = 0.95,
              dpi: int = DEFAULT_DPI, ray: bool = False, ray_actors: int = 1, ray_gpus_per_actor: float = 0,
              ray_cpus_per_actor: float = 1, quiet: bool = False,
              on_image: Callable[[Path], None] | None = None) -> BenchmarkResult:
    """Benchmark text-to-image models on a prompt suite with every method over one judge.

    `model_images` ({name: folder}) and `generators` ({name: diffusers id, folder, `module:callable`
    or callable}) are the models; `methods` ("terravis,viescore2" or a list) the metrics, with
    `method_options` ({method: {key: value}}); `judge` a model id, folder, `JudgeRecipe` or loaded
    judge (None: the methods' default). Writes OUT/runs/<model>/<method>/records.jsonl with their
    manifests, OUT/benchmark.json, OUT/leaderboard.json and OUT/report.html. Bad input is a
    BenchmarkError or SuiteError (one line) before any work; a corrupt image is a counted
    failure (`on_error="skip"`). See docs/benchmark.md.
    """
    out_dir = Path(os.path.expanduser(os.fspath(out)))
    read = read_suite(suite, subset=subset, suite_file=suite_file, prompts=prompts)
    plans = resolve_methods(methods)
    apply_options(plans, method_options)
    width, height = parse_size(size)
    settings = GeneratorSettings(
        seed=_whole(seed, "seed", 0), steps=None if steps is None else _whole(steps, "steps", 1), width=width,
        height=height, images_per_prompt=_whole(images_per_prompt, "images_per_prompt", 1), device=generator_device,
        dtype=generator_dtype, batch_size=_whole(generator_batch_size, "generator_batch_size", 1))
    models = [*image_folders(model_images), *generator_models(generators, settings)]
    if human is not None:
        human = _human(human, human_format)
    source = judge_source(judge, plans, cache_path(cache, out_dir), backend=backend, revision=revision, device=device,
                          dtype=dtype, batch_size=_whole(batch_size, "batch_size", 1), **dict(judge_kwargs or {}))
    plan = BenchmarkPlan(
        read, models, plans, out_dir, judge=source, chunk_size=_whole(chunk_size, "chunk_size", 1), on_error=on_error,
        human=human, n_resamples=_whole(n_resamples, "n_resamples", 1), stats_seed=_whole(stats_seed, "stats_seed", 0),
        confidence=_fraction(confidence, "confidence"), dpi=_whole(dpi, "dpi", 1),
        ray=RaySettings(_whole(ray_actors, "ray_actors", 1), _amount(ray_gpus_per_actor, "ray_gpus_per_actor"),
                        _amount(ray_cpus_per_actor, "ray_cpus_per_actor")) if ray else None,
        quiet=quiet)
    return run_benchmark(plan, on_image=on_image)


def _human(path: Any, human_format: str) -> tuple[str, str]:
    """(path, format) of the human labels, checked before any work."""
    from ..cli.agreement import PUBLIC_SETS

    formats = ("labels", *PUBLIC_SETS)
    if human_format not in formats:
        raise BenchmarkError(f"--human-format {human_format!r}: one of {', '.join(formats)}")
    file = Path(os.path.expanduser(os.fspath(path)))
    if file.is_dir():
        raise BenchmarkError(f"--human {file} is a folder; give the labels file")
    if not file.is_file():
        raise BenchmarkError(f"--human {file}: no such file")
    return str(file), human_format
