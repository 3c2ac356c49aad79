"""SFT/GRPO example builders: targets hold only the available supervision; clean examples are capped."""
import pytest

from viescore2.data import Annotation, build_grpo, build_sft, cap_clean, clean_cap, sft_example, target_text
from viescore2.grid import CategoryGrids, Grid
from viescore2.parsing import parse_output

INSTRUCTION = "Evaluate the image generated for: {prompt}"


def test_score_only_targets_have_no_grid_lines():
    a = Annotation(image="gen.png", prompt="a cat", scores={"score": 6.5})
    text = target_text(a)
    assert text == "score: 6.5/10"
    joint = target_text(Annotation(image="g.png", prompt="p", scores={"pq": 2, "sc": 9}))
    for line in (text + "\n" + joint).splitlines():
        assert line.split(":")[0] in ("score", "pq", "sc"), line  # no grid line, no 'none'
    parsed = parse_output(text)
    assert not parsed.grid_parsed  # missing supervision is not an empty grid


def test_targets_carry_exactly_the_supervision():
    clean = Annotation(image="c.png", prompt="p", localization=Grid())
    assert target_text(clean) == "none" and clean.clean_localization
    joint = Annotation(image="g.png", prompt="p", scores={"pq": 7, "sc": 4},
                       localization=CategoryGrids(Grid({(5, 8), (5, 9)}, {(5, 9)}), Grid()))
    assert target_text(joint) == "pq: 7/10\nsc: 4/10\nartifact:\nr5: 8,9!\nmisalign:\nnone"
    assert target_text(joint, marks=False) == "pq: 7/10\nsc: 4/10\nartifact:\nr5: 8,9\nmisalign:\nnone"
    with pytest.raises(ValueError):
        Annotation(image="x.png", prompt="p")


def test_example_layout_conditioning_images_first():
    a = Annotation(image="gen.png", prompt="make it blue", conditioning=["src.png"], scores={"score": 3})
    ex = sft_example(a, INSTRUCTION)
    assert ex["images"] == ["src.png", "gen.png"]
    content = ex["prompt"][0]["content"]
    assert [c["type"] for c in content] == ["image", "image", "text"]
    assert content[-1]["text"] == "Evaluate the image generated for: make it blue"
    assert ex["completion"] == [{"role": "assistant", "content": "score: 3/10"}]
    grpo = build_grpo([a], lambda ann: f"Judge: {ann.prompt}")
    assert grpo[0]["target"] == "score: 3/10" and grpo[0]["prompt"][0]["content"][-1]["text"] == "Judge: make it blue"


def test_clean_localization_examples_are_capped_at_the_share():
    defective = [Annotation(image=f"d{i}.png", prompt="p", localization=Grid({(1, 1)})) for i in range(60)]
    scored = [Annotation(image=f"s{i}.png", prompt="p", scores={"score": 5}) for i in range(30)]
    clean = [Annotation(image=f"c{i}.png", prompt="p", localization=Grid(), id=f"c{i}") for i in range(50)]
    corpus = defective + clean + scored
    kept = cap_clean(corpus, share=0.1, seed=3)
    n_clean = sum(a.clean_localization for a in kept)
    assert n_clean == 10 and len(kept) == 100  # 10 / (90 + 10) = 10%
    assert [a for a in kept if not a.clean_localization] == defective + scored  # order kept, nothing else dropped
    assert cap_clean(corpus, share=0.1, seed=3) == kept                        # deterministic
    assert sum(a.clean_localization for a in cap_clean(corpus, share=0.25)) == 30
    assert cap_clean(defective + clean[:5], share=0.1) == defective + clean[:5]  # under the cap: unchanged
    assert len(build_sft(corpus, INSTRUCTION, clean_share=0.1)) == 100
    assert clean_cap(9, 0.1) == 1 and clean_cap(8, 0.1) == 0
    with pytest.raises(ValueError):
        clean_cap(10, 1.0)


def test_instruction_template_needs_the_prompt():
    a = Annotation(image="g.png", prompt="p", scores={"score": 1})
    with pytest.raises(ValueError):
        sft_example(a, "Evaluate the image.")


def _instruction(example: dict) -> str:
    return example["prompt"][0]["content"][-1]["text"]


def test_marks_are_requested_only_where_the_source_has_coverage_supervision():
    """Paper Section 3.2 (grid construction) and 3.1: coverage marks come from heatmap annotations only
    (cells whose resized heatmap value is at least 0.9), and "during training, the requested fields match
    the available supervision". So a heatmap example asks for marks; a mask source and a clean image,
    which carry no coverage supervision, get an instruction without marks (issue 24 item 6)."""
    from viescore2.pack import training_instruction

    heatmap = Annotation(image="h.png", prompt="a fox", scores={"pq": 6, "sc": 7}, coverage=True,
                         localization=CategoryGrids(Grid({(5, 8), (5, 9)}, {(5, 9)}), Grid({(2, 2)})))
    heatmap_no_strong_cell = Annotation(image="h2.png", prompt="a fox", localization=Grid({(3, 3)}), coverage=True)
    mask = Annotation(image="m.png", prompt="a fox", localization=Grid({(5, 8), (5, 9)}), coverage=False)
    clean = Annotation(image="c.png", prompt="a fox", localization=Grid())
    with_marks, without_marks = training_instruction(marks=True), training_instruction(marks=False)
    assert with_marks(mask) != without_marks(mask)  # the two instructions differ in what they request

    sft = build_sft([heatmap, heatmap_no_strong_cell, mask, clean], clean_share=0.5)
    grpo = build_grpo([heatmap, heatmap_no_strong_cell, mask, clean], clean_share=0.5)
    for examples in (sft, grpo):
        assert [_instruction(e) for e in examples] == [with_marks(heatmap), with_marks(heatmap_no_strong_cell),
                                                       without_marks(mask), without_marks(clean)]
    assert sft[0]["completion"][0]["content"] == "pq: 6/10\nsc: 7/10\nartifact:\nr5: 8,9!\nmisalign:\nr2: 2"
    assert [e["target"] for e in grpo[1:]] == ["r3: 3", "r5: 8,9", "none"]
    # marks=False still turns marks off everywhere
    assert _instruction(build_sft([heatmap], marks=False)[0]) == without_marks(heatmap)
    assert "!" not in build_grpo([heatmap], marks=False)[0]["target"]


def test_coverage_supervision_defaults_to_the_marks_the_grid_holds():
    marked = Annotation(image="a.png", prompt="p", localization=Grid({(1, 1), (1, 2)}, {(1, 2)}))
    unmarked = Annotation(image="b.png", prompt="p", localization=Grid({(1, 1)}))
    marked_mask = Annotation(image="c.png", prompt="p", localization=Grid({(1, 1)}, {(1, 1)}), coverage=False)
    assert marked.coverage_supervised and not unmarked.coverage_supervised
    assert not marked_mask.coverage_supervised and target_text(marked_mask) == "r1: 1"
    assert not Annotation(image="d.png", prompt="p", localization=Grid(), coverage=True).coverage_supervised
    assert not Annotation(image="e.png", prompt="p", scores={"score": 4}, coverage=True).coverage_supervised


def test_unit_scores_are_written_as_the_release_writes_them():
    from viescore2.data import scores_from_unit
    assert scores_from_unit(score=0.25) == {"score": 2.0}  # Python's round: half to even
    assert scores_from_unit(score=0.35) == {"score": 4.0}
    assert scores_from_unit(score=0.73, integer=False) == {"score": pytest.approx(7.3)}
    assert scores_from_unit(score=0.9, axes=[0.6, 0.05]) == {"pq": 6.0, "sc": 0.0}  # axes replace the score
    assert scores_from_unit(score=0.9, axes=[None, 0.5]) == {"score": 9.0}
    assert scores_from_unit() == {}
    with pytest.raises(ValueError):
        scores_from_unit(axes=[0.5, None])
    with pytest.raises(ValueError):
        scores_from_unit(score=7)
