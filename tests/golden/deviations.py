"""The one table of deliberate differences from the releases, each a rule on a case's input.

A row names the corpus, a predicate over the case's `input` and the reason. The same reason appears in
the metric card's "Differences from the reference implementation" section. Rules look only at inputs,
never at ids or counts, so they hold on any corpus of the same kind.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Deviation:
    corpus: str                      # "<method>/<function>", as the corpus file is named
    applies: Callable[[dict], bool]  # a rule on the case's input
    reason: str                      # why the project differs; also in the metric card


# --- terravis -------------------------------------------------------------------------------------
TERRAVIS: list[Deviation] = []

# --- viescore2 ------------------------------------------------------------------------------------
VIESCORE2: list[Deviation] = []

# --- fager ----------------------------------------------------------------------------------------
FAGER: list[Deviation] = []

# --- regeneration ---------------------------------------------------------------------------------
REGENERATION: list[Deviation] = []

DEVIATIONS: list[Deviation] = TERRAVIS + VIESCORE2 + FAGER + REGENERATION


def deviation_for(corpus: str, case_input: dict) -> Deviation | None:
    """The first table row for this corpus whose rule holds on the input, or None."""
    for row in DEVIATIONS:
        if row.corpus == corpus and row.applies(case_input):
            return row
    return None
