"""VIEScore2: 0-10 scores plus a spatial defect grid, parsed, rewarded, evaluated and explained.

The layout every method package shares (docs/layout.md): `core` (`VIEScore2` over any judge), `pack`
(field configurations and instruction packs), `scoring` (the overall score and reward math),
`parsing` (judge text to scores and grids), `metric` (`VIEScore2Score`, torchmetrics), `spec`,
`cli` and `report`; `records` (`VIEScore2Record`), `human` (ground-truth grids from stored
annotations), `figures` (overlays), `asking` (the request and its reading), `schema` (the EBNF output
grammar), `saved_runs` (the release's report layouts) and `evaluation` (paper metrics). Besides:
`grid` (the grid format), `raster` (ground truth from masks, heatmaps and boxes), `rewards` (GRPO
reward callables), `explain` and `data` (SFT/GRPO examples).
"""
from __future__ import annotations

from vlmjudge.lazy import lazy_exports

#: Public name -> the module it lives in; each loads on first use (the torchmetrics faces import torch).
_EXPORTS = {
    **dict.fromkeys(("Reference", "evaluate_suite", "grid_iou", "localization_metrics", "pixel_iou", "srcc"),
                    ".evaluation"),
    "explain": ".explain",
    **dict.fromkeys(("parse_grid", "parse_output"), ".parsing"),
    **dict.fromkeys(("DEFAULT_N", "CategoryGrids", "Grid", "GridStatus", "ParsedOutput", "format_output"), ".grid"),
    **dict.fromkeys(("Fields", "InstructionPack", "all_fields", "build_instruction", "load_pack",
                     "training_instruction"), ".pack"),
    **dict.fromkeys(("output_constraint", "output_grammar", "token_budget"), ".schema"),
    **dict.fromkeys(("RunResult", "VIEScore2"), ".core"),
    "read_answer": ".asking",
    "VIEScore2Record": ".records",
    **dict.fromkeys(("DEFAULT_CELL_THRESHOLD", "MARK_THRESHOLD", "grid_from_boxes", "grid_from_heatmap",
                     "grid_from_heatmaps", "grid_from_mask"), ".raster"),
    **dict.fromkeys(("RewardFunction", "reward_functions", "rewards"), ".rewards"),
    **dict.fromkeys(("REWARD_WEIGHTS", "dice_reward", "fbeta_reward"), ".scoring"),
    **dict.fromkeys(("GridIoU", "GridF1", "VIEScore2Score", "viescore2_score"), ".metric"),
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
