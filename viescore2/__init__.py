"""VIEScore2: 0-10 scores plus a spatial defect grid, parsed, rewarded, evaluated and explained without a model.

The model-free core: ``grid`` (format and parser), ``raster`` (ground truth from masks,
heatmaps and boxes), ``rewards`` (GRPO), ``evaluation`` (paper metrics), ``explain``,
``render``, ``data`` (SFT/GRPO examples) and ``metrics`` (torchmetrics, loaded on first use).
"""
from .evaluation import Reference, evaluate_suite, grid_iou, localization_metrics, pixel_iou, srcc
from .explain import explain
from .grid import (DEFAULT_N, CategoryGrids, Grid, GridStatus, ParsedOutput, format_output, parse_grid,
                   parse_output)
from .raster import (DEFAULT_CELL_THRESHOLD, MARK_THRESHOLD, grid_from_boxes, grid_from_heatmap,
                     grid_from_heatmaps, grid_from_mask)
from .rewards import REWARD_WEIGHTS, RewardFunction, dice_reward, fbeta_reward, reward_functions, rewards

__all__ = [
    "DEFAULT_N", "Grid", "CategoryGrids", "GridStatus", "ParsedOutput", "format_output", "parse_output", "parse_grid",
    "DEFAULT_CELL_THRESHOLD", "MARK_THRESHOLD", "grid_from_mask", "grid_from_heatmap", "grid_from_heatmaps",
    "grid_from_boxes", "REWARD_WEIGHTS", "RewardFunction", "reward_functions", "rewards", "fbeta_reward",
    "dice_reward", "Reference", "evaluate_suite", "localization_metrics", "grid_iou", "pixel_iou", "srcc",
    "explain", "GridIoU", "GridF1",
]


def __getattr__(name: str):
    """Load the torchmetrics classes only when asked for (torchmetrics imports torch)."""
    if name in ("GridIoU", "GridF1"):
        from . import metrics
        return getattr(metrics, name)
    raise AttributeError(f"module 'viescore2' has no attribute {name!r}")
