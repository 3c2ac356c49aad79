"""What every trained scorer shares: its optional package, its inputs, the scoring loop, its spec.

A scorer only says how to load its authors' model and how to score a chunk of good items; the loop
here turns every bad input (an unreadable image, a missing prompt) and every unusable model output
(NaN, infinity, a value outside the declared range) into a counted failed record, so one bad item
never costs the batch and never becomes a number.
"""
from __future__ import annotations

import contextlib
import importlib
import math
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from vlmjudge.images import ImageInputError, to_pil
from vlmjudge.registry import MethodSpec

from .records import TrainedRecord, mean_score_statistics, render_record


class MissingExtraError(ImportError, ValueError):
    """A scorer's package is not installed or cannot be imported here; the message names the extra.

    Also a ValueError, so a command that turns build errors (OSError, ValueError) into one line and
    status 2 does so for this one too."""


def require(method: str, extra: str | None, module: str) -> Any:
    """The imported `module`, or a one-line `MissingExtraError` naming the extra that installs it.

    Examples:
        >>> require("demo", "iqa", "math").sqrt(4.0)
        2.0
        >>> require("demo", "iqa", "no_such_module_here")
        Traceback (most recent call last):
        ...
        t2ibaselines.trained.base.MissingExtraError: demo needs the 'iqa' extra: pip install 'vlmjudge[iqa]' (no_such_module_here is not installed)
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # installed but broken counts too: the reason goes into the one line
        missing = isinstance(exc, ModuleNotFoundError) and exc.name is not None and (
            module == exc.name or module.startswith(exc.name + "."))
        where = f"the '{extra}' extra" if extra else "vlmjudge's own dependencies"
        install = f"pip install 'vlmjudge[{extra}]'" if extra else "pip install vlmjudge"
        if missing:
            raise MissingExtraError(f"{method} needs {where}: {install} ({module.split('.')[0]} is not installed)") from exc
        raise MissingExtraError(f"{method} needs {where} ({install}), but import {module} fails here: "
                                f"{type(exc).__name__}: {one_line(exc)}") from exc


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


@contextlib.contextmanager
def quiet_stdout() -> Iterator[None]:
    """Keep a package's own prints ("Loading pretrained model ...") off stdout, where a command's
    output goes; they still reach the terminal on stderr."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


def check_loadable(method: str, what: str, model_id: Any, revision: str | None = None) -> None:
    """A one-line `ModelUnavailableError` when a Hub id is neither a folder, cached, nor on the Hub,
    before `from_pretrained` retries the Hub for half a minute and ends in a generic error."""
    from vlmjudge.offline import ModelUnavailableError, unavailable_reason

    reason = unavailable_reason(str(model_id), revision)
    if reason is not None:
        raise ModelUnavailableError(f"{method}: {what} {str(model_id)!r} is {reason}")


def package_version(*distributions: str) -> str:
    """"name version" of the first of `distributions` installed, for the record of what made a score.

    Examples:
        >>> package_version("no-such-distribution", "numpy").split()[0]
        'numpy'
    """
    from importlib.metadata import PackageNotFoundError, version

    for name in distributions:
        try:
            return f"{name} {version(name)}"
        except PackageNotFoundError:
            continue
    return f"{distributions[0]} (version unknown)"


def default_device(device: str | None) -> str:
    """The device asked for, else the GPU when there is one."""
    if device is not None:
        return str(device)
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class Item:
    """One row of a batch, read: its id and converted inputs, or the reason it cannot be scored."""
    id: str
    image: Any = None
    prompt: str | None = None
    reference: Any = None
    error: str | None = None


class ItemFailed(Exception):
    """Raised by a scorer for one item whose input its model refuses (too small for the metric, ...)."""


def _read_prompt(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ItemFailed(f"no prompt (got {value!r})" if not isinstance(value, str) else "empty prompt")
    return value


def _read_image(value: Any, column: str, index: int) -> Any:
    try:
        return to_pil(value, index=index)
    except ImageInputError as exc:
        raise ItemFailed(f"{column}: {one_line(exc)}") from exc


def read_items(batch: Mapping[str, Sequence[Any]], inputs: Sequence[str], n: int) -> list[Item]:
    """The batch's rows as items; each bad input makes its own item a failure, not the batch's.

    Examples:
        >>> from PIL import Image
        >>> items = read_items({"image": [Image.new("RGB", (8, 8)), b"not an image"], "prompt": ["a cat", None]},
        ...                    ("image", "prompt"), 2)
        >>> items[0].error, items[1].id, items[1].error.startswith("image:")
        (None, '1', True)
    """
    ids = [str(i) for i in batch["id"]] if "id" in batch else [str(i) for i in range(n)]
    blank = [row for row, item_id in enumerate(ids) if not item_id.strip()]
    if blank:
        raise ValueError(f"empty ids in the batch, at rows {blank[:5]}")
    repeated = sorted(i for i, count in Counter(ids).items() if count > 1)
    if repeated:
        raise ValueError(f"duplicate ids in the batch: {repeated[:5]}")
    items = []
    for index, item_id in enumerate(ids):
        item = Item(id=item_id)
        try:
            item.image = _read_image(batch["image"][index], "image", index)
            if "prompt" in inputs:
                item.prompt = _read_prompt(batch["prompt"][index])
            if "reference" in inputs:
                item.reference = _read_image(batch["reference"][index], "reference", index)
        except ItemFailed as failure:
            item.error = str(failure)
        items.append(item)
    return items


class TrainedScorer:
    """The scoring loop over a scorer's `score_chunk`: chunks of good items, checked outputs.

    Subclasses set `spec` (their MethodSpec), load their model in `__init__`, fill `made_by`, and
    give one float (or an `ItemFailed`) per item from `score_chunk`.
    """

    spec: MethodSpec
    batch_size: int = 16
    made_by: dict[str, Any]

    def score_chunk(self, items: list[Item]) -> list[float | ItemFailed]:
        raise NotImplementedError

    def details(self, item: Item) -> dict[str, Any]:
        """Fields a scorer adds to each record (after `scorer`); none by default."""
        return {}

    def score_batch(self, batch: Mapping[str, Sequence[Any]]) -> list[TrainedRecord]:
        n = self.spec.check_batch(batch)
        items = read_items(batch, self.spec.inputs, n)
        good = [item for item in items if item.error is None]
        values: dict[str, float | ItemFailed] = {}
        for start in range(0, len(good), self.batch_size):
            chunk = good[start:start + self.batch_size]
            outputs = self.score_chunk(chunk)
            if len(outputs) != len(chunk):
                raise RuntimeError(f"{self.spec.name}: {len(outputs)} scores for {len(chunk)} items")
            values.update({item.id: value for item, value in zip(chunk, outputs)})
        return [self._record(item, values.get(item.id)) for item in items]

    def _record(self, item: Item, value: float | ItemFailed | None) -> TrainedRecord:
        record = TrainedRecord(id=item.id, score=None, scorer=self.spec.name, details=self.details(item),
                               made_by=self.made_by)
        if item.error is not None:
            record.error = item.error
        elif isinstance(value, ItemFailed):
            record.error = str(value)
        elif value is None or not math.isfinite(value):
            record.error = f"the model gave {value} instead of a number"
        else:
            low, high = self.spec.score_range
            if low <= value <= high:
                record.score = float(value)
            else:
                record.raw_score = float(value)
                record.error = (f"the model gave {value:.6g}, outside the range {self.spec.name} declares "
                                f"({low:g} to {high:g}); it is kept as raw_score, not as a score")
        return record


def trained_spec(*, name: str, inputs: tuple[str, ...], build: Callable[..., Any], score_range: tuple[float, float],
                 description: str, label: str, higher_is_better: bool, extra: str | None,
                 requires: tuple[str, ...], scorer: type) -> MethodSpec:
    """A trained scorer's MethodSpec: no judge model, an optional `id` column, one mean statistic, the
    extra and modules it needs (what `vlmjudge info` lists as installed or not), and as its `config`
    the scorer's keyword settings with their defaults (what `--method-option` may set)."""
    return MethodSpec(name=name, inputs=inputs, optional_inputs=("id",), build=build, render=render_record,
                      score_range=score_range, default_model=None, description=description,
                      statistics=mean_score_statistics(label, higher_is_better), extra=extra, requires=requires,
                      config=scorer_settings(scorer))


def scorer_settings(scorer: type) -> dict[str, Any]:
    """The keyword-only settings of a scorer's constructor with their defaults.

    Examples:
        >>> class Toy:
        ...     def __init__(self, judge=None, *, model="m", device=None): ...
        >>> scorer_settings(Toy)
        {'model': 'm', 'device': None}
    """
    import inspect

    parameters = inspect.signature(scorer.__init__).parameters.values()
    return {p.name: p.default for p in parameters if p.kind is p.KEYWORD_ONLY}
