"""VIEScore2 parsing, targets and rewards against the release (XiandaDu/VIEScoreTwo), one test per corpus line.

Each adapter calls the project's public functions and writes the release's schema
(tests/data/golden/README.md): grids as sorted 1-based ``[row, col]`` lists, scores as floats or null.
"""
from viescore2 import data
from viescore2.rewards import Target, rewards
from viescore2.scoring import dice_reward, fbeta_reward
from viescore2.grid import CategoryGrids, Grid, GridStatus
from viescore2.parsing import parse_output

from .replay import golden_test

STATUS = {GridStatus.OK: "ok", GridStatus.NONE: "clean", GridStatus.FAILED: "failed"}


def cell_list(cells) -> list:
    """Cells as the corpus writes them: sorted row-major ``[row, col]`` pairs."""
    return [list(cell) for cell in sorted(cells)]


def cells_of(pairs) -> frozenset:
    """Corpus cell pairs as a set of tuples."""
    return frozenset((int(r), int(c)) for r, c in pairs or ())


def grid_with_marks(cells, marks) -> Grid:
    """A grid whose coverage marks are the marked cells among its defect cells."""
    cells = cells_of(cells)
    return Grid(cells, cells & cells_of(marks))


def read_grid(inp: dict) -> dict:
    """`parse_output` in the shape of run_eval.parse_grid_from_response + parse_channels_from_response."""
    parsed = parse_output(inp["text"])
    channels = {name: {"problem": cell_list(grid.cells), "major": cell_list(grid.marks)}
                for name, grid in parsed.sections.items()}
    marks = set().union(*(grid.marks for grid in parsed.sections.values()))
    return {"status": STATUS[parsed.status], "cells": None if parsed.union is None else cell_list(parsed.union.cells),
            "channels": channels, "marks": cell_list(marks)}


def read_scores(inp: dict) -> dict:
    """`parse_output` scores and the overall score (score, else sqrt(pq * sc))."""
    parsed = parse_output(inp["text"])
    return {"score": parsed.scores.get("score"), "pq": parsed.scores.get("pq"), "sc": parsed.scores.get("sc"),
            "overall": parsed.overall}


def make_target(inp: dict) -> dict:
    """`data.target_text` of an annotation whose unit-scale scores go through `data.scores_from_unit`."""
    try:
        scores = data.scores_from_unit(score=inp["score"], axes=inp["axis_scores"])
    except ValueError as err:
        return {"error": type(err).__name__}
    if inp["channels"] is not None:
        localization = CategoryGrids(*(grid_with_marks(inp["channels"][name]["problem"], inp["channels"][name]["major"])
                                       for name in ("artifact", "misalign")))
    else:
        localization = Grid(cells_of(inp["flat_cells"]))
    annotation = data.Annotation(image=None, prompt="", scores=scores, localization=localization)
    return {"text": data.target_text(annotation)}


def weighted_fbeta(inp: dict) -> dict:
    """`fbeta_reward` and `dice_reward` with the corpus' mark weight."""
    target = grid_with_marks(inp["gt_cells"], inp["major_cells"])
    pred = None if inp["pred_cells"] is None else Grid(cells_of(inp["pred_cells"]))
    weight = inp["w_major"]
    return {"fbeta": fbeta_reward(pred, target, beta=inp["beta"], mark_weight=weight),
            "dice": dice_reward(pred, target, mark_weight=weight)}


def grpo_rewards(inp: dict) -> dict:
    """`Target.from_text` and `rewards` for one completion, per beta."""
    try:
        target = Target.from_text(inp["target"])
    except ValueError as err:
        return {"error": type(err).__name__}
    loc, fmt, score = inp["weights"]
    weights = {"dice": loc, "format": fmt, "score": score}
    per_beta = {f"{beta:g}": rewards(inp["completion"], target, beta=beta, weights=weights,
                                            mark_weight=inp["w_major"]) for beta in inp["betas"]}
    terms = per_beta.get("1") or rewards(inp["completion"], target, weights=weights,
                                                 mark_weight=inp["w_major"])
    grid = target.grid
    return {"target_row": {"has_loc_gt": target.has_grid,
                           "gt_cells": cell_list(grid.cells) if grid is not None else [],
                           "gt_major_cells": cell_list(grid.marks) if grid is not None else [],
                           "gt_score": target.scores.get("score", -1.0),
                           "gt_pq": target.scores.get("pq", -1.0), "gt_sc": target.scores.get("sc", -1.0)},
            "dice": terms["dice"], "fbeta": {key: value["dice"] for key, value in per_beta.items()},
            "format": terms["format"], "score": terms["score"], "total": terms["total"]}


test_parse_grid = golden_test(
    "viescore2/parse_grid", read_grid,
    "Union grid, status and category sections as run_eval reads a model output.")

test_parse_scores = golden_test(
    "viescore2/parse_scores", read_scores,
    "Score, PQ, SC and the overall score as run_eval reads them.")

test_make_target = golden_test(
    "viescore2/make_target", make_target,
    "The SFT target text of build_sft_data.make_sample.")

test_rewards = golden_test(
    "viescore2/rewards", grpo_rewards,
    "The GRPO rewards of train_grpo.py, target parsing included.")

test_weighted_fbeta = golden_test(
    "viescore2/weighted_fbeta", weighted_fbeta,
    "Coverage-weighted F-beta and Dice on grids.")
