"""The base of the suite's `evaluate` modules: score as inputs are added, store scored rows.

`ScoredRowsModule` routes evaluate's `compute` to the stored columns; `ScoredModule` (below)
adds the template every metrics/<name>/<name>.py follows.
"""
from __future__ import annotations

from typing import Any


class ScoredRowsModule:
    """Mixin for an `evaluate` module that scores as it adds and stores scored rows (see
    `vlmjudge.distributed.store_scored_rows`), placed before `evaluate.Metric` in the bases.

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
