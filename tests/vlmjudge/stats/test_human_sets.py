"""Readers for public human-judgment sets, on synthetic rows written in each set's published
layout (tests/data/human_sets/README.md): one row shape out of four formats, clear errors, and
rows that feed `agreement` and `inter_annotator` directly."""
import ast
import math
import csv
import json
from pathlib import Path

import numpy as np
import pytest

from vlmjudge.stats.human_agreement import agreement, inter_annotator
from vlmjudge.stats.human_sets.evalmuse import read_evalmuse
from vlmjudge.stats.human_sets.genai_bench import read_genai_bench
from vlmjudge.stats.human_sets.rows import human_scores, rater_table
from vlmjudge.stats.human_sets.t2iscorescore import read_t2iscorescore
from vlmjudge.stats.human_sets.tifa import read_tifa

DATA = Path(__file__).resolve().parents[2] / "data" / "human_sets"
READERS = {
    "genai_bench": (read_genai_bench, "genai_image.json"),
    "evalmuse": (read_evalmuse, "train_list.json"),
    "tifa": (read_tifa, "human_annotations.json"),
    "t2iscorescore": (read_t2iscorescore, "metadata.csv"),
}


def load(name):
    """The fixture as plain JSON, to check the readers against the file itself."""
    return json.loads((DATA / name / READERS[name][1]).read_text())


@pytest.mark.parametrize("name", READERS)
def test_every_set_reads_into_one_row_shape(name):
    reader, filename = READERS[name]
    rows = reader(DATA / name)
    assert rows == reader(DATA / name / filename)  # the folder or the file itself
    assert len(rows) >= 5
    assert len({row["id"] for row in rows}) == len(rows)
    for row in rows:
        assert {"id", "prompt", "image", "human", "prompt_id"} <= set(row)
        assert isinstance(row["prompt"], str) and row["prompt"]
        assert isinstance(row["image"], str) and row["image"]
        assert isinstance(row["human"], float)
        if "raters" in row:
            assert row["human"] == pytest.approx(np.mean(row["raters"]))


def test_genai_bench_gives_a_row_per_prompt_and_generator():
    data = load("genai_bench")
    rows = read_genai_bench(DATA / "genai_bench")
    assert len(rows) == sum(len(record["models"]) for record in data.values())
    for row in rows:
        prompt_id, system = row["id"].split("/")
        assert row["raters"] == [float(s) for s in data[prompt_id]["models"][system]]
        assert len(row["raters"]) == 3
        assert row["image"] == f"{system}/{prompt_id}.jpeg"
        assert row["prompt"] == data[prompt_id]["prompt"] and row["system"] == system


def test_evalmuse_keeps_raters_and_element_means():
    data = load("evalmuse")
    rows = read_evalmuse(DATA / "evalmuse")
    assert [row["image"] for row in rows] == [record["img_path"] for record in data]
    for row, record in zip(rows, data):
        assert row["raters"] == [float(s) for s in record["total_score"]]
        assert row["prompt_id"] == record["prompt_id"]
        assert set(row["elements"]) == set(ast.literal_eval(record["element_score"]))
        assert all(0.0 <= v <= 1.0 for v in row["elements"].values())


def test_tifa_takes_the_generator_from_the_image_key():
    data = load("tifa")
    rows = read_tifa(DATA / "tifa")
    for row in rows:
        record = data[row["id"]]
        assert row["id"] == f"{record['text_id']}_{row['system']}"
        assert row["raters"] == [float(s) for s in record["human_scores"]]
        assert row["human"] == pytest.approx(record["human_avg"])
        assert row["image"] == record["image_path"]


def test_t2iscorescore_scores_fewer_errors_higher():
    with (DATA / "t2iscorescore" / "metadata.csv").open() as handle:
        records = list(csv.DictReader(handle))
    rows = read_t2iscorescore(DATA / "t2iscorescore")
    assert len(rows) == len(records)
    for row, record in zip(rows, records):
        assert str(row["errors"]) + row["branch"] == record["rank"]
        assert row["human"] == -row["errors"]
        assert row["prompt_id"] == record["id"] and row["system"] == record["image_source"]
        assert "raters" not in row
    worst = min(rows, key=lambda row: row["human"])
    assert worst["errors"] == max(row["errors"] for row in rows)


# --- clear errors -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", READERS)
def test_a_missing_download_says_what_to_fetch(name, tmp_path):
    reader, filename = READERS[name]
    with pytest.raises(FileNotFoundError, match=f"no {filename} at"):
        reader(tmp_path)


def write_json(tmp_path, filename, data):
    """One annotation file in a fresh folder."""
    (tmp_path / filename).write_text(json.dumps(data))
    return tmp_path


def test_evalmuse_test_split_without_scores_is_refused(tmp_path):
    record = {"prompt_id": "1", "prompt": "a kite", "img_path": "images/1.png"}
    with pytest.raises(ValueError, match="no total_score; EvalMuse's test split"):
        read_evalmuse(write_json(tmp_path, "train_list.json", [record]))


@pytest.mark.parametrize("scores", [[], [4, None, 5], [4, "five"], [float("nan")], [True, 4]])
def test_a_bad_rating_names_its_record(tmp_path, scores):
    data = {"00007": {"prompt": "a kite", "models": {"GenA": scores}}}
    with pytest.raises(ValueError, match="prompt 00007, generator GenA"):
        read_genai_bench(write_json(tmp_path, "genai_image.json", data))


def test_a_record_without_a_field_names_it(tmp_path):
    data = {"coco_1_gen": {"text_id": "coco_1", "image_path": "coco_1_gen.jpg",
                           "human_scores": [3]}}
    with pytest.raises(KeyError, match="image coco_1_gen: no 'text' field"):
        read_tifa(write_json(tmp_path, "human_annotations.json", data))


def test_a_wrong_top_level_shape_is_refused(tmp_path):
    with pytest.raises(ValueError, match="expected a list of records"):
        read_evalmuse(write_json(tmp_path, "train_list.json", {"a": 1}))
    (tmp_path / "genai_image.json").write_text("{not json")
    with pytest.raises(ValueError, match="is not valid JSON"):
        read_genai_bench(tmp_path)


@pytest.mark.parametrize("text, message", [
    ("id,target_prompt,file_name,image_source,rank\n0,a kite,a.jpg,SD,two\n",
     "line 2: rank 'two'"),
    ("id,prompt,file_name,image_source,rank\n0,a kite,a.jpg,SD,1\n",
     r"missing columns \['target_prompt'\]"),
])
def test_t2iscorescore_bad_csv_fails_clearly(tmp_path, text, message):
    (tmp_path / "metadata.csv").write_text(text)
    with pytest.raises(ValueError, match=message):
        read_t2iscorescore(tmp_path)


def test_rater_table_needs_raters():
    with pytest.raises(ValueError, match="without per-rater scores"):
        rater_table(read_t2iscorescore(DATA / "t2iscorescore"))


# --- the rows feed the agreement statistics ---------------------------------------------------

@pytest.mark.parametrize("name", ["genai_bench", "evalmuse", "tifa"])
def test_rows_feed_agreement_and_the_human_ceiling(name):
    rows = READERS[name][0](DATA / name)
    human = human_scores(rows)
    judge = human + np.linspace(-0.2, 0.2, human.size)  # a judge that nearly follows people
    groups = [row["prompt_id"] for row in rows]
    result = agreement(judge, human, groups=groups, n_resamples=50)
    assert result["spearman"].value > 0.8
    ceiling = inter_annotator(rater_table(rows))
    assert len(ceiling.per_annotator["pearson"]) == max(len(row["raters"]) for row in rows)
    assert -1.0 <= ceiling.mean["spearman"] <= 1.0


def test_system_level_agreement_from_genai_bench_rows():
    rows = read_genai_bench(DATA / "genai_bench")
    human = human_scores(rows)
    result = agreement(human, human, level="system", groups=[row["system"] for row in rows],
                       n_resamples=50)
    assert result["pearson"].value == pytest.approx(1.0)


# --- each set as its authors' loader reads it (issue 52, item 4) ------------------------------

def test_evalmuse_element_score_reads_as_an_object_or_as_a_string(tmp_path):
    """The loader takes a JSON object of rater lists; the published file holds it as a string (a
    Python dict literal); JSON text in a string reads the same."""
    data = load("evalmuse")
    forms = {"object": [{**record, "element_score": ast.literal_eval(record["element_score"])} for record in data],
             "literal": data,
             "json text": [{**record, "element_score": json.dumps(ast.literal_eval(record["element_score"]))}
                           for record in data]}
    read = {}
    for name, records in forms.items():
        folder = tmp_path / name.replace(" ", "_")
        folder.mkdir()
        read[name] = read_evalmuse(write_json(folder, "train_list.json", records))
    assert isinstance(forms["object"][0]["element_score"], dict)
    assert read["object"] == read["literal"] == read["json text"]
    first = ast.literal_eval(data[0]["element_score"])
    assert read["object"][0]["elements"] == {name: np.mean(scores) for name, scores in first.items()}


@pytest.mark.parametrize("element_score, message", [
    ("{'cat': [1, 0}", "element_score is neither JSON nor a dict literal"),
    ("[1, 0]", "element_score should map elements to their raters' scores, got list"),
    ({"cat": [1, "no"]}, "element 'cat'.*rater score 'no' is not a finite number"),
])
def test_a_bad_element_score_names_its_record(tmp_path, element_score, message):
    record = {"prompt_id": "1", "prompt": "a cat", "img_path": "images/1.png", "total_score": [3],
              "element_score": element_score}
    with pytest.raises(ValueError, match=message) as caught:
        read_evalmuse(write_json(tmp_path, "train_list.json", [record]))
    assert "record 0 (images/1.png)" in str(caught.value)


def test_genai_bench_1600_layout_gives_rows_only_for_the_generators_each_prompt_rates(tmp_path):
    """The 1,600-prompt file rates a different set of generators per prompt, and some prompts none:
    as the authors' loader, one row per generator a prompt names, and nothing for the others."""
    generators = ("DALLE_3", "SDXL_Turbo", "DeepFloyd_I_XL_v1", "Midjourney_6", "SDXL_2_1", "SDXL_Base")
    data = {f"{k:05d}": {"id": f"{k:05d}", "prompt": f"prompt {k}",
                         "models": {name: [1 + (k + j) % 5, 3, 4] for j, name in enumerate(generators[:k % 4 * 2])}}
            for k in range(1600)}
    rows = read_genai_bench(write_json(tmp_path, "genai_image.json", data))
    expected = {(prompt_id, name) for prompt_id, record in data.items() for name in record["models"]}
    assert {(row["prompt_id"], row["system"]) for row in rows} == expected
    assert len(rows) == len(expected) == 400 * (0 + 2 + 4 + 6)
    assert not any(row["prompt_id"] == "00000" for row in rows)  # a prompt that rates none gives no row
    assert {row["image"] for row in rows if row["prompt_id"] == "00001"} == {"DALLE_3/00001.jpeg",
                                                                             "SDXL_Turbo/00001.jpeg"}


def test_genai_bench_without_any_rating_is_refused(tmp_path):
    data = {"00000": {"prompt": "a kite", "models": {}}, "00001": {"prompt": "a dog", "models": {}}}
    with pytest.raises(ValueError, match="no prompt rates any generator"):
        read_genai_bench(write_json(tmp_path, "genai_image.json", data))
    with pytest.raises(ValueError, match="prompt 00000: 'models' should map each generator to its ratings, got list"):
        read_genai_bench(write_json(tmp_path, "genai_image.json", {"00000": {"prompt": "a kite", "models": []}}))


def test_t2iscorescore_gives_no_negative_zero():
    rows = read_t2iscorescore(DATA / "t2iscorescore")
    error_free = [row["human"] for row in rows if row["errors"] == 0]
    assert error_free and all(math.copysign(1.0, human) == 1.0 for human in error_free)
