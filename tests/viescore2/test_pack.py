"""Field configurations, the instruction builder, instruction packs, and training instructions."""
import json

import pytest

from viescore2.data import Annotation, build_sft
from viescore2.grid import CategoryGrids, Grid
from viescore2.pack import (Fields, InstructionPack, all_fields, build_instruction, default_template,
                                    fields_for_supervision, images_sentence, load_pack, training_instruction)


def test_fourteen_configurations_with_canonical_keys():
    fields = all_fields()
    assert len(fields) == 14 and len({f.key for f in fields}) == 14
    for f in fields:
        assert Fields.parse(f.key) == f
    assert Fields.parse("pq_sc+split+marks") == Fields("pq_sc", "split", True)
    assert Fields.parse("overall") == Fields("overall", "none", False)
    assert Fields.parse("grid") == Fields("none", "single", False)
    assert Fields.parse({"scores": "overall", "grid": "single"}).key == "overall+grid"
    assert Fields("pq_sc", "none").score_keys == ("pq", "sc")


@pytest.mark.parametrize("bad", ["", "marks", "overall+pq_sc", "grid+split", "pq_sc+grid+marks+marks", "colour"])
def test_bad_configurations_raise(bad):
    with pytest.raises((ValueError, TypeError)):
        Fields.parse(bad)


@pytest.mark.parametrize("fields", all_fields(), ids=lambda f: f.key)
def test_instruction_asks_for_exactly_the_requested_fields(fields):
    text = build_instruction("a red fox in snow", fields, n=8)
    assert 'Prompt: "a red fox in snow"' in text
    assert ("score: <0-10>/10" in text) == (fields.scores == "overall")
    assert ("pq: <0-10>/10" in text and "sc: <0-10>/10" in text) == (fields.scores == "pq_sc")
    assert ("8 x 8 grid" in text) == (fields.grid != "none")
    assert ("artifact:" in text and "misalign:" in text) == (fields.grid == "split")
    assert ("covers nearly all" in text) == fields.marks
    assert "{" not in text and "}" not in text  # every placeholder filled


def test_conditioning_images_first_generated_last():
    assert images_sentence(0) == "The image is the generated image to evaluate."
    two = build_instruction("make it blue", "pq_sc", num_conditioning=2)
    assert "The first 2 images are conditioning inputs" in two and "the last image is the generated image" in two
    assert "The first image is a conditioning input" in build_instruction("x", "overall", num_conditioning=1)
    with pytest.raises(ValueError):
        images_sentence(-1)


def test_prompt_is_inserted_once_and_never_reformatted():
    text = build_instruction("a sign reading {n} and {images}", "overall+grid", n=12)
    assert 'Prompt: "a sign reading {n} and {images}"' in text and "12 x 12 grid" in text


def test_pack_template_overrides_and_keeps_other_braces():
    template = "<eval>{prompt}</eval> grid={n} cond={num_conditioning} json={\"k\": 1}"
    assert build_instruction("cat", "overall", n=16, num_conditioning=3, pack=template) == \
        '<eval>cat</eval> grid=16 cond=3 json={"k": 1}'
    with pytest.raises(ValueError, match="prompt"):
        load_pack("no placeholder here")


def test_pack_per_configuration_and_json_file(tmp_path):
    pack = {"version": "ft-v3", "system": "You are VIEScore2.",
            "templates": {"pq_sc+split+marks": "JOINT {prompt}", "overall": "SCORE {prompt}"}}
    path = tmp_path / "pack.json"
    path.write_text(json.dumps(pack))
    for source in (pack, path, str(path)):
        loaded = load_pack(source)
        assert loaded.version == "ft-v3" and loaded.system == "You are VIEScore2."
        assert loaded.render("pq_sc+split+marks", "a dog") == "JOINT a dog"
        assert loaded.render("overall", "a dog") == "SCORE a dog"
        with pytest.raises(KeyError, match="pq_sc\\+grid"):
            loaded.render("pq_sc+grid", "a dog")
    assert load_pack(pack).sha256 == load_pack(path).sha256 != load_pack(None).sha256
    with pytest.raises(ValueError, match="unknown keys"):
        load_pack({"templates": "{prompt}", "extra": 1})


def test_callable_pack_gets_the_item():
    def pack(fields, prompt, n, num_conditioning):
        return f"{fields.key}|{prompt}|{n}|{num_conditioning}"
    assert build_instruction("p", "grid+marks", n=8, num_conditioning=1, pack=pack) == "grid+marks|p|8|1"


def test_builtin_pack_renders_the_default_template():
    """The shipped pack asks for what the fields name: one overall score, a 16 x 16 grid, the two
    category sections, and no PQ/SC axes or coverage marks (which other field sets ask for)."""
    text = InstructionPack().template("overall+split")
    assert text == default_template("overall+split")
    rendered = text.format(images="", prompt="a red fox", n=16)
    assert '"a red fox"' in rendered and "16 x 16 grid" in rendered
    assert "artifact:" in rendered and "misalign:" in rendered
    assert "0 (worst) to 10 (best)" in rendered
    with_marks = default_template("pq_sc+split+marks")
    assert "!" in with_marks and "!" not in text


def test_training_instruction_matches_each_example_supervision():
    grid = Grid(frozenset({(2, 3)}), frozenset({(2, 3)}), 16)
    both = Annotation(image="img", prompt="a cat", conditioning=["src"], scores={"pq": 7, "sc": 4},
                      localization=CategoryGrids(grid, Grid(n=16)), id="a")
    score_only = Annotation(image="img", prompt="a dog", scores={"score": 6}, id="b")
    grid_only = Annotation(image="img", prompt="a cow", localization=grid, id="c")
    examples = build_sft([both, score_only, grid_only], training_instruction(n=16), clean_share=0.5)
    texts = {e["id"]: e["prompt"][0]["content"][-1]["text"] for e in examples}
    assert texts["a"] == build_instruction("a cat", "pq_sc+split+marks", 16, num_conditioning=1)
    assert texts["b"] == build_instruction("a dog", "overall", 16)
    assert texts["c"] == build_instruction("a cow", "grid+marks", 16)
    assert "grid" not in texts["b"]
    assert fields_for_supervision({"score": 5}, None, marks=True) == Fields("overall", "none", False)
    with pytest.raises(ValueError, match="match no configuration"):
        fields_for_supervision({"pq": 5}, None)


def test_sft_and_grpo_builders_default_to_the_training_instruction():
    from viescore2.data import build_grpo
    grid = Grid(frozenset({(1, 1)}), frozenset(), 8)
    split = Annotation(image="img", prompt="a cat", conditioning=["s1", "s2"], scores={"pq": 7, "sc": 4},
                       localization=CategoryGrids(grid, Grid(n=8)), id="a", coverage=True)  # a heatmap source
    score_only = Annotation(image="img", prompt="a dog", scores={"score": 6}, id="b")
    for build in (build_sft, build_grpo):
        for marks in (True, False):
            texts = {e["id"]: e["prompt"][0]["content"][-1]["text"] for e in build([split, score_only], marks=marks)}
            assert texts["a"] == build_instruction("a cat", Fields("pq_sc", "split", marks), 8, num_conditioning=2)
            assert texts["b"] == build_instruction("a dog", "overall", 16)
    # a mask source has no coverage supervision: its instruction never asks for marks (issue 24 item 6)
    mask = Annotation(image="img", prompt="a cat", localization=grid, id="m", coverage=False)
    assert build_sft([mask])[0]["prompt"][0]["content"][-1]["text"] == build_instruction(
        "a cat", Fields("none", "single", False), 8)
