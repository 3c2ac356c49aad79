"""The one table of deliberate differences from the releases, each a rule on a case's input.

A row names the corpus, a predicate over the case's `input` and the reason. The same reason appears in
the metric card's "Differences from the reference implementation" section. Rules look only at inputs,
never at ids or counts, so they hold on any corpus of the same kind. A refusal row (`refuses=True`)
marks an input outside the documented domain (`lam <= 0`, `alpha` outside [0, 1], ...): there the
library must raise its documented ValueError where the release computed a number.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Deviation:
    corpus: str                      # "<method>/<function>", as the corpus file is named
    applies: Callable[[dict], bool]  # a rule on the case's input
    reason: str                      # why the project differs; also in the metric card
    refuses: bool = False            # the input is out of domain: the expected outcome is the library's error


def _finite(value) -> bool:
    """A real number (not a bool) that is finite: what every numeric parameter below must be first."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _outside(value, low: float, high: float, *, low_open: bool = False) -> bool:
    """True unless `value` is a finite number in [low, high] ((low, high] with `low_open`)."""
    return not _finite(value) or not (low < value if low_open else low <= value) or value > high


def _not_a_count(value) -> bool:
    return isinstance(value, bool) or not isinstance(value, int) or value < 0


# --- terravis -------------------------------------------------------------------------------------
def _terravis_weights_outside(inp: dict) -> bool:
    """`lambda` not a finite number > 0, or `alpha` outside [0, 1] (`scoring.check_weights`); absent: the
    defaults 1.0 and 0.5."""
    lam, alpha = inp.get("lambda", 1.0), inp.get("alpha", 0.5)
    return _outside(lam, 0.0, math.inf, low_open=True) or _outside(alpha, 0.0, 1.0)


_TERRAVIS_WEIGHTS = ("the score's weights outside their domain (lambda a finite number > 0, alpha in [0, 1]) "
                     "are refused with ValueError; the release computes exp(-lambda (N_major + alpha N_minor)) "
                     "with any numbers")

# Every TerraVis corpus replays exactly inside the domain (metrics/terravis/README.md lists what differs).
TERRAVIS: list[Deviation] = [
    Deviation("terravis/score_formula", _terravis_weights_outside, _TERRAVIS_WEIGHTS, refuses=True),
    Deviation("terravis/score_formula", lambda inp: _not_a_count(inp["n_major"]) or _not_a_count(inp["n_minor"]),
              "violation counts that are not non-negative integers are refused with ValueError", refuses=True),
    Deviation("terravis/workflow", _terravis_weights_outside, _TERRAVIS_WEIGHTS, refuses=True),
]

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


def _grid_size_outside(inp: dict) -> bool:
    """A grid size that is not an integer in 1..99 (`Grid`: rows are written with one or two digits)."""
    n = inp.get("grid_size", 16)
    return isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 99


def _cells_off_the_grid(inp: dict) -> bool:
    """A cell of the corpus' grids outside 1..16 (`Grid` refuses cells off its n x n grid)."""
    pairs = [*(inp.get("gt_cells") or ()), *(inp.get("major_cells") or ()), *(inp.get("pred_cells") or ())]
    return any(not (_finite(r) and _finite(c) and 1 <= r <= 16 and 1 <= c <= 16) for r, c in pairs)


def _unit_score_outside(inp: dict) -> bool:
    """A score the target is written from outside [0, 1] (`data.scores_from_unit`), e.g. 1.04: the axis
    scores when the first is given (the overall score is then unused, by the release and the library
    alike), else the overall score."""
    axes = inp.get("axis_scores")
    used = list(axes) if axes is not None and axes[0] is not None else [inp.get("score")]
    return any(v is not None and _outside(v, 0.0, 1.0) for v in used)


def _map_array(inp: dict):
    """The annotation's map when it is given as an array (`data_form` "array"), else None."""
    if inp.get("data_form") != "array" or inp.get("type") not in ("mask", "heatmap"):
        return None
    from .replay import decode_array
    return decode_array(inp["array"])


def _not_one_plane(inp: dict) -> bool:
    """A map array that is no single plane: (H, W, 3) and the like, what `raster` refuses (a singleton
    channel, (H, W, 1) or (1, H, W), is one plane)."""
    array = _map_array(inp)
    if array is None:
        return False
    return not (array.ndim == 2 or (array.ndim == 3 and 1 in (array.shape[0], array.shape[-1])))


def _one_plane_in_three_dims(inp: dict) -> bool:
    """A map array of one plane with a singleton channel axis: (H, W, 1) or (1, H, W)."""
    array = _map_array(inp)
    return array is not None and array.ndim == 3 and 1 in (array.shape[0], array.shape[-1])


VIESCORE2: list[Deviation] = [
    Deviation("viescore2/heatmap_grids",
              lambda inp: inp.get("major_threshold") is not None and _outside(inp["major_threshold"], 0.0, 1.0,
                                                                            low_open=True),
              "a coverage-mark threshold outside (0, 1] (0 marks every cell) is refused with ValueError; the "
              "release applies it", refuses=True),
    Deviation("viescore2/heatmap_grids", _grid_size_outside,
              "a grid size outside 1..99 is refused with ValueError", refuses=True),
    Deviation("viescore2/gt_grid", _grid_size_outside,
              "a grid size outside 1..99 is refused with ValueError", refuses=True),
    Deviation("viescore2/make_target", _unit_score_outside,
              "a human score outside [0, 1] (such as 1.04) is refused with ValueError; the release writes "
              "round(10 x score), a target past 10", refuses=True),
    Deviation("viescore2/weighted_fbeta", lambda inp: not _finite(inp.get("beta", 1.0)) or inp.get("beta", 1.0) <= 0,
              "F-beta with beta <= 0 is refused with ValueError", refuses=True),
    Deviation("viescore2/weighted_fbeta", _cells_off_the_grid,
              "a cell outside the 16 x 16 grid is refused with ValueError", refuses=True),
    Deviation("viescore2/rewards", lambda inp: any(not _finite(b) or b <= 0 for b in inp.get("betas", ())),
              "F-beta with beta <= 0 is refused with ValueError", refuses=True),
    Deviation("viescore2/rewards", _unsupervised_target,
              "a target that supervises nothing (no readable grid, no overall score, no PQ+SC pair) raises "
              "ValueError as corrupt data, where the release trains on it with every term 0 but the format"),
    Deviation("viescore2/rewards", _marks_outside_sections,
              "coverage marks written in a single grid (no category sections) weight the Dice reward; the "
              "release weights only marks inside artifact/misalign sections"),
    Deviation("viescore2/gt_grid", _not_one_plane,
              "a mask or heatmap array that is not one plane (an (H, W, 3) float array) is refused with "
              "ValueError; the release returns an empty, clean grid for any array that is not 2-D",
              refuses=True),
    Deviation("viescore2/gt_grid", _one_plane_in_three_dims,
              "a map array with a singleton channel axis, (H, W, 1) or (1, H, W), is read as its one plane; "
              "the release returns an empty, clean grid for any array that is not 2-D"),
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


def _fager_thresholds_outside(inp: dict) -> bool:
    """Thresholds that are not numbers in 0..100 with regenerate <= keep (`GatingPolicy`); absent: 20 and 95."""
    low, high = inp.get("regenerate_threshold", 20.0), inp.get("keep_threshold", 95.0)
    return _outside(low, 0.0, 100.0) or _outside(high, 0.0, 100.0) or low > high


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
              "the release silently never asks it", refuses=True),
    Deviation("fager/score_image", _fager_thresholds_outside,
              "thresholds outside 0..100, or a regenerate threshold above the keep threshold, are refused "
              "(GatingPolicy raises ValueError); the release applies them as given", refuses=True),
    Deviation("fager/ab_test", lambda inp: inp.get("tie_mode", "full") not in ("full", "zero", "skip"),
              "a tie mode other than full, zero or skip is refused with ValueError", refuses=True),
    Deviation("fager/ab_test",
              lambda inp: any(len({k for k, _ in inp.get(side, [])}) != len(inp.get(side, []))
                              for side in ("real", "fake")),
              "a key repeated on one side is an error; the release's inner join pairs every copy", refuses=True),
    Deviation("fager/ab_test",
              lambda inp: any(s in ("Infinity", "-Infinity") for side in ("real", "fake")
                              for _, s in inp.get(side, [])),
              "an infinite score is an error, not a pair; the release pairs it", refuses=True),
]

# --- regeneration ---------------------------------------------------------------------------------
REGENERATION: list[Deviation] = [
    Deviation("regeneration/select_candidate", lambda inp: any(not round_ for round_ in inp.get("rounds", [])),
              "a round without candidates is refused with ValueError (no candidate can win it)", refuses=True),
    Deviation("regeneration/aggregate_metrics", lambda inp: not inp.get("results"),
              "no results to summarise is refused with ValueError", refuses=True),
]

DEVIATIONS: list[Deviation] = TERRAVIS + VIESCORE2 + FAGER + REGENERATION


def deviation_for(corpus: str, case_input: dict) -> Deviation | None:
    """The first table row for this corpus whose rule holds on the input, or None; a refusal row
    (out of domain) comes before any other, as the library refuses such an input whatever else it holds."""
    rows = [row for row in DEVIATIONS if row.corpus == corpus]
    for row in sorted(rows, key=lambda row: not row.refuses):
        if row.applies(case_input):
            return row
    return None
