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
# None: every TerraVis corpus replays exactly (metrics/terravis/README.md lists what differs beyond them).
TERRAVIS: list[Deviation] = []

# --- viescore2 ------------------------------------------------------------------------------------
def _unreadable_annotation(inp: dict) -> bool:
    """A ground-truth annotation that cannot be read: a missing file, an unknown kind, polygon points that
    are not [x, y] pairs, boxes that are not [x, y, w, h], a path that is not a string, or an array of
    values outside [0, 1]."""
    kind, data = inp.get("type"), inp.get("data")
    if inp.get("data_form") == "missing_file" or kind not in ("mask", "heatmap", "bbox", "polygon", "svg"):
        return True
    if inp.get("data_form") == "array":
        import numpy as np
        from .replay import decode_array
        values = decode_array(inp["array"]).astype(float)
        return bool(np.isnan(values).any() or values.min(initial=0) < 0 or values.max(initial=0) > 1)
    if not data:
        return False
    if kind == "polygon":
        return not isinstance(data, list) or not all(isinstance(p, list) and len(p) == 2 for p in data)
    if kind == "bbox":
        boxes = data if isinstance(data, list) and isinstance(data[0], list) else [data]
        return not all(isinstance(b, list) and len(b) == 4 for b in boxes)
    return kind == "svg" and not isinstance(data, str)


def _unsupervised_target(inp: dict) -> bool:
    """A GRPO target text with neither a readable grid nor a score (an overall score, or PQ and SC)."""
    from viescore2.parsing import parse_output
    from viescore2.scoring import supervised_keys
    parsed = parse_output(inp["target"])
    return parsed.union is None and not supervised_keys(parsed.scores)


def _marks_outside_sections(inp: dict) -> bool:
    """A GRPO target whose grid carries ``!`` marks outside the artifact/misalign sections (a single grid)."""
    from viescore2.parsing import parse_output
    parsed = parse_output(inp["target"])
    in_sections = set().union(*(g.marks for g in parsed.sections.values()))
    return parsed.union is not None and bool(parsed.union.marks - in_sections)


VIESCORE2: list[Deviation] = [
    Deviation("viescore2/rewards", _unsupervised_target,
              "a target that supervises nothing (no readable grid, no overall score, no PQ+SC pair) raises "
              "ValueError as corrupt data, where the release trains on it with every term 0 but the format"),
    Deviation("viescore2/rewards", _marks_outside_sections,
              "coverage marks written in a single grid (no category sections) weight the Dice reward; the "
              "release weights only marks inside artifact/misalign sections"),
    Deviation("viescore2/gt_grid", _unreadable_annotation,
              "an annotation that cannot be read (missing file, unknown kind, malformed points or boxes, "
              "values outside [0, 1]) raises instead of becoming a clean ground-truth grid"),
]

# --- fager ----------------------------------------------------------------------------------------
def _fager_threshold_on_a_reachable_score(case_input: dict) -> bool:
    """A threshold equals 100 k / (2 n) exactly, n the level-1 or the whole QA set's question count:
    a score can sit exactly on it, where the release's float `(sum / n) * 100` may land either side."""
    from fractions import Fraction
    levels = case_input.get("levels", [])
    counts = {levels.count("level_1"), len(levels)} - {0}
    thresholds = (case_input.get("regenerate_threshold"), case_input.get("keep_threshold"))
    return any(isinstance(t, (int, float)) and (Fraction(t) * 2 * n / 100).denominator == 1
               for t in thresholds for n in counts)


FAGER: list[Deviation] = [
    Deviation("fager/score_image", lambda inp: any(a is None for a in inp.get("answers", [])),
              "a question the model's reply leaves out is a counted parse failure, left out of every mean; "
              "the release pads the reply with 'unknown' (0.5)"),
    Deviation("fager/score_image", lambda inp: "level_1" not in inp.get("levels", []),
              "a QA set without a level-1 question has no level-1 score and is decided on its overall score; "
              "the release gives it level-1 score 0 and always regenerates"),
    Deviation("fager/score_image", _fager_threshold_on_a_reachable_score,
              "scores are exact fractions (50 (2 yes + unknown) / n), so a score equal to a threshold "
              "meets it; the release's float (sum / n) * 100 can land just past it"),
    Deviation("fager/score_image",
              lambda inp: any(level not in ("level_1", "level_2", "level_3") for level in inp.get("levels", [])),
              "a QA row whose level is not level_1, level_2 or level_3 makes the QA set invalid (an error); "
              "the release silently never asks it"),
    Deviation("fager/score_image",
              lambda inp: not (0 <= inp.get("regenerate_threshold", 20.0) <= inp.get("keep_threshold", 95.0) <= 100),
              "thresholds outside 0..100, or a regenerate threshold above the keep threshold, are refused "
              "(GatingPolicy raises ValueError); the release applies them as given"),
    Deviation("fager/ab_test",
              lambda inp: any(len({k for k, _ in inp.get(side, [])}) != len(inp.get(side, []))
                              for side in ("real", "fake")),
              "a key repeated on one side is an error; the release's inner join pairs every copy"),
    Deviation("fager/ab_test",
              lambda inp: any(s in ("Infinity", "-Infinity") for side in ("real", "fake")
                              for _, s in inp.get(side, [])),
              "an infinite score is an error, not a pair; the release pairs it"),
]

# --- regeneration ---------------------------------------------------------------------------------
REGENERATION: list[Deviation] = []

DEVIATIONS: list[Deviation] = TERRAVIS + VIESCORE2 + FAGER + REGENERATION


def deviation_for(corpus: str, case_input: dict) -> Deviation | None:
    """The first table row for this corpus whose rule holds on the input, or None."""
    for row in DEVIATIONS:
        if row.corpus == corpus and row.applies(case_input):
            return row
    return None
