"""The one judge interface every method talks to, and `load_judge` to get one.

A backend implements two batched primitives, `_generate` and `_choice_probs`, on a
chunk of requests. The shared `Judge` base does what every backend needs identically:
input checks, the response cache (look up first, store each finished chunk at once so
a killed run resumes), chunking with a progress bar, call counting and the manifest.
Identical requests within one call (same content hash) are computed once and their
answer is fanned back out in order (`stats.deduplicated` counts the copies). A cached
answer is served only after `answer_problem` accepts it; one it refuses is asked again.
"""
from __future__ import annotations

import importlib
import logging
import os
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

from .backends import BACKENDS
from .cache import ResponseCache, answer_problem, cache_key
from .digests import digests_held
from .options import OptionProbs, as_option_probs
from .requests import Answer, Request

log = logging.getLogger(__name__)

#: Show a progress bar when a call has more requests than this (and progress is not off).
PROGRESS_THRESHOLD = 64


@dataclass
class JudgeStats:
    """What a judge has done: requests that reached the model, batches, images, cache hits.

    `cache_hits` counts every answer served by the response cache; it is the sum of
    `resumed_from_cache` (answers stored before this judge was made: an earlier or killed run)
    and `reused_within_run` (answers this judge itself stored earlier, e.g. a later stage
    asking a question an earlier stage asked).

    Examples:
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> from vlmjudge.requests import Request
        >>> judge = ReplayJudge({"sky": "No"}, key_fields=["id"])
        >>> _ = judge.generate([Request(text="Is the sky green?", meta={"id": "sky"})] * 2)
        >>> judge.stats.model_calls, judge.stats.deduplicated, judge.stats.as_dict()["cache_hits"]
        (1, 1, 0)
    """

    model_calls: int = 0
    forward_batches: int = 0
    images_encoded: int = 0
    prefill_tokens: int = 0
    generated_tokens: int = 0
    cache_hits: int = 0
    #: cache hits on answers stored before this judge existed (resumed work)
    resumed_from_cache: int = 0
    #: cache hits on answers this judge stored itself, earlier in its own run
    reused_within_run: int = 0
    #: requests answered by an identical request (same content hash) of the same call
    deduplicated: int = 0
    #: prompt prefixes served from the cross-call prefix KV cache (in-process backend), the
    #: prefill tokens those hits skipped, and the entries it dropped to stay within its budget
    prefix_cache_hits: int = 0
    prefix_cache_tokens: int = 0
    prefix_cache_evictions: int = 0
    #: cached answers refused by `answer_problem` (wrong shape, NaN, out of range): asked again and
    #: overwritten, never served
    cache_invalid: int = 0
    #: option probabilities the backend itself gave that fail the same check (NaN from a broken
    #: model): served as a failed request (`{}`) and not stored
    invalid_answers: int = 0
    #: fresh option probabilities with an option the backend could not see (a server's top-k
    #: without it): bounded, never 0 (`vlmjudge.options.OptionProbs.truncated`)
    truncated_options: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


class JudgeError(RuntimeError):
    """A judge could not answer (a missing replay answer, a broken backend).

    Examples:
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> from vlmjudge.requests import Request
        >>> try:
        ...     ReplayJudge({}, key_fields=["id"]).generate([Request(text="?", meta={"id": "x"})])
        ... except JudgeError as error:
        ...     print(error)
        no recorded answer for key 'x' (meta={'id': 'x'})
    """


class Judge(ABC):
    """Batched `generate` and `choice_probs` over many requests, cached and counted.

    A backend's judge takes these keywords beside its own (`load_judge` passes them on).

    Args:
        model_id: the model's name; with the revision and dtype, part of every cache key.
        revision: the checkpoint's revision.
        dtype: the model's dtype ("bfloat16", "float16", "float32"); None: the backend's default.
        device: where the model runs ("cuda", "cpu", ...); None: the backend's default.
        batch_size: requests per backend call.
        cache: the response cache: a file path, a `ResponseCache`, or None for no cache.
        progress: show a progress bar: True, False, or None for calls of more than
            `PROGRESS_THRESHOLD` requests.

    Examples:
        Every backend shares the cache: a second judge over the same cache file answers from it
        without a model call (its own recorded answers are empty here):

        >>> import os, tempfile
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> from vlmjudge.requests import Request
        >>> cache = os.path.join(tempfile.mkdtemp(), "answers.sqlite")
        >>> ask = [Request(text="Is the sky green?", meta={"id": "sky"})]
        >>> ReplayJudge({"sky": "No"}, key_fields=["id"], cache=cache).generate(ask)[0].text
        'No'
        >>> rerun = ReplayJudge({}, key_fields=["id"], cache=cache)
        >>> rerun.generate(ask)[0].text, rerun.stats.model_calls, rerun.stats.resumed_from_cache
        ('No', 0, 1)
    """

    backend: str = "abstract"
    #: Called with the number of requests after each batch the model answered (answers from the
    #: cache are not batches): what moves a command's progress bar within a chunk of items whose
    #: records all come at the chunk's end. None: nobody listens.
    on_batch: Callable[[int], None] | None = None

    def __init__(self, *, model_id: str = "", revision: str | None = None, dtype: str | None = None,
                 device: str | None = None, batch_size: int = 8,
                 cache: str | os.PathLike | ResponseCache | None = None, progress: bool | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self._keep_settings(model_id=model_id, revision=revision, dtype=dtype, device=device, batch_size=batch_size,
                            progress=progress)
        self.cache = cache if isinstance(cache, ResponseCache) or cache is None else ResponseCache(cache)
        self.stats = JudgeStats()
        #: cache keys this judge stored: a later hit on one is reuse within the run, not resumption
        self._stored_keys: set[str] = set()

    def _keep_settings(self, **settings: Any) -> None:
        """Keep constructor arguments, checked by the caller, as attributes of the same names: one
        call per constructor instead of a line per setting, in every backend alike."""
        for name, value in settings.items():
            setattr(self, name, value)

    # -- what a backend implements -------------------------------------------------
    @abstractmethod
    def _generate(self, requests: list[Request]) -> list[Answer]:
        """Answers for one chunk of requests, in order."""

    @abstractmethod
    def _choice_probs(self, requests: list[Request], options: list[str]) -> list[dict[str, float]]:
        """Option probabilities as `vlmjudge.options` defines them, normalised over the options, in
        order (an `OptionProbs` carries the mass; a plain dict none); `{}` for a failed request."""

    def _choice_probs_raw(self, requests: list[Request], options: list[str]) -> list[dict[str, float]]:
        """The options' probabilities over the whole vocabulary (not normalised over them), in
        order; `{}` for a request the backend failed on. Backends that see no token distribution
        do not override this."""
        raise NotImplementedError(f"the {self.backend} backend gives no unnormalised option probabilities")

    def validate_options(self, options: Sequence[str]) -> None:
        """Raise unless every option is a single token; backends with a tokenizer check it."""

    def dedupe_key(self, request: Request) -> Any:
        """What makes two requests of one call the same question (computed once); None keeps
        a request apart. By default its content hash."""
        return request.content_hash()

    # -- the public, shared part -----------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """What makes this judge's answers this judge's: part of every cache key."""
        return {"backend": self.backend, "model": self.model_id, "revision": self.revision, "dtype": self.dtype}

    def manifest(self) -> dict[str, Any]:
        """What produced a result, recorded with it."""
        from . import __version__
        return {**self.identity(), "device": self.device, "vlmjudge": __version__}

    def generate(self, requests: Sequence[Request], *, progress: bool | None = None) -> list[Answer]:
        """Answers for many requests, in order; greedy unless a request says otherwise."""
        requests = _checked(requests)
        return self._cached_run("generate", requests, None, self._generate, progress,
                                encode=lambda a: a.to_json(), decode=Answer.from_json,
                                storable=lambda a: a.ok)

    def choice_probs(self, requests: Sequence[Request], options: Sequence[str], *, normalize: bool = True,
                     progress: bool | None = None) -> list[OptionProbs]:
        """P(option | request) as `vlmjudge.options` defines it, normalised over the options, each
        result an `OptionProbs` (a dict, with the options' total `mass` and any `bounds`).

        `normalize=False` gives each option its probability over the whole vocabulary instead
        (the values then sum to at most 1): what VQAScore reads as P("Yes"). Both are cached apart.
        """
        options = list(options)
        if len(options) < 2 or len(set(options)) != len(options):
            raise ValueError(f"choice_probs needs at least two distinct options, got {options}")
        self.validate_options(options)
        requests = _checked(requests)
        backend = self._choice_probs if normalize else self._choice_probs_raw

        def compute(chunk: list[Request]) -> list[OptionProbs]:
            out = [as_option_probs(p) for p in backend(chunk, options)]
            self.stats.truncated_options += sum(p.truncated for p in out)
            return out
        return self._cached_run("choice_probs" if normalize else "choice_probs_raw", requests, options,
                                compute, progress, encode=lambda p: as_option_probs(p).to_json(),
                                decode=OptionProbs.from_json, storable=bool)

    def _cached_run(self, op: str, requests: list[Request], options: list[str] | None,
                    compute: Callable[[list[Request]], list], progress: bool | None,
                    encode: Callable, decode: Callable, storable: Callable) -> list:
        """Cache lookups, in-call deduplication, then `compute` chunk by chunk; every image of
        the call is hashed once (`digests_held`), however many requests show it."""
        with digests_held():
            return self._cached_run_held(op, requests, options, compute, progress, encode, decode, storable)

    def _cached_run_held(self, op: str, requests: list[Request], options: list[str] | None,
                         compute: Callable[[list[Request]], list], progress: bool | None,
                         encode: Callable, decode: Callable, storable: Callable) -> list:
        results: list = [None] * len(requests)
        keys: list[str | None] = [None] * len(requests)
        todo = list(range(len(requests)))
        stored_keys = self.__dict__.setdefault("_stored_keys", set())  # a subclass may skip __init__
        if self.cache is not None:
            ident = self.identity()
            keys = [cache_key(ident, op, r.content_hash(), options) for r in requests]
            found = self.cache.get_many([k for k in keys if k is not None])
            todo, refused = [], {}
            for i, k in enumerate(keys):
                problem = answer_problem(op, found[k], options) if k in found else None
                if problem is not None:
                    refused[k] = problem
                if k in found and problem is None:
                    results[i] = decode(found[k])
                    self.stats.cache_hits += 1
                    if k in stored_keys:
                        self.stats.reused_within_run += 1
                    else:
                        self.stats.resumed_from_cache += 1
                else:
                    todo.append(i)
            if refused:
                self.stats.cache_invalid += len(refused)
                log.warning("%d cached %s answer(s) failed their check and are asked again (first: %s)",
                            len(refused), op, next(iter(refused.values())))
        todo, copies = _unique(requests, todo, self.dedupe_key)
        self.stats.deduplicated += sum(len(c) for c in copies.values())
        chunks = [todo[s:s + self.batch_size] for s in range(0, len(todo), self.batch_size)]
        show = progress if progress is not None else self.progress
        if show is None:
            show = len(todo) > PROGRESS_THRESHOLD
        bar = _progress_bar(len(todo), op, show)
        try:
            for chunk in chunks:
                outputs = compute([requests[i] for i in chunk])
                if len(outputs) != len(chunk):
                    raise JudgeError(f"{self.backend} returned {len(outputs)} results for {len(chunk)} requests")
                self.stats.model_calls += len(chunk)
                outputs = [self._checked_output(op, out, options, encode, storable) for out in outputs]
                for i, out in zip(chunk, outputs):
                    results[i] = out
                    for j in copies.get(i, ()):
                        results[j] = decode(encode(out))  # its own copy: callers may change answers
                if self.cache is not None:
                    encoded = [(keys[i], encode(out)) for i, out in zip(chunk, outputs) if storable(out)]
                    stored = [(k, v) for k, v in encoded if answer_problem(op, v, options) is None]
                    if len(stored) < len(encoded):  # served as given, but a rerun would refuse them
                        log.warning("%d %s answer(s) of the %s backend fail the cache's check and are not stored",
                                    len(encoded) - len(stored), op, self.backend)
                    self.cache.put_many(stored)
                    stored_keys.update(k for k, _ in stored)
                if bar is not None:
                    bar.update(len(chunk))
                if self.on_batch is not None:
                    self.on_batch(len(chunk))
        finally:
            if bar is not None:
                bar.close()
        return results

    def _checked_output(self, op: str, out: Any, options: list[str] | None, encode: Callable,
                        storable: Callable) -> Any:
        """A fresh answer through the cache's check: option probabilities that fail it (NaN from a
        broken model) become a failed request, `{}`, so no record carries them; a text answer
        is typed by `Answer`, so it passes as it is."""
        if op == "generate" or not storable(out):
            return out
        problem = answer_problem(op, encode(out), options)
        if problem is None:
            return out
        self.stats.invalid_answers += 1
        log.warning("the %s backend gave %s answer %r (%s); counted as a failed request", self.backend, op,
                    out, problem)
        return OptionProbs()


def _unique(requests: list[Request], todo: list[int],
            key_of: Callable[[Request], Any]) -> tuple[list[int], dict[int, list[int]]]:
    """The first of each group of identical requests (same `key_of`) among `todo`, and the
    later ones each stands for. Unseeded sampled requests stay apart (asking twice is
    asking for two samples)."""
    first: dict[Any, int] = {}
    kept: list[int] = []
    copies: dict[int, list[int]] = {}
    for i in todo:
        r = requests[i]
        if r.decoding.temperature > 0 and r.decoding.seed is None:
            kept.append(i)
            continue
        h = key_of(r)
        if h is None:
            kept.append(i)
        elif h in first:
            copies.setdefault(first[h], []).append(i)
        else:
            first[h] = i
            kept.append(i)
    return kept, copies


def _checked(requests: Sequence[Request]) -> list[Request]:
    requests = list(requests)
    for i, r in enumerate(requests):
        if not isinstance(r, Request):
            raise TypeError(f"request {i} is a {type(r).__name__}, not a vlmjudge Request")
    return requests


def _progress_bar(total: int, op: str, show: bool):
    if not show or total == 0:
        return None
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=f"judge {op}", unit="req")


def load_judge(model: Any = None, backend: str = "transformers", **kwargs: Any) -> Judge:
    """A judge for `model` (a Hub id, a local dir, a built model, or replay answers).

    Args:
        model: a Hub id or local checkpoint folder, a server's model name (`backend="openai"`),
            or recorded answers (`backend="replay"`).
        backend: a name in `vlmjudge.backends.BACKENDS`: "transformers" (in-process, the
            default), "vllm" (in-process vLLM), "openai" (any OpenAI-compatible server) or "replay"
            (recorded answers); "module:Class" loads a third-party backend.
        kwargs: the backend's options: `Judge`'s (revision, dtype, device, batch_size, cache,
            progress) and its own (`TransformersJudge`, `OpenAIJudge`, `ReplayJudge`).

    Examples:
        >>> from vlmjudge.requests import Request
        >>> judge = load_judge({"q": "Yes"}, backend="replay", key_fields=["id"])
        >>> judge.backend, judge.choice_probs([Request(text="?", meta={"id": "q"})], ["Yes", "No"])
        ('replay', [{'Yes': 1.0, 'No': 0.0}])
        >>> load_judge("m", backend="tea-leaves")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: unknown backend 'tea-leaves'; choose from [...] or 'module:Class'
    """
    target = BACKENDS.get(backend, backend)
    if ":" not in target:
        raise ValueError(f"unknown backend {backend!r}; choose from {sorted(BACKENDS)} or 'module:Class'")
    module_name, cls_name = target.split(":", 1)
    cls = getattr(importlib.import_module(module_name), cls_name)
    return cls(model, **kwargs)
