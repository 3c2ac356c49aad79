"""The loop every trained scorer shares: bad inputs and unusable outputs become counted failures,
records follow the shared schema, and a missing package is one line naming the extra."""
from __future__ import annotations

import io
import math
import sys

import numpy as np
import pytest
from PIL import Image

from t2ibaselines.trained.base import (Item, ItemFailed, MissingExtraError, TrainedScorer, read_items, require,
                                       trained_spec)
from t2ibaselines.trained.records import TrainedRecord
from vlmjudge.record_schema import check_record, status_counts
from vlmjudge.stats.statistic import value_of


class FixedOutputs(TrainedScorer):
    """A scorer whose "model" gives set outputs, to drive the loop's checks on what a model returns."""

    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.made_by = {"model": "fixed"}
        self.spec = trained_spec(name="fixed", inputs=("image", "prompt"), build=lambda judge: self,
                                 score_range=(0.0, 1.0), description="", label="mean", higher_is_better=True,
                                 extra=None, requires=(), scorer=FixedOutputs)

    def score_chunk(self, items):
        return [self.outputs.pop(0) for _ in items]


def _png(colour="red", size=(16, 16)):
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_bad_inputs_are_counted_failures_and_never_reach_the_model(tmp_path):
    good = Image.new("RGB", (16, 16), "red")
    batch = {"image": [good, b"\x89PNG\r\n\x1a\n broken", str(tmp_path), str(tmp_path / "missing.png"), good, good, good],
             "prompt": ["a red square", "a cat", "a cat", "a cat", None, "   ", float("nan")],
             "id": ["ok", "corrupt", "folder", "missing", "none", "blank", "nan"]}
    scorer = FixedOutputs([0.5])
    records = scorer.score_batch(batch)
    assert [r.id for r in records] == batch["id"]
    assert [r.status for r in records] == ["scored"] + ["failed"] * 6
    assert records[0].score == 0.5 and not scorer.outputs  # the model saw exactly one item
    errors = {r.id: r.error for r in records}
    assert errors["corrupt"].startswith("image:") and errors["folder"].startswith("image:")
    assert errors["missing"].startswith("image:") and errors["blank"] == "empty prompt"
    assert errors["none"] == "no prompt (got None)" and errors["nan"] == "no prompt (got nan)"
    assert status_counts([r.to_json() for r in records]) == {"scored": 1, "not_applicable": 0, "failed": 6}


@pytest.mark.parametrize("output, kept", [(float("nan"), None), (float("inf"), None), (1.5, 1.5), (-0.2, -0.2)])
def test_an_unusable_model_output_is_a_failure_not_a_score(output, kept):
    [record] = FixedOutputs([output]).score_batch({"image": [_png()], "prompt": ["a red square"]})
    as_json = record.to_json()
    assert as_json["status"] == "failed" and as_json["score"] is None and not record.valid
    assert as_json.get("raw_score") == kept
    assert ("outside the range fixed declares" in record.error) == (kept is not None)


def test_an_item_the_model_refuses_fails_alone():
    scorer = FixedOutputs([ItemFailed("too small for this metric"), 0.25])
    first, second = scorer.score_batch({"image": [_png(), _png("blue")], "prompt": ["a", "b"]})
    assert (first.status, first.error, second.score) == ("failed", "too small for this metric", 0.25)


def test_duplicate_ids_stop_the_batch_with_a_clear_error():
    with pytest.raises(ValueError, match=r"duplicate ids in the batch: \['a'\]"):
        read_items({"image": [_png(), _png()], "prompt": ["x", "y"], "id": ["a", "a"]}, ("image", "prompt"), 2)


def test_an_empty_id_stops_the_batch_with_a_clear_error():
    with pytest.raises(ValueError, match=r"empty ids in the batch, at rows \[1\]"):
        read_items({"image": [_png(), _png()], "prompt": ["x", "y"], "id": ["a", " "]}, ("image", "prompt"), 2)


def test_missing_and_uneven_columns_are_refused_before_any_scoring():
    scorer = FixedOutputs([])
    with pytest.raises(ValueError, match="prompt"):
        scorer.score_batch({"image": [_png()]})
    with pytest.raises(ValueError, match="differ in length"):
        scorer.score_batch({"image": [_png()], "prompt": ["a", "b"]})
    with pytest.raises(ValueError, match="empty batch"):
        scorer.score_batch({"image": [], "prompt": []})


def test_records_follow_the_shared_schema_and_the_statistic_skips_failures():
    records = [TrainedRecord(id="a", score=0.2, scorer="lpips"), TrainedRecord(id="b", score=0.6, scorer="lpips"),
               TrainedRecord(id="c", score=None, scorer="lpips", error="image: unreadable")]
    saved = [check_record(r.to_json()) for r in records]
    assert [list(r)[:3] for r in saved] == [["id", "status", "score"]] * 3
    statistic = trained_spec(name="lpips", inputs=("image", "reference"), build=dict, score_range=(0.0, 2.0),
                             description="", label="mean LPIPS", higher_is_better=False, extra=None, requires=(),
                             scorer=FixedOutputs).statistics["mean_score"]
    assert math.isclose(value_of(saved, statistic), 0.4) and statistic.higher_is_better is False


def test_require_names_the_extra_for_a_missing_and_for_a_broken_package(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "hpsv2", None)  # None in sys.modules: import raises ImportError
    with pytest.raises(MissingExtraError) as missing:
        require("hpsv2", "hpsv2", "hpsv2.src.open_clip")
    assert "\n" not in str(missing.value) and isinstance(missing.value, ValueError)  # one line in the CLI
    assert str(missing.value) == "hpsv2 needs the 'hpsv2' extra: pip install 'vlmjudge[hpsv2]' (hpsv2 is not installed)"
    broken = tmp_path / "broken_scorer_pkg"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError(\"cannot import name 'x' from 'transformers'\")\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtraError, match=r"^demo needs the 'demo' extra \(pip install 'vlmjudge\[demo\]'\), but "
                                                 r"import broken_scorer_pkg fails here: ImportError: cannot import "
                                                 r"name 'x' from 'transformers'$"):
        require("demo", "demo", "broken_scorer_pkg")
    with pytest.raises(MissingExtraError, match=r"^demo needs the 'iqa' extra: .*\(not_here_at_all is not installed\)$"):
        require("demo", "iqa", "not_here_at_all")


def test_read_items_converts_every_image_kind_to_rgb():
    array = np.zeros((8, 8, 4), dtype=np.uint8)
    [item] = read_items({"image": [array], "prompt": ["a"]}, ("image", "prompt"), 1)
    assert isinstance(item, Item) and item.image.mode == "RGB" and item.error is None
