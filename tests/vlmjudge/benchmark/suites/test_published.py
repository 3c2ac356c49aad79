"""The readers of the public prompt sets, each on a fixture in its authors' exact layout."""
from __future__ import annotations

import json

import pytest

from vlmjudge.benchmark.suites import SuiteFormatError, load_suite
from vlmjudge.benchmark.suites.published import draw_coco, read_coco_rows, read_genai_bench


def test_genai_bench_reads_ids_prompts_skills_and_levels(suites_data):
    suite = load_suite("genai-bench", suite_file=suites_data / "genai-bench")
    assert suite.ids() == ["00001", "00002", "00003", "00004", "00005"]
    first, third, last = suite.prompts[0], suite.prompts[2], suite.prompts[4]
    assert first.prompt == "A potter shaping a tall blue vase on a wheel in a sunny workshop."
    assert first.categories == {"skill": ("attribute", "scene", "action relation"), "level": ("basic",)}
    assert third.categories == {"skill": ("spatial relation", "counting", "comparison"), "level": ("advanced",)}
    assert last.categories == {}  # an untagged prompt, as seven of the 1,600 are
    assert suite.kinds() == ["level", "skill"] and suite.tags("level") == ["advanced", "basic"]
    assert suite.subset == "1600" and suite.size == 1600 and suite.license.startswith("Apache-2.0")


def test_genai_bench_takes_the_image_json_itself_with_the_skills_beside_it(suites_data):
    suite = load_suite("genai-bench", suite_file=suites_data / "genai-bench" / "genai_image.json", subset="527")
    assert len(suite) == 5 and suite.subset == "527" and suite.size == 527


def test_genai_bench_levels_follow_the_papers_rule_when_the_file_has_none(suites_data, tmp_path):
    skills = json.loads((suites_data / "genai-bench" / "genai_skills.json").read_text())
    for level in ("basic", "advanced"):
        del skills[level]
    (tmp_path / "genai_skills.json").write_text(json.dumps(skills))
    prompts = read_genai_bench(suites_data / "genai-bench" / "genai_image.json", tmp_path / "genai_skills.json")
    assert [p.categories.get("level") for p in prompts] == [("basic",), ("basic",), ("advanced",), ("advanced",), None]


def test_genai_bench_refuses_a_skill_number_with_no_prompt(suites_data, tmp_path):
    (tmp_path / "genai_skills.json").write_text('{"counting": [3, 1600]}')
    with pytest.raises(SuiteFormatError, match=r"lists prompt 1600 \(key '01600'\), which genai_image.json lacks"):
        read_genai_bench(suites_data / "genai-bench" / "genai_image.json", tmp_path / "genai_skills.json")


def test_genai_bench_without_its_skills_file_is_refused(suites_data, tmp_path):
    (tmp_path / "genai_image.json").write_text((suites_data / "genai-bench" / "genai_image.json").read_text())
    with pytest.raises(SuiteFormatError, match="no genai_skills.json beside"):
        load_suite("genai-bench", suite_file=tmp_path)


def test_drawbench_reads_the_sheets_csv_quoting_and_its_categories(suites_data):
    suite = load_suite("drawbench", suite_file=suites_data / "drawbench")
    assert suite.ids() == [f"drawbench_{n}" for n in range(5)]
    assert suite.prompts[1].prompt == "Four mugs, each a different color."
    assert suite.prompts[2].prompt == 'A sign that says "Open Late".'
    assert suite.prompts[2].categories == {"category": ("Text",)}
    assert suite.tags("category") == ["Colors", "Conflicting", "Counting", "Descriptions", "Text"]


def test_partiprompts_keeps_each_prompt_exactly_as_published(suites_data):
    suite = load_suite("partiprompts", suite_file=suites_data / "partiprompts" / "PartiPrompts.tsv")
    assert suite.ids() == ["parti_0", "parti_1", "parti_2", "parti_3"]
    # a CSV reader would drop these quotes; the TSV is read literally
    assert suite.prompts[1].prompt == '"F R O S T" stenciled in white letters on a blue shed door.'
    assert suite.prompts[2].prompt.endswith("pond. ")
    assert suite.prompts[1].categories == {"category": ("Illustrations",), "challenge": ("Writing & Symbols",)}


def test_tifa_reads_its_ids_and_tags_each_prompt_with_its_source(suites_data):
    suite = load_suite("tifa-v1", suite_file=suites_data / "tifa-v1")
    assert suite.ids() == ["coco_100001", "coco_100002", "drawbench_7", "partiprompt_12", "paintskill_3"]
    assert suite.prompts[1].prompt == "two dogs chasing a ball across a snowy field "
    assert [p.categories["source"] for p in suite.prompts] == [
        ("coco",), ("coco",), ("drawbench",), ("partiprompt",), ("paintskill",)]


def test_coco_draw_is_seeded_deterministic_and_independent_of_row_order(coco_parquet, make_coco_parquet, tmp_path):
    import pyarrow.parquet as pq

    reversed_rows = pq.read_table(coco_parquet).to_pylist()[::-1]
    rows = [(r["cocoid"], r["split"], r["sentences"]) for r in reversed_rows]
    suite = load_suite("coco-captions", suite_file=coco_parquet.parent.parent, subset="3")
    again = load_suite("coco-captions", suite_file=make_coco_parquet(tmp_path / "r.parquet", rows), subset="3")
    assert suite.ids() == again.ids() and len(suite) == 3
    assert suite.ids() == sorted(suite.ids(), key=lambda i: int(i.rsplit("_", 1)[1]))
    assert "coco_image_318219" not in load_suite("coco-captions", suite_file=coco_parquet, subset="all").ids()


def test_coco_takes_each_images_first_caption_from_the_test_split(coco_parquet):
    rows = read_coco_rows(coco_parquet)
    assert (391895, "A man with a red helmet on a small moped on a dirt road. ") in rows
    assert all(cocoid != 318219 for cocoid, _ in rows)  # the train row is left out
    assert [p.id for p in draw_coco(rows, None)] == [f"coco_image_{c}" for c in sorted(c for c, _ in rows)]


def test_coco_reads_captions_kept_as_karpathys_raw_records(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"cocoid": 5, "sentences": [{"raw": "A kite over a beach.", "sentid": 1}]},
            {"cocoid": 9, "sentences": [{"raw": 3, "sentid": 2}]}]
    pq.write_table(pa.Table.from_pylist(rows[:1]), tmp_path / "ok.parquet")
    pq.write_table(pa.Table.from_pylist(rows[1:]), tmp_path / "bad.parquet")
    assert read_coco_rows(tmp_path / "ok.parquet") == [(5, "A kite over a beach.")]
    with pytest.raises(SuiteFormatError, match="caption must be text, got int"):
        read_coco_rows(tmp_path / "bad.parquet")


def test_coco_refuses_a_draw_larger_than_the_file(coco_parquet):
    with pytest.raises(SuiteFormatError, match="cannot draw 200 COCO images from a file of 5"):
        load_suite("coco-captions", suite_file=coco_parquet)


def test_coco_refuses_a_file_that_is_not_the_splits_parquet(suites_data):
    with pytest.raises(SuiteFormatError, match="not a readable parquet file"):
        load_suite("coco-captions", suite_file=suites_data / "drawbench" / "DrawBench Prompts - Sheet1.csv")


@pytest.mark.parametrize("suite, other", [
    ("partiprompts", "drawbench/DrawBench Prompts - Sheet1.csv"),
    ("drawbench", "partiprompts/PartiPrompts.tsv"),
    ("tifa-v1", "genai-bench/genai_image.json"),
    ("genai-bench", "tifa-v1/tifa_v1.0_text_inputs.json"),
])
def test_another_suites_file_is_refused_in_one_line(suites_data, tmp_path, suite, other):
    path = suites_data / other
    if suite == "genai-bench":  # give it a skills file, so that the layout of the prompts is what fails
        (tmp_path / "genai_image.json").write_text(path.read_text())
        (tmp_path / "genai_skills.json").write_text("{}")
        path = tmp_path / "genai_image.json"
    with pytest.raises(SuiteFormatError) as caught:
        load_suite(suite, suite_file=path)
    assert "\n" not in str(caught.value) and str(path.name) in str(caught.value)


@pytest.mark.parametrize("suite, file_name, content, message", [
    ("tifa-v1", "tifa_v1.0_text_inputs.json", "", "is empty"),
    ("tifa-v1", "tifa_v1.0_text_inputs.json", '[{"id": "a_1", "caption": NaN}]', "NaN is not valid JSON"),
    ("tifa-v1", "tifa_v1.0_text_inputs.json", '[{"id": "a_1", "caption": 7}]', "caption must be text, got int"),
    ("tifa-v1", "tifa_v1.0_text_inputs.json", '[{"id": "a_1", "caption": "x"}, {"id": "a_1", "caption": "y"}]',
     "prompt id 'a_1' appears twice"),
    ("tifa-v1", "tifa_v1.0_text_inputs.json", '[{"id": "a_1"}]', "expected an object with 'id' and 'caption'"),
    ("genai-bench", "genai_image.json", '{"00001": {"prompt": "a"}, "00001": {"prompt": "b"}}',
     "the key '00001' appears twice"),
    ("genai-bench", "genai_image.json", '{"00001": {"prompt": "a", "id": "00002"}}', "differs from its key"),
    ("genai-bench", "genai_image.json", '{"00001": {"text": "a"}}', "expected an object with a 'prompt'"),
    ("genai-bench", "genai_image.json", '{"00001": {"prompt": Infinity}}', "Infinity is not valid JSON"),
    ("drawbench", "DrawBench Prompts - Sheet1.csv", "Prompts,Category\nnan,Colors\n", "a missing value"),
    ("drawbench", "DrawBench Prompts - Sheet1.csv", "Prompts,Category\n", "holds no prompts"),
    ("partiprompts", "PartiPrompts.tsv", "Prompt\tCategory\tChallenge\tNote\n\tAnimals\tBasic\t\n", "prompt is empty"),
])
def test_a_bad_published_file_is_one_line(tmp_path, suite, file_name, content, message):
    import re

    (tmp_path / file_name).write_text(content)
    (tmp_path / "genai_skills.json").write_text("{}")
    with pytest.raises(SuiteFormatError, match=re.escape(message)) as caught:
        load_suite(suite, suite_file=tmp_path)
    assert "\n" not in str(caught.value)


def test_a_folder_where_a_suite_file_is_expected_is_refused(tmp_path):
    (tmp_path / "PartiPrompts.tsv").mkdir()
    with pytest.raises(SuiteFormatError, match="holds none of PartiPrompts.tsv"):
        load_suite("partiprompts", suite_file=tmp_path)
