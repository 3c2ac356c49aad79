"""Scripted backends for the bad-input CLI tests (`--backend cli_bad_inputs_judge:NAME`, any
--model): one that answers every request "Yes", one whose every answer fails (a backend that is
down), and one interrupted by Ctrl-C at the first request about a 40 px image. Each records that
it was loaded, so a test can tell that a run stopped before the model loaded."""
from __future__ import annotations

import os
from typing import Any

from vlmjudge.backends.replay import ReplayJudge
from vlmjudge.options import OptionProbs

#: A file each load appends a line to (for runs in another process).
LOAD_LOG_ENV = "CLI_BAD_INPUTS_LOAD_LOG"


class ConstantJudge(ReplayJudge):
    """Answers "Yes" to everything: every method reads a result from it (a score or a counted parse failure)."""

    loads = 0
    answer: Any = "Yes"

    def __init__(self, model: Any = None, **kwargs: Any) -> None:
        ConstantJudge.loads += 1
        log = os.environ.get(LOAD_LOG_ENV)
        if log:
            with open(log, "a", encoding="utf-8") as handle:
                handle.write(f"{type(self).__name__}\n")
        super().__init__({}, model_id=f"scripted:{model}", **kwargs)

    def _recorded(self, request) -> Any:
        return self.answer

    def _probs(self, request, options, normalize: bool = True) -> dict[str, float]:
        """All the probability on the first option (Yes, Major, ...), measured (mass 1, so VQAScore
        reads it as a probability); {} when the answer failed."""
        if self._recorded(request) is None:
            return {}
        return OptionProbs({option: float(k == 0) for k, option in enumerate(options)}, mass=1.0)


class DownJudge(ConstantJudge):
    """Every answer fails (finish reason "error"), as when the server behind a backend is down."""

    answer = None


class InterruptedJudge(ConstantJudge):
    """Ctrl-C arrives while the judge works on a 40 x 40 image."""

    def _recorded(self, request) -> Any:
        if any(getattr(image, "size", None) == (40, 40) for image in request.images):
            raise KeyboardInterrupt
        return self.answer


class FailsOnSmallJudge(ConstantJudge):
    """Answers "Yes", except that every request about a 40 x 40 image fails (no answer)."""

    def _recorded(self, request) -> Any:
        if any(getattr(image, "size", None) == (40, 40) for image in request.images):
            return None
        return self.answer
