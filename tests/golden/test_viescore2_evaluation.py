"""VIEScore2 ground truth and evaluation against the release (XiandaDu/VIEScoreTwo): one test per corpus
line of tests/data/golden/viescore2/{gt_grid, heatmap_grids, srcc, preference, evaluation, dev_eval}."""
import pytest

from viescore2.human import grid_from_annotation
from PIL import Image

from viescore2.evaluation import preference_accuracy
from viescore2.grid import Grid
from viescore2.raster import grid_from_richhf
from viescore2.saved_runs import correlation_block, development_report, reference_from_release, suite_report

from .replay import cases, decode_array, golden_test, number, replay


def cell_set(pairs):
    """Corpus [row, col] pairs as a set of cells."""
    return {(int(r), int(c)) for r, c in pairs}


def cell_list(cells):
    """Cells as the corpora write them: sorted row-major [row, col] pairs."""
    return [list(c) for c in sorted(cells)]


def gt_grid(inp, folder):
    """`grid_from_annotation` on the annotation as the release was given it: a grayscale PNG file
    (written to ``folder``), a float array, inline data, or a path that does not exist."""
    form = inp["data_form"]
    if form == "png_file":
        data = str(folder / "annotation.png")
        Image.fromarray(decode_array(inp["image"])).save(data)  # 2-D: grayscale; (H, W, 3): RGB
    elif form == "array":
        data = decode_array(inp["array"]).astype(float)
    elif form == "missing_file":
        data = str(folder / "no-such-annotation.png")
    else:
        data = inp["data"]
    try:
        grid = grid_from_annotation(inp["type"], data, n=inp["grid_size"])
    except (ValueError, FileNotFoundError) as err:
        return {"error": type(err).__name__}
    return {"cells": cell_list(grid.cells)}


@pytest.mark.parametrize("case", cases("viescore2/gt_grid"))
def test_gt_grid(case, tmp_path):
    """Masks > 0.5 and heatmaps > 0.25 after a LANCZOS resize; shapes drawn on the 1000 x 1000 canvas."""
    replay("viescore2/gt_grid", case, lambda inp: gt_grid(inp, tmp_path))


def heatmap_grids(inp):
    """`grid_from_richhf` on the channel map (None: the sample has no sidecar map)."""
    grid = grid_from_richhf(decode_array(inp["image"]), n=inp["grid_size"],
                            major_threshold=inp["major_threshold"])
    return {"problem": cell_list(grid.cells), "major": cell_list(grid.marks)}


test_heatmap_grids = golden_test(
    "viescore2/heatmap_grids", heatmap_grids,
    "RichHF maps binarised at 0.5 before the resize; marks where the resized raw map is >= the threshold.")


def srcc_block(inp):
    """The correlation block: pairs without COCO-real, rounded and unrounded Pearson and Spearman."""
    gt = [None if g is None else g * 10 for g in inp["gt"]]
    rounded = correlation_block(inp["pred"], gt, inp["source"])
    exact = correlation_block(inp["pred"], gt, inp["source"], digits=None)
    return {"score_pred_n": rounded["score_n"], "score_pearson": rounded["score_pearson"],
            "score_spearman": rounded["score_spearman"], "score_pearson_unrounded": exact["score_pearson"],
            "score_spearman_unrounded": exact["score_spearman"]}


test_srcc = golden_test(
    "viescore2/srcc", srcc_block,
    "At least 3 valid pairs with spread; COCO-real left out; average ranks for ties.")


def preference(inp):
    """`preference_accuracy` with the release's "A"/"B" choices; "NaN" strings decoded to floats."""
    pairs = inp["pairs"]
    result = preference_accuracy([number(p["a"]) for p in pairs], [number(p["b"]) for p in pairs],
                                 [p["chosen"] for p in pairs])
    return {"credits": list(result.credits), "n": result.pairs, "accuracy": round(result.accuracy, 4),
            "accuracy_unrounded": result.accuracy, "score_ties": result.ties, "unparsed_pairs": result.unparseable}


test_preference = golden_test(
    "viescore2/preference", preference,
    "Higher score wins; ties and unparsed sides 0.5 (NaN is unparsed: the paper, release bug 7).")


def evaluation(inp):
    """`suite_report` on the judge texts and the release's rows as references."""
    rows = inp["rows"]
    return suite_report([r["pred_text"] for r in rows], [reference_from_release(r) for r in rows])


test_evaluation = golden_test(
    "viescore2/evaluation", evaluation,
    "Per-row confusion counts and the summary of the release's run_eval, key for key.")


def dev_eval(inp):
    """`development_report` on the texts, ground-truth grids, sources and clean flags."""
    rows = inp["rows"]
    return development_report([r["pred_text"] for r in rows], [Grid(cell_set(r["gt_cells"])) for r in rows],
                              [r["source"] for r in rows], [r["clean"] for r in rows])


test_dev_eval = golden_test(
    "viescore2/dev_eval", dev_eval,
    "False alarms on clean images, per-source F1 and micro P/R/F1 (0.0 when undefined) of dev_eval.")

