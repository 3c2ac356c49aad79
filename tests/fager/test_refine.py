"""Refinement: keep / edit / regenerate over generators, re-evaluation, before/after report, resume."""
from __future__ import annotations

import json

import pytest
from PIL import Image

from fager.core import Fager
from fager.refine import item_seed, refine, regeneration_prompt
from fager.saved_runs import read_details, read_summary
from fager.schema import QAItem, QASet

from fagent_helpers import keyed_replay, noise

PROMPTS = {"a": "a red apple", "b": "a blue mug", "c": "a green kite", "d": "a yellow boat"}


def qa_for(item):
    prompt = PROMPTS[item]
    return QASet(prompt=prompt, index=item, items=[
        QAItem(question=f"Is {prompt} shown?", level="level_1", category="existence", importance="high",
               source_fact=f"{prompt} is shown"),
        QAItem(question="Is the main object whole?", level="level_2", category="shape", importance="medium",
               source_fact="the object is whole")])


def ans(*answers):
    texts = [json.dumps({"answer": a, "rationale": "seen"}) for a in answers]
    return texts[0] if len(texts) == 1 else texts


def scripted_judge(items):
    """keep for a; edit then keep for b; regenerate then keep for c and d (answers served in turn)."""
    answers = {("a", 0): ans("yes"), ("a", 1): ans("yes"),
               ("b", 0): ans("yes"), ("b", 1): ans("no", "yes"),
               ("b", "feedback"): json.dumps({"instruction": "make the mug whole"})}
    for item in ("c", "d"):
        answers.update({(item, 0): ans("no", "yes"), (item, 1): ans("yes"),
                        (item, "feedback"): json.dumps({"constraint": "one kite in the sky"})})
    return keyed_replay({k: v for k, v in answers.items() if k[0] in items})


def run(tmp_path, items, generator=None, editor=None, rounds=1, **kwargs):
    fager = Fager(scripted_judge(items))
    return refine(fager, [noise(i, (32, 32)) for i in range(len(items))], [PROMPTS[i] for i in items],
                  out_dir=tmp_path, generator=generator, editor=editor, rounds=rounds,
                  qa_sets=[qa_for(i) for i in items], ids=list(items), **kwargs)


class Recorder:
    """A generator or editor callable that remembers its calls and can fail after n images."""

    def __init__(self, colour, fail_after=None):
        self.colour, self.fail_after, self.calls = colour, fail_after, []

    def __call__(self, *args):
        texts, seeds = args[-2], args[-1]
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise RuntimeError("killed")
        self.calls.append((list(texts), list(seeds)))
        return [Image.new("RGB", (32, 32), self.colour) for _ in texts]


def test_refine_with_callables_records_decisions_and_rescored_results(tmp_path):
    generator, editor = Recorder((0, 200, 0)), Recorder((0, 0, 200))
    report = run(tmp_path, "abc", generator, editor)
    assert report.decisions == [{"keep": 1, "edit": 1, "regenerate": 1}, {"keep": 3}]
    assert report.mean_before == pytest.approx((100 + 50 + 0) / 3) and report.mean_after == 100.0
    assert generator.calls == [([regeneration_prompt("a green kite", "one kite in the sky")], [item_seed("c", 1)])]
    assert generator.calls[0][0] == ["a green kite, one kite in the sky"]
    assert editor.calls == [(["make the mug whole"], [item_seed("b", 1)])]
    steps = {item.id: item.steps[0] for item in report.items}
    assert (steps["a"].action, steps["a"].status, steps["a"].image_file) == ("keep", "unchanged", None)
    assert (steps["b"].action, steps["b"].status, steps["b"].score_before, steps["b"].score_after) == \
        ("edit", "done", 50.0, 100.0)
    assert (steps["c"].decision_before, steps["c"].decision_after) == ("regenerate", "keep")
    assert Image.open(tmp_path / "round_1/images/c.png").getpixel((0, 0)) == (0, 200, 0)
    assert Image.open(tmp_path / "round_1/images/b.png").getpixel((0, 0)) == (0, 0, 200)
    assert [v.decision for v in read_details(tmp_path / "round_0/verdicts.jsonl")] == ["keep", "edit", "regenerate"]
    assert [r["decision"] for r in read_summary(tmp_path / "round_1/summary.csv")] == ["keep"] * 3
    assert json.loads((tmp_path / "report.json").read_text())["mean_after"] == 100.0
    assert "50.00" in (tmp_path / "report.md").read_text()


def test_missing_tools_leave_images_unchanged(tmp_path):
    report = run(tmp_path, "bc")
    assert [s.steps[0].status for s in report.items] == ["no_editor", "no_generator"]
    assert report.generated == 0 and report.decisions[1] == report.decisions[0]


def test_a_killed_run_resumes_without_regenerating_saved_images(tmp_path):
    with pytest.raises(RuntimeError, match="killed"):
        run(tmp_path, "cd", Recorder((9, 9, 9), fail_after=1))
    assert (tmp_path / "round_1/images/c.png").is_file() and not (tmp_path / "round_1/images/d.png").exists()
    second = Recorder((9, 9, 9))
    report = run(tmp_path, "cd", second)
    assert second.calls == [(["a yellow boat, one kite in the sky"], [item_seed("d", 1)])]
    assert (report.generated, report.reused) == (1, 1)
    third = Recorder((9, 9, 9))
    report = run(tmp_path, "cd", third)
    assert third.calls == [] and (report.generated, report.reused) == (0, 2)
    # another seed is another image: nothing is reused
    fourth = Recorder((9, 9, 9))
    run(tmp_path, "cd", fourth, seed=5)
    assert len(fourth.calls) == 2


def test_rounds_are_configurable(tmp_path):
    generator = Recorder((1, 2, 3))
    report = run(tmp_path, "c", generator, rounds=2)
    assert report.rounds == 2 and len(report.items[0].steps) == 2
    assert report.items[0].steps[1].action == "keep" and len(generator.calls) == 1
    assert (tmp_path / "round_2/verdicts.jsonl").is_file()
    with pytest.raises(ValueError, match="rounds"):
        run(tmp_path, "c", rounds=0)


@pytest.fixture(scope="module")
def tiny_diffusers(tmp_path_factory):
    from vlmjudge.testing.tiny_diffusers import build_tiny_image_edit, build_tiny_text_to_image
    root = tmp_path_factory.mktemp("fagent-diffusers")
    return build_tiny_text_to_image(root / "t2i"), build_tiny_image_edit(root / "edit")


def test_refine_regenerates_with_a_tiny_diffusers_text_to_image_pipeline(tmp_path, tiny_diffusers):
    from vlmjudge.generators import DiffusersTextToImage
    t2i = DiffusersTextToImage.from_pretrained(tiny_diffusers[0], device="cpu", num_inference_steps=2,
                                               height=32, width=32)
    report = run(tmp_path, "c", t2i)
    step = report.items[0].steps[0]
    assert (step.action, step.status, step.decision_after, step.score_after) == ("regenerate", "done", "keep", 100.0)
    made = Image.open(tmp_path / step.image_file)
    assert made.size == (32, 32)
    again = DiffusersTextToImage.from_pretrained(tiny_diffusers[0], device="cpu", num_inference_steps=2,
                                                 height=32, width=32)(["a green kite, one kite in the sky"],
                                                                      [step.seed])[0]
    assert list(made.getdata()) == list(again.getdata())  # the seed recorded reproduces the image


def test_refine_edits_with_a_tiny_diffusers_edit_pipeline(tmp_path, tiny_diffusers):
    from vlmjudge.generators import DiffusersImageEdit
    editor = DiffusersImageEdit.from_pretrained(tiny_diffusers[1], device="cpu", num_inference_steps=2)
    report = run(tmp_path, "b", editor=editor)
    step = report.items[0].steps[0]
    assert (step.action, step.status, step.text, step.decision_after) == ("edit", "done", "make the mug whole", "keep")
    assert Image.open(tmp_path / step.image_file).size == (32, 32)
    manifest = [json.loads(line) for line in (tmp_path / "round_1/manifest.jsonl").read_text().splitlines()]
    assert manifest[0]["action"] == "edit" and manifest[0]["source"]
