"""Score a `datasets.Dataset` with `Dataset.map(batched=True)`, for any registered method.

    fn = judge_map(["terravis", "fager"], judge={"model": "Qwen/Qwen3-VL-8B-Instruct",
                                                 "cache": "responses.sqlite"})
    ds = ds.map(fn, batched=True, batch_size=16, features=fn.features(ds.features))

Each method adds `<label>_score` (its raw score, None when unscorable), `<label>_normalized`
([0, 1], None when unscorable) and `<label>_record` (the record as JSON text). The function
holds only settings, so `num_proc=` works (each process builds its own judge on first use;
meant for remote backends, where the workers only send requests); with a shared `cache=`
file, mapping again makes no model calls. `num_proc` forks its workers: a fork keeps the
parent's OpenMP pool but not its threads, so a torch op in a worker of a parent that ran one
would wait forever; in a forked worker the function runs torch on one thread instead.
"""
from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from PIL import Image

from vlmjudge.integrations.panel import JudgePanel

#: True in a process forked from one that had imported this module (`Dataset.map(num_proc=...)`).
_forked = False


def _note_fork() -> None:
    """Remember, in the child, that this process is a fork (it has none of its parent's threads)."""
    global _forked
    _forked = True


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere workers are spawned, fresh processes
    os.register_at_fork(after_in_child=_note_fork)


def single_threaded_after_fork() -> None:
    """In a forked worker whose parent loaded torch, run torch on one thread: the OpenMP pool it
    inherited waits for threads that stayed in the parent, so a parallel op would never return."""
    torch = sys.modules.get("torch") if _forked else None
    if torch is not None and torch.get_num_threads() != 1:
        torch.set_num_threads(1)


class JudgeMap:
    """A picklable batched map function adding score, [0, 1] score and JSON record columns per method."""

    def __init__(self, methods: Any, judge: Any = None, *, image_column: str = "image",
                 prompt_column: str = "prompt", column_names: Mapping[str, str] | None = None,
                 prefix: str = "") -> None:
        self.panel = JudgePanel(methods, judge, column_names)
        self.image_column = image_column
        self.prompt_column = prompt_column
        self.prefix = prefix

    def output_columns(self) -> dict[str, str]:
        """New column name -> its kind ("score", "normalized" or "record"), in output order."""
        out = {}
        for label in self.panel.labels:
            for kind in ("score", "normalized", "record"):
                out[f"{self.prefix}{label}_{kind}"] = kind
        return out

    def features(self, features: Any = None) -> Any:
        """The dataset's features plus the new columns, typed, for `map(features=...)`: without it an
        unscorable first batch (all None) would fix a score column's type as null."""
        import datasets

        out = datasets.Features(dict(features or {}))
        for name, kind in self.output_columns().items():
            out[name] = datasets.Value("string" if kind == "record" else "float64")
        return out

    def __call__(self, batch: Mapping[str, Sequence[Any]], indices: Sequence[int] | None = None) -> dict[str, list]:
        """The new columns of one batch (see the module docstring)."""
        single_threaded_after_fork()
        if self.image_column not in batch:
            raise ValueError(f"the batch has no image column {self.image_column!r} (has {sorted(batch)}); "
                             "set image_column=")
        images = batch[self.image_column]
        if isinstance(images, (str, bytes, Mapping, Image.Image)):
            raise TypeError("judge_map is a batched map function: call Dataset.map(fn, batched=True)")
        prompts = batch.get(self.prompt_column)
        needs_prompt = [label for label in self.panel.labels if "prompt" in self.panel.spec(label).inputs]
        if prompts is None and needs_prompt:
            raise ValueError(f"{needs_prompt} need prompts, but the batch has no column {self.prompt_column!r} "
                             f"(has {sorted(batch)}); set prompt_column=")
        columns = {k: v for k, v in batch.items() if k not in (self.image_column, self.prompt_column)}
        id_source = self.panel.column_names.get("id", "id")
        if indices is not None and id_source not in columns:
            columns[id_source] = [str(i) for i in indices]
        records = self.panel.score(images, prompts, **columns)
        out: dict[str, list] = {}
        for label, recs in records.items():
            out[f"{self.prefix}{label}_score"] = [None if r.score is None else float(r.score) for r in recs]
            out[f"{self.prefix}{label}_normalized"] = self.panel.unit_scores(label, recs)
            out[f"{self.prefix}{label}_record"] = [json.dumps(r.to_json(), ensure_ascii=False) for r in recs]
        return out

    def __repr__(self) -> str:
        return f"JudgeMap({self.panel.labels}, image_column={self.image_column!r})"


def judge_map(methods: Any, judge: Any = None, **options: Any) -> JudgeMap:
    """A batched `Dataset.map` function for `methods` (names, `Method`s, or name -> config);
    `judge` is a model id, a dict of `load_judge` arguments, a built Judge, or None. Options:
    image_column, prompt_column, column_names (method input -> dataset column), prefix."""
    return JudgeMap(methods, judge, **options)


def add_judge_columns(dataset: Any, methods: Any, judge: Any = None, *, batch_size: int = 16,
                      with_indices: bool = False, map_options: Mapping[str, Any] | None = None,
                      **options: Any) -> Any:
    """`dataset.map` with a `judge_map` function, batched and with the output features set."""
    fn = JudgeMap(methods, judge, **options)
    return dataset.map(fn, batched=True, batch_size=batch_size, with_indices=with_indices,
                       features=fn.features(dataset.features), **dict(map_options or {}))
