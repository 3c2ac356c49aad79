"""The pieces every scale-out path shares: contiguous shards, global ids, method lookup, the
CLI's inputs, process ranks, and the Ray actor called directly on numpy batches."""
import dataclasses
import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from dist_support import JUDGE_KWARGS, REPO, TOY, TOY_SPEC, assert_close
from PIL import Image

from vlmjudge.cli.distributed import build_parser, read_columns
from vlmjudge.distributed import (
    ScorerActor,
    load_evaluate_shard,
    process_rank,
    resolve_method,
    score_records,
    shard_columns,
    shard_range,
    with_global_ids,
)
from vlmjudge.registry import get_method


def test_shard_range_matches_accelerates_split():
    # accelerate: the first n % k processes get one more row; contiguous.
    assert [shard_range(10, 4, i) for i in range(4)] == [(0, 3), (3, 6), (6, 8), (8, 10)]
    assert [shard_range(3, 2, i) for i in range(2)] == [(0, 2), (2, 3)]
    assert [shard_range(1, 3, i) for i in range(3)] == [(0, 1), (1, 1), (1, 1)]
    for n in range(13):
        for k in range(1, 5):
            bounds = [shard_range(n, k, i) for i in range(k)]
            assert bounds[0][0] == 0 and bounds[-1][1] == n
            assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
            sizes = [end - start for start, end in bounds]
            assert max(sizes) - min(sizes) <= 1 and sizes == sorted(sizes, reverse=True)


@pytest.mark.parametrize("args", [(5, 0, 0), (5, 2, 2), (5, 2, -1), (-1, 2, 0)])
def test_shard_range_rejects_bad_arguments(args):
    with pytest.raises(ValueError):
        shard_range(*args)


def test_shard_columns_slices_every_column_and_leaves_the_input_alone():
    batch = {"image": list("abcde"), "prompt": list("vwxyz")}
    assert shard_columns(batch, 2, 1) == {"image": ["d", "e"], "prompt": ["y", "z"]}
    assert batch == {"image": list("abcde"), "prompt": list("vwxyz")}
    with pytest.raises(ValueError, match="differ in length"):
        shard_columns({"image": [1, 2], "prompt": [1]}, 2, 0)
    with pytest.raises(ValueError, match="non-empty mapping"):
        shard_columns({}, 2, 0)


def test_global_ids_only_for_methods_that_take_ids():
    terravis = get_method("terravis")
    assert with_global_ids(terravis, {"image": ["a", "b"]}, start=4) == {"image": ["a", "b"], "id": ["4", "5"]}
    assert with_global_ids(terravis, {"image": ["a"], "id": ["mine"]}, start=4)["id"] == ["mine"]
    no_ids = dataclasses.replace(TOY_SPEC, optional_inputs=())
    assert with_global_ids(no_ids, {"image": ["a"]}, start=4) == {"image": ["a"]}


def test_resolve_method_by_name_import_path_or_spec():
    assert resolve_method("terravis") is get_method("terravis")
    assert resolve_method(TOY) is TOY_SPEC
    assert resolve_method(TOY_SPEC) is TOY_SPEC
    with pytest.raises(KeyError, match="no method"):
        resolve_method("no-such-method")
    with pytest.raises(TypeError, match="not a vlmjudge MethodSpec"):
        resolve_method("json:dumps")
    with pytest.raises(AttributeError, match="no 'NOPE'"):
        resolve_method("toy_method:NOPE")
    with pytest.raises(TypeError):
        resolve_method("")


def test_score_records_checks_its_inputs(cached_judge):
    with pytest.raises(ValueError, match="empty batch"):
        score_records(TOY, {"image": []}, judge=cached_judge)
    with pytest.raises(ValueError, match="lacks required columns"):
        score_records(TOY, {"picture": ["x"]}, judge=cached_judge)
    with pytest.raises(ValueError, match="not both"):
        score_records(TOY, {"image": ["x"]}, judge=cached_judge, model="elsewhere")


def test_read_columns_from_jsonl_and_folders(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"image": "a.png", "prompt": "p"}\n\n{"image": "b.png", "prompt": "q"}\n')
    assert read_columns(str(rows), takes_ids=True) == {"image": ["a.png", "b.png"], "prompt": ["p", "q"]}
    rows.write_text('{"image": "a.png"}\n{"image": "b.png", "prompt": "q"}\n')
    with pytest.raises(ValueError, match=":2: columns"):
        read_columns(str(rows), takes_ids=False)
    rows.write_text('["a.png"]\n')
    with pytest.raises(ValueError, match="JSON object"):
        read_columns(str(rows), takes_ids=False)
    folder = tmp_path / "imgs"
    folder.mkdir()
    with pytest.raises(ValueError, match="no images"):
        read_columns(str(folder), takes_ids=True)
    for name in ("b.png", "a.jpg", "notes.txt"):
        (folder / name).write_bytes(b"")
    columns = read_columns(str(folder), takes_ids=True)
    assert columns == {"image": [str(folder / "a.jpg"), str(folder / "b.png")], "id": ["a.jpg", "b.png"]}
    assert "id" not in read_columns(str(folder), takes_ids=False)


def test_cli_rejects_non_object_json():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["terravis", "--input", "x", "--output", "y", "--judge-kwargs", "[1]"])


def test_process_rank_reads_torchrun_variables(monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "3")
    assert process_rank() == (1, 3)
    assert process_rank(0, 1) == (0, 1)
    with pytest.raises(ValueError, match="rank 3"):
        process_rank(3, 3)


def test_scorer_actor_on_numpy_batches(tiny_vlm, image_paths, reference):
    actor = ScorerActor(TOY_SPEC, model=tiny_vlm, judge_kwargs=JUDGE_KWARGS)
    # Images 0 and 6 share a size: a fixed-shape column arrives as one (B, H, W, C) array.
    arrays = np.stack([np.asarray(Image.open(image_paths[i]).convert("RGB")) for i in (0, 6)])
    out = actor({"image": arrays, "tag": np.array(["first", "second"])})
    assert set(out) == {"tag", "record", "score", "valid", "worker", "judge_calls"}  # images do not travel back
    assert out["tag"].tolist() == ["first", "second"]
    without_id = lambda record: {k: v for k, v in record.items() if k != "id"}  # noqa: E731  (ids: batch rows here)
    assert_close([without_id(json.loads(r)) for r in out["record"]], [without_id(reference["toy"][i]) for i in (0, 6)])
    assert out["score"].tolist() == pytest.approx([reference["toy"][i]["score"] for i in (0, 6)], abs=1e-5)
    assert out["valid"].tolist() == [True, True] and out["judge_calls"].tolist() == [2, 0]
    # Encoded bytes of different sizes arrive as an object column.
    raw = np.array([Path(image_paths[i]).read_bytes() for i in (1, 2, 3)], dtype=object)
    out = actor({"image": raw})
    assert_close([without_id(json.loads(r)) for r in out["record"]], [without_id(r) for r in reference["toy"][1:4]])


def test_load_evaluate_shard_needs_a_meeting_place():
    metric_dir = str(REPO / "metrics" / "terravis")
    with pytest.raises(ValueError, match="experiment_id"):
        load_evaluate_shard(metric_dir, rank=0, world_size=2)
    with pytest.raises(ValueError, match="rank 2"):
        load_evaluate_shard(metric_dir, rank=2, world_size=2, experiment_id="x", cache_dir="unused")


def test_gathered_scores_save_in_the_output_layout(tmp_path):
    """What accelerate and Ray return is written as every command writes: records, manifest beside."""
    from vlmjudge.distributed import DistributedScores
    from vlmjudge.outputs import read_run

    scores = DistributedScores([{"id": "a/cat.png", "status": "scored", "score": 1.0}], [(0, 1)], [{"model_calls": 3}],
                               {"method": "terravis", "model": "m"})
    manifest_file = scores.save(tmp_path / "out" / "records.jsonl", input="imgs")
    assert manifest_file == tmp_path / "out" / "records.manifest.json"
    records, manifest = read_run(tmp_path / "out" / "records.jsonl")
    assert records == scores.records
    assert manifest == {"method": "terravis", "model": "m", "input": "imgs", "n_scored": 1}


def test_a_folder_input_is_searched_recursively_with_relative_ids(tmp_path):
    for name in ("a/cat.png", "b/cat.png", "b/c/dog.jpg"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    columns = read_columns(str(tmp_path), takes_ids=True)
    assert columns["id"] == ["a/cat.png", "b/c/dog.jpg", "b/cat.png"]
    assert columns["image"] == [str(tmp_path / i) for i in columns["id"]]
