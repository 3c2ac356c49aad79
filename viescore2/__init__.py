"""VIEScore2: 0-10 scores plus a spatial defect grid, parsed, rewarded, evaluated and explained.

The model-free core: ``grid`` (format and parser), ``raster`` (ground truth from masks,
heatmaps and boxes), ``rewards`` (GRPO), ``evaluation`` (paper metrics), ``explain``,
``render``, ``data`` (SFT/GRPO examples) and ``metrics`` (torchmetrics, loaded on first use).
The judge: ``instructions`` (field configurations and instruction packs), ``output_grammar``
(EBNF constraints), ``core`` (`VIEScore2` over any judge), ``spec`` (the registered
method) and ``score_metric`` (`VIEScore2Score`, loaded on first use).
"""
from .evaluation import Reference, evaluate_suite, grid_iou, localization_metrics, pixel_iou, srcc
from .explain import explain
from .parsing import parse_grid, parse_output
from .grid import DEFAULT_N, CategoryGrids, Grid, GridStatus, ParsedOutput, format_output
from .pack import Fields, InstructionPack, all_fields, build_instruction, load_pack, training_instruction
from .output_grammar import output_constraint, output_grammar, token_budget
from .core import RunResult, VIEScore2, VIEScore2Record, read_answer
from .raster import (DEFAULT_CELL_THRESHOLD, MARK_THRESHOLD, grid_from_boxes, grid_from_heatmap,
                     grid_from_heatmaps, grid_from_mask)
from .rewards import REWARD_WEIGHTS, RewardFunction, dice_reward, fbeta_reward, reward_functions, rewards

__all__ = [
    "DEFAULT_N", "Grid", "CategoryGrids", "GridStatus", "ParsedOutput", "format_output", "parse_output", "parse_grid",
    "DEFAULT_CELL_THRESHOLD", "MARK_THRESHOLD", "grid_from_mask", "grid_from_heatmap", "grid_from_heatmaps",
    "grid_from_boxes", "REWARD_WEIGHTS", "RewardFunction", "reward_functions", "rewards", "fbeta_reward",
    "dice_reward", "Reference", "evaluate_suite", "localization_metrics", "grid_iou", "pixel_iou", "srcc",
    "explain", "GridIoU", "GridF1",
    "Fields", "all_fields", "InstructionPack", "load_pack", "build_instruction", "training_instruction",
    "output_grammar", "output_constraint", "token_budget", "VIEScore2", "VIEScore2Record", "RunResult",
    "read_answer", "VIEScore2Score", "viescore2_score",
]

_LAZY = {"GridIoU": "metrics", "GridF1": "metrics", "VIEScore2Score": "score_metric",
         "viescore2_score": "score_metric"}


def __getattr__(name: str):
    """Load the torchmetrics classes only when asked for (torchmetrics imports torch)."""
    if name in _LAZY:
        from importlib import import_module
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'viescore2' has no attribute {name!r}")
