"""The leaderboard on real records (issue 48's acceptance): three models' images (the held-out fixture
photos) scored by TerraVis and VIEScore2 with the demo judge. Each value is the method's own summary
of its run, each row what `vlmjudge compare`'s board gives for the same runs, and the mean rank and
ranking agreement follow from the rows."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps
from scipy import stats

from vlmjudge import load_judge
from vlmjudge.benchmark.leaderboard import build_leaderboard
from vlmjudge.benchmark.suites import PromptSuite, SuitePrompt
from vlmjudge.outputs import read_run, write_manifest, write_records
from vlmjudge.registry import get_method
from vlmjudge.stats.board import compare_statistic
from vlmjudge.testing.demo import build_demo_judge

PHOTOS = Path(__file__).resolve().parents[2] / "data" / "photos" / "heldout"
PROMPTS = {"q0": "an astronaut on the moon", "q1": "a brick wall in the sun", "q2": "an old camera on a table",
           "q3": "a cat asleep on a sofa"}
#: Each model's photos (positions among the 11 sorted held-out ones; -1: the first photo mirrored). No photo
#: repeats: one judge scoring an image again in a later call trips a prefix-cache bug of the transformers
#: backend (a reshape error in hf/prefix/shared_attention.py), reported apart from this test.
MODELS = {"alpha": (0, 1, 2, 3), "beta": (4, 5, 6, 7), "gamma": (8, 9, 10, -1)}
SETTINGS = {"n_resamples": 200, "seed": 4, "confidence": 0.95}


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """{model: {method: records.jsonl}} scored by the demo judge, and the suite."""
    from terravis import TerraVis
    from terravis.records import save_records
    from viescore2 import VIEScore2

    root = tmp_path_factory.mktemp("benchmark")
    judge = load_judge(build_demo_judge(root / "judge"), device="cpu", batch_size=32)
    photos = sorted(PHOTOS.glob("*.jpg"))
    terravis, viescore2 = TerraVis(judge), VIEScore2(judge)
    ids, texts = list(PROMPTS), list(PROMPTS.values())
    runs = {}
    for model, positions in MODELS.items():
        images = [ImageOps.mirror(Image.open(photos[0]).convert("RGB")) if k < 0 else
                  Image.open(photos[k]).convert("RGB") for k in positions]
        runs[model] = {"terravis": str(root / "runs" / model / "terravis" / "records.jsonl"),
                       "viescore2": str(root / "runs" / model / "viescore2" / "records.jsonl")}
        save_records(runs[model]["terravis"], terravis.score(images, ids=ids), manifest=terravis.manifest())
        write_records(runs[model]["viescore2"], [r.to_json() for r in viescore2.score(images, texts, ids=ids)])
        write_manifest(runs[model]["viescore2"], viescore2.manifest())
    suite = PromptSuite("photos", [SuitePrompt(i, t, {"category": ("people" if i == "q0" else "things",)})
                                   for i, t in PROMPTS.items()])
    return runs, suite


@pytest.fixture(scope="module")
def board(scored):
    runs, suite = scored
    return build_leaderboard(runs, suite, **SETTINGS)


def rows_of(board: dict, method: str) -> dict[str, dict]:
    return {row["model"]: row for row in board["rows"] if row["method"] == method}


def test_each_value_is_the_methods_own_summary_of_its_run(scored, board):
    from terravis import TerraVis
    from terravis.records import load_records
    from viescore2.report import summarize_run

    runs, _ = scored
    for model in MODELS:
        own = TerraVis.summarize(load_records(runs[model]["terravis"])[0])["mean_score"]
        assert rows_of(board, "terravis")[model]["value"] == pytest.approx(own, rel=1e-12)
        own = summarize_run(read_run(runs[model]["viescore2"])[0])["mean_score"]
        assert rows_of(board, "viescore2")[model]["value"] == pytest.approx(own, rel=1e-12)
    assert all(r["low"] <= r["value"] <= r["high"] for r in board["rows"])
    assert len({r["value"] for r in board["rows"] if r["method"] == "viescore2"}) > 1  # the photos score differently


def test_rows_are_what_the_compare_board_gives_for_the_same_runs(scored, board):
    runs, _ = scored
    for method in ("terravis", "viescore2"):
        statistic = next(iter(get_method(method).statistics.values()))
        records = [read_run(runs[model][method])[0] for model in MODELS]
        theirs = compare_statistic(records, list(MODELS), statistic, tests=False, **SETTINGS)["leaderboard"]
        for entry in theirs:
            mine = rows_of(board, method)[entry["label"]]
            assert (mine["value"], mine["low"], mine["high"]) == pytest.approx((entry["value"], entry["low"],
                                                                                entry["high"]))
            assert (mine["rank"], mine["rank_low"], mine["rank_high"], mine["n"], mine["n_failed"]) == \
                (entry["rank"], entry["rank_low"], entry["rank_high"], entry["n"], entry["n_failed"])


def test_mean_rank_and_ranking_agreement_follow_from_the_rows(board):
    for entry in board["mean_rank"]:
        ranks = [r["rank"] for r in board["rows"] if r["model"] == entry["model"]]
        assert entry["mean_rank"] == pytest.approx(np.mean(ranks)) and entry["n_methods"] == 2
    (pair,) = board["ranking_agreement"]["pairs"]
    a, b = ([rows_of(board, m)[model]["value"] for model in MODELS] for m in ("terravis", "viescore2"))
    expected = stats.kendalltau(a, b).statistic
    assert pair["tau"] == pytest.approx(expected, abs=1e-15) if np.isfinite(expected) else pair["tau"] is None


def test_categories_split_the_same_records(board):
    people, things = board["by_category"]
    assert (people["tag"], people["n_prompts"], things["tag"], things["n_prompts"]) == ("people", 1, "things", 3)
    for model in MODELS:
        in_things = [r for r in things["rows"] if r["model"] == model and r["method"] == "viescore2"]
        assert in_things[0]["n"] + [r for r in people["rows"] if r["model"] == model and
                                    r["method"] == "viescore2"][0]["n"] == rows_of(board, "viescore2")[model]["n"]
