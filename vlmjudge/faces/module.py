"""The base of the suite's `evaluate` modules: score as inputs are added, store scored rows.

`store_scored_rows` writes rows already scored where evaluate writes raw inputs (how each process
of evaluate's multi-process mode scores its own shard); `ScoredRowsModule` routes evaluate's
`compute` to the stored columns; `ScoredModule` (below) adds the template every
metrics/<name>/<name>.py follows.
"""
from __future__ import annotations

import json
from typing import Any, ClassVar, Mapping, Sequence

from ..stats.interval import mean_keys

from .loading import JUDGE_ARGUMENTS, judge_or_load, judge_recipe


def store_scored_rows(module: Any, features: Any, rows: dict[str, list[Any]]) -> None:
    """Write rows a module has already scored (records, not images) to its cache file, as
    `add_batch` writes raw inputs: how a module scores as it adds, so that in multi-process mode
    each process scores its own shard and process 0's `compute()` reads every process's rows.

    `features` is the `datasets.Features` of the stored rows; the module's `_feature_names()`
    must return its keys, so that `compute()` hands `_compute` these columns. Process 0 must
    store at least one row itself (it reads every file with the features it selected).
    """
    names = list(features)
    if sorted(rows) != sorted(names):
        raise ValueError(f"rows have columns {sorted(rows)}, the stored features are {sorted(names)}")
    lengths = {len(values) for values in rows.values()}
    if len(lengths) != 1:
        raise ValueError(f"stored columns differ in length: { {k: len(v) for k, v in rows.items()} }")
    if module.writer is None:
        module.selected_feature_format = features
        module._init_writer()
    elif module.selected_feature_format != features:
        raise ValueError("this module already stores rows of other features")
    module.writer.write_batch(features.encode_batch(rows))


class ScoredRowsModule:
    """Mixin for an `evaluate` module that scores as it adds and stores scored rows (see
    `store_scored_rows`), placed before `evaluate.Metric` in the bases.

    `_feature_names()` names the module's inputs, as evaluate expects: `evaluate.combine`
    routes each module its inputs by these names. Only while `compute_stored` aggregates does
    it name the stored columns instead, because evaluate's `compute` reads back the columns
    `_feature_names()` names. `stored_features()` gives those columns (None: the module
    stores its raw inputs, as a plain evaluate module does).
    """

    _reading_stored = False

    def stored_features(self) -> Any:
        raise NotImplementedError

    def _feature_names(self) -> list[str]:
        stored = self.stored_features() if self._reading_stored else None
        return list(stored) if stored is not None else super()._feature_names()  # type: ignore[misc]

    def compute_stored(self, **compute_kwargs: Any) -> Any:
        """evaluate's `compute` over the stored rows (every process's), with `compute_kwargs`
        passed on to `_compute`."""
        self._reading_stored = True
        try:
            return super().compute(**compute_kwargs)  # type: ignore[misc]
        finally:
            self._reading_stored = False


#: Inputs that hold images (their errors say so).
IMAGE_INPUTS = ("images", "reference_images", "conditioning")


def _is_batch(values: Any) -> bool:
    """A column of values: a sized sequence that is not itself one text, bytes or image."""
    return hasattr(values, "__len__") and not isinstance(values, (str, bytes, Mapping)) and not hasattr(values, "convert")


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") else name


class ScoredModule(ScoredRowsModule):
    """The template of every metrics/<name>/<name>.py: place it before `evaluate.Metric` in the
    bases, set the class attributes, write `_info` and `_compute`.

    Inputs are scored as they are added, by the registered method's own scorer
    (`spec.build(judge, **config).score_batch`), and only the records are stored, so in
    evaluate's multi-process mode each process scores its own shard and process 0's `compute`
    only aggregates. Every module takes the judge arguments of every face (`model`, `backend`,
    `revision`, `device`, `dtype`, `cache`, `judge_kwargs`, or `judge=`, a loaded judge), with
    the one no-model rule: the method's default model. Given to `compute` with inputs, judge
    arguments and method options score only those inputs.

    Class attributes:
        spec: the method's `MethodSpec`.
        columns: input name -> the spec's batch column (required inputs in `required`).
        kept: input name -> (stored column, `datasets` feature) of inputs stored as given.
        options: load-time method options passed to `spec.build` (variant, fields, ...).
        judge_required: False when a method scores without a judge unless given a model.
        ids_with_process: image ids `"<process>:<n>"` even in one process (else `"<n>"`).
        compute_options: the keywords of `compute` that `_compute` takes (return_records, ...).
        load_at_load_time: load the judge in `evaluate.load` (else on the first add).

    Examples:
        A toy method whose score is an image's width, as a complete module:

        >>> import tempfile
        >>> import datasets, evaluate
        >>> from PIL import Image
        >>> from vlmjudge.registry import MethodSpec
        >>> class Width:
        ...     def __init__(self, score):
        ...         self.score, self.valid = score, True
        ...     def to_json(self):
        ...         return {"score": self.score}
        >>> class WidthScorer:
        ...     def score_batch(self, batch):
        ...         return [Width(float(image.width)) for image in batch["image"]]
        >>> spec = MethodSpec(name="width", inputs=("image",), build=lambda judge, **config: WidthScorer(),
        ...                   score_range=(0.0, 1000.0), render=lambda record: {})
        >>> class WidthModule(ScoredModule, evaluate.Metric):
        ...     spec, columns, judge_required = spec, {"images": "image"}, False
        ...     def _info(self):
        ...         return evaluate.MetricInfo(description="widths", citation="", inputs_description="",
        ...                                    features=datasets.Features({"images": datasets.Image()}))
        ...     def _compute(self, record):
        ...         return self.shared_result([r["score"] for r in self.read_records(record)])
        >>> module = WidthModule(cache_dir=tempfile.mkdtemp())
        >>> module.add_batch(images=[Image.new("RGB", (8, 4))])
        >>> module.add(image=Image.new("RGB", (4, 4)))
        >>> module.compute()
        {'width': 6.0, 'width_ci': [4.0, 8.0], 'width_n': 2, 'scores': [8.0, 4.0], 'n_items': 2, 'n_scored': 2}
    """

    spec: ClassVar[Any]
    columns: ClassVar[Mapping[str, str]] = {}
    required: ClassVar[tuple[str, ...]] = ("images",)
    kept: ClassVar[Mapping[str, tuple[str, Any]]] = {}
    options: ClassVar[tuple[str, ...]] = ()
    judge_required: ClassVar[bool] = True
    ids_with_process: ClassVar[bool] = False
    compute_options: ClassVar[tuple[str, ...]] = ()
    load_at_load_time: ClassVar[bool] = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._settings = self._take_settings(kwargs)
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
        self._scorer: Any = None
        self._judge: Any = self._settings.pop("judge", None)
        self._n_added = 0

    # -- the scorer ---------------------------------------------------------------------------
    def _take_settings(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """Pop the judge arguments and method options out of `kwargs`."""
        settings = {name: kwargs.pop(name) for name in (*JUDGE_ARGUMENTS, "judge_kwargs", "judge") if name in kwargs}
        settings.update({name: kwargs.pop(name) for name in self.options if name in kwargs})
        return settings

    def scores_on_add(self) -> bool:
        """Whether this configuration scores as it adds (a judge-free configuration says no)."""
        return True

    def method_config(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """`spec.build`'s keywords from the settings' method options (override to map them)."""
        return {name: settings[name] for name in self.options if name in settings}

    def load_judge(self, settings: Mapping[str, Any]) -> Any:
        """The judge of these settings: `judge=`, or loaded by the faces loader; None for a method
        whose judge is optional when no model is given."""
        if settings.get("judge") is not None:  # `device` may also place other parts (encoders), so only
            # the arguments that load a model conflict with a loaded judge
            return judge_or_load(settings["judge"], where=self.spec.name,
                                 **{k: settings.get(k) for k in ("model", "revision", "judge_kwargs")})
        if settings.get("model") is None and self.spec.default_model is None and not self.judge_required:
            return None
        args = {k: settings[k] for k in (*JUDGE_ARGUMENTS, "judge_kwargs") if settings.get(k) is not None}
        return judge_recipe(self.spec.default_model, where=self.spec.name, **args).load()

    def make_scorer(self, judge: Any, settings: Mapping[str, Any]) -> Any:
        """The method's scorer over `judge` with the settings' method options."""
        return self.spec.build(judge, **self.method_config(settings))

    def scorer_for(self, settings: Mapping[str, Any]) -> Any:
        """A scorer of compute-time settings over the load-time ones: a new judge only when
        the settings name one."""
        merged = {**self._settings, **settings}
        if any(settings.get(k) is not None for k in (*JUDGE_ARGUMENTS, "judge_kwargs", "judge")):
            return self.make_scorer(self.load_judge(merged), merged)
        return self.make_scorer(self.judge, merged)

    def scorer(self) -> Any:
        """The method's scorer of the load-time settings, its judge loaded on first use."""
        if self._scorer is None:
            settings = dict(self._settings)
            self._judge = self.load_judge({**settings, "judge": self._judge})
            self._scorer = self.make_scorer(self._judge, settings)
        return self._scorer

    @property
    def judge(self) -> Any:
        """The judge in use (its `stats` count model calls); None for a judge-free scorer."""
        self.scorer()
        return self._judge

    def _download_and_prepare(self, dl_manager: Any) -> None:
        """Load the judge once, at `evaluate.load` time (unless the module loads it on first use)."""
        if self.scores_on_add() and self.load_at_load_time:
            self.scorer()

    def stored_features(self) -> Any:
        if not self.scores_on_add():
            return None
        import datasets
        return datasets.Features({"record": datasets.Value("string"),
                                  **{column: feature for column, feature in self.kept.values()}})

    # -- inputs -------------------------------------------------------------------------------
    @property
    def input_names(self) -> tuple[str, ...]:
        return (*self.columns, *self.kept, "ids")

    def _inputs(self, given: Mapping[str, Any], who: str) -> dict[str, Any]:
        """The given inputs under their current names, checked: known, lists, equal lengths."""
        inputs = {k: v for k, v in given.items() if not (k in ("predictions", "references") and v is None)}
        stray = [k for k in ("predictions", "references") if k in inputs]
        if stray:
            raise ValueError(f"{self.spec.name} takes {', '.join(n + '=' for n in self.required)} (and "
                             f"{', '.join(n + '=' for n in self.input_names if n not in self.required)}), "
                             "not predictions/references")
        unknown = sorted(set(inputs) - set(self.input_names))
        if unknown:
            raise ValueError(f"{self.spec.name} {who} got unknown inputs {unknown}; it takes {list(self.input_names)}")
        missing = [n for n in self.required if inputs.get(n) is None]
        if missing:
            raise ValueError(f"{who} needs {' and '.join(n + '=[...]' for n in self.required)} "
                             f"({', '.join(missing)} missing)")
        inputs = {k: v for k, v in inputs.items() if v is not None}
        for name, values in inputs.items():
            if not _is_batch(values):
                kind = "images" if name in IMAGE_INPUTS else "values, one per image"
                raise TypeError(f"{name} must be a list of {kind} (wrap a single one in a list)")
        n = len(inputs[self.required[0]])
        for name, values in inputs.items():
            if len(values) != n:
                raise ValueError(f"{len(values)} {name.replace('_', ' ')} for {n} {self.required[0].replace('_', ' ')}")
        if not n:
            raise ValueError("no images to score")
        return {name: list(values) for name, values in inputs.items()}

    def check_kept(self, name: str, values: list[Any]) -> list[Any]:
        """Check (and normalise) the values of a kept input; override to validate."""
        return values

    def prepare_batch(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        """The spec batch just before scoring (override to fill columns, e.g. load-time QA sets)."""
        return batch

    def add_batch(self, **inputs: Any) -> Any:
        """Score a batch now and store its records (and kept inputs)."""
        if not self.scores_on_add():
            return super().add_batch(**inputs)  # type: ignore[misc]
        scorer = inputs.pop("_scorer", None) or self.scorer()
        inputs = self._inputs(inputs, "add_batch")
        n = len(next(iter(inputs.values())))
        kept = {self.kept[name][0]: self.check_kept(name, inputs.get(name, [None] * n)) for name in self.kept}
        features = self.stored_features()
        if self.writer is None:  # in multi-process mode the processes meet here, before any scoring
            self.selected_feature_format = features
            self._init_writer()
        prefix = f"{self.process_id}:" if self.num_process > 1 or self.ids_with_process else ""
        ids = [str(i) for i in inputs.pop("ids", [f"{prefix}{self._n_added + i}" for i in range(n)])]
        batch = {self.columns[name]: values for name, values in inputs.items() if name in self.columns}
        if "id" in (*self.spec.inputs, *self.spec.optional_inputs):
            batch["id"] = ids
        records = scorer.score_batch(self.prepare_batch(batch))
        self._n_added += n
        rows = {"record": [json.dumps(r.to_json(), ensure_ascii=False) for r in records], **kept}
        store_scored_rows(self, features, rows)

    def add(self, **one: Any) -> Any:
        """Score one example now: each input by its singular name (`image=`) or by its feature
        name (`images=`, which `evaluate.combine(...).add` passes), not both."""
        if not self.scores_on_add():
            return super().add(**one)  # type: ignore[misc]
        one = {k: v for k, v in one.items() if not (k in ("prediction", "reference") and v is None)}
        batch = {}
        for name in self.input_names:
            single, plural = one.pop(_singular(name), None), one.pop(name, None) if _singular(name) != name else None
            if single is not None and plural is not None:
                raise ValueError(f"give {_singular(name)}= or {name}=, not both")
            value = single if single is not None else plural
            if value is not None:
                batch[name] = [value]
        batch.update(one)  # anything left over is refused by add_batch, by its name
        return self.add_batch(**batch)

    def compute(self, **kwargs: Any) -> Any:
        """Score any inputs given here (with this call's judge arguments and method options, if
        any), then aggregate every stored record (all processes); other keywords go to `_compute`."""
        if not self.scores_on_add():
            return super().compute(**kwargs)  # type: ignore[misc]
        names = {*self.input_names, "predictions", "references"}
        inputs = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
        settings = self._take_settings(kwargs)
        unknown = sorted(set(kwargs) - set(self.compute_options))
        if unknown:
            raise ValueError(f"unknown compute arguments {unknown}")
        if any(v is not None for v in inputs.values()):
            scorer = self.scorer_for(settings) if settings else None
            self.add_batch(**inputs, _scorer=scorer)
        elif settings:
            raise ValueError(f"judge options {sorted(settings)} at compute apply only to inputs given there; "
                             "pass them at load time to score inputs as they are added")
        if self.writer is None and self.num_process == 1:
            raise ValueError(f"no images to aggregate: pass {' and '.join(n + '=' for n in self.required)} "
                             "or call add/add_batch first")
        return self.compute_stored(**kwargs)

    # -- results ------------------------------------------------------------------------------
    @staticmethod
    def read_records(record: Sequence[str]) -> list[dict[str, Any]]:
        """The stored records as JSON dicts."""
        return [json.loads(r) for r in record]

    def shared_result(self, scores: Sequence[float | None]) -> dict[str, Any]:
        """The keys every module returns: `<method>` (the mean score, None when none was scored)
        with `<method>_ci` and `<method>_n` (`vlmjudge.stats.interval.mean_keys`), `scores` (one
        per item in the order added, None where unscored), `n_items`, `n_scored`."""
        return {**mean_keys(self.spec.name, scores), "scores": list(scores), "n_items": len(scores),
                "n_scored": sum(s is not None for s in scores)}
