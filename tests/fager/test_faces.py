"""FAGER's faces: the method spec, the torchmetrics metric (in Lightning), the evaluate module, the CLI,
and the Space app in a browser, all on replayed answers."""
from __future__ import annotations

import json
import math
import os

from pathlib import Path

import pytest
import torch

from fager import format_qa_csv, read_qa_csv
from fager.metric import FagerScore
from fager.core import Fager
from fager.spec import SPEC, parse_qa_value
from vlmjudge.registry import get_method
from vlmjudge.testing.conformance import check_method
from vlmjudge.text import format_score

from fagent_helpers import keyed_replay, noise
from interval_checks import check_printed, check_result_keys

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def test_spec_is_registered_and_passes_conformance(abo_five):
    assert get_method("fager") is SPEC
    batch = {"image": [noise(i) for i in range(5)], "prompt": abo_five["prompts"], "id": abo_five["ids"],
             "qa_set": [q.model_dump_json() for q in abo_five["qa"]]}
    records = check_method(SPEC, keyed_replay(abo_five["answers"]), batch)
    assert [r.score for r in records] == abo_five["scores"]
    shown = SPEC.render(records[0])
    assert shown["score_text"] == f"{format_score(abo_five['scores'][0])} (edit)"
    assert "Edit instruction" in shown["markdown"] and abo_five["qa"][0].items[0].question in shown["markdown"]
    assert SPEC.normalize(87.5) == 0.875


def kite_answers():
    """Replayed agent and evaluation answers for one prompt ("a kite", id "k") with one reference image."""
    rubric = {level: {c: {"importance": "low", "facts": []} for c in
                      ("existence", "counting", "relation", "shape", "size", "color", "posture", "scene", "others")}
              for level in ("level_1", "level_2", "level_3")}
    rubric["level_1"]["existence"] = {"importance": "high", "facts": ["A kite is shown"]}
    return {("k", "proposal"): json.dumps(rubric), ("k", "extraction:0"): json.dumps(
        {"status": "ok", "summary": "a kite", "visual_elements": ["red kite"], "confidence": 0.8, "notes": ""}),
        ("k", "verification"): json.dumps({"verified_rubric": rubric, "dropped": [], "added": []}),
        ("k", "qa"): json.dumps({"questions": ["Is a kite shown?"]}),
        ("k", 0): json.dumps({"answer": "unknown", "rationale": "too small"}),
        ("k", "feedback"): json.dumps({"instruction": "make the kite larger"})}


def test_spec_builds_with_references_when_no_qa_set_is_given():
    judge = keyed_replay(kite_answers())
    scorer = SPEC.build(judge)
    record = scorer.score_batch({"image": [noise(1)], "prompt": ["a kite"], "id": ["k"],
                                 "references": [noise(2)]})[0]
    assert (record.score, record.verdict.decision, record.verdict.feedback) == (50.0, "edit", "make the kite larger")
    assert [r.meta["question_id"] for _, r in judge.log][:2] == ["proposal", "extraction:0"]


def test_qa_values_in_every_form(abo_five):
    qa = abo_five["qa"][1]
    for value in (qa, qa.model_dump(), qa.model_dump_json(), format_qa_csv(abo_five["qa"])):
        assert parse_qa_value(value, qa.prompt).items == qa.items
    assert parse_qa_value("", qa.prompt) is None
    with pytest.raises(ValueError, match="QA.csv"):
        parse_qa_value("what is this", qa.prompt)
    with pytest.raises(ValueError, match="0 QA sets"):
        parse_qa_value(format_qa_csv(abo_five["qa"]), "another prompt")


def test_fagerscore_is_the_mean_overall_score_and_keeps_the_judge_out_of_state(abo_five):
    judge = keyed_replay(abo_five["answers"])
    metric = FagerScore(judge, qa_sets=abo_five["qa"])
    metric.update([noise(i) for i in range(3)], abo_five["prompts"][:3], ids=abo_five["ids"][:3])
    metric.update(torch.rand(2, 3, 16, 16), abo_five["prompts"][3:], ids=abo_five["ids"][3:])
    assert metric.compute().item() == pytest.approx(sum(abo_five["scores"]) / 5)
    assert metric.per_image().tolist() == abo_five["scores"]
    assert int(metric.scored) == 5 and int(metric.unscored) == 0
    details = metric.details()
    check_result_keys(details, "mean_overall", abo_five["scores"])  # the mean with its interval and n
    verdicts = Fager(keyed_replay(abo_five["answers"])).score([noise(i) for i in range(5)], abo_five["prompts"],
                                                              qa_sets=abo_five["qa"], ids=abo_five["ids"])
    for level in ("level_1", "level_2", "level_3"):
        check_result_keys(details, f"mean_{level}", [getattr(v.level_scores, level) for v in verdicts])
    metric.persistent(True)
    keys = set(metric.state_dict())
    assert keys == {"score_sum", "scored", "unscored", "parse_failures", "scores", "level_1_scores", "level_2_scores",
                    "level_3_scores"}
    metric.reset()
    assert math.isnan(metric.compute().item())


def test_fagerscore_logs_the_pipeline_mean_in_a_lightning_validation_loop(abo_five):
    import lightning as L
    from torch.utils.data import DataLoader

    images = [torch.rand(3, 16, 16) for _ in range(5)]
    rows = list(zip(images, abo_five["prompts"], abo_five["ids"]))
    expected = [v.score for v in Fager(keyed_replay(abo_five["answers"])).score(
        images, abo_five["prompts"], qa_sets=abo_five["qa"], ids=abo_five["ids"])]

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(1, 1)
            self.fager = FagerScore(keyed_replay(abo_five["answers"]), qa_sets=abo_five["qa"])

        def validation_step(self, batch, batch_idx):
            images, prompts, ids = batch
            self.fager.update(images, list(prompts), ids=list(ids))
            self.log("val_fager", self.fager, on_epoch=True, batch_size=len(prompts))

    loader = DataLoader(rows, batch_size=2, collate_fn=lambda b: (torch.stack([x[0] for x in b]),
                                                                 [x[1] for x in b], [x[2] for x in b]))
    trainer = L.Trainer(accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False,
                        enable_checkpointing=False)
    logged = trainer.validate(Module(), loader, verbose=False)[0]["val_fager"]
    assert logged == pytest.approx(sum(expected) / len(expected)) and expected == abo_five["scores"]


def test_evaluate_module_scores_images_with_qa_sets(abo_five, tmp_path, monkeypatch):
    import evaluate
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    module = evaluate.load(str(REPO / "metrics" / "fager"), cache_dir=str(tmp_path / "cache"))
    out = module.compute(images=[noise(i) for i in range(5)], prompts=abo_five["prompts"],
                         qa_sets=[q.model_dump_json() for q in abo_five["qa"]], ids=abo_five["ids"],
                         judge=keyed_replay(abo_five["answers"]))
    assert out["scores"] == abo_five["scores"] and out["fager"] == pytest.approx(sum(abo_five["scores"]) / 5)
    assert out["decisions"] == [r["next_step"]["decision"] for r in abo_five["records"]]
    assert out["n_scored"] == 5 and out["parse_failures"] == 0
    judge = keyed_replay(kite_answers())
    built = module.compute(images=[noise(1)], prompts=["a kite"], ids=["k"], reference_images=[noise(2)], judge=judge)
    assert (built["scores"], built["feedback"]) == ([50.0], ["make the kite larger"])
    assert [r.meta["stage"] for _, r in judge.log][:2] == ["proposal", "extraction"]
    with pytest.raises(ValueError, match="1 qa sets for 2 images"):
        module.compute(images=[noise(1), noise(2)], prompts=["a", "b"], qa_sets=["x"], judge=keyed_replay({}))
    metric_files = sorted(p.name for p in (REPO / "metrics" / "fager").iterdir() if not p.name.startswith("."))
    assert metric_files == ["README.md", "annotate.py", "app.py", "examples", "fager.py", "requirements.txt"]
    card = (REPO / "metrics" / "fager" / "README.md").read_text()
    assert card.startswith("---\n") and "sdk: gradio" in card and "app_file: app.py" in card
    assert "0.82" in card and "0.97" in card and "41/50" in card


def write_answers(path, answers):
    with open(path, "w") as handle:
        for (item, question), text in answers.items():
            handle.write(json.dumps({"meta": {"item_id": item, "question_id": question}, "text": text}) + "\n")


def test_cli_score_rubric_and_refine(abo_five, tmp_path, monkeypatch, capsys):
    from fager.cli import main
    monkeypatch.syspath_prepend(str(HERE))
    answers = tmp_path / "answers.jsonl"
    write_answers(answers, abo_five["answers"])
    (tmp_path / "img").mkdir()
    lines = ["index,prompt,image"]
    for i, (item, prompt) in enumerate(zip(abo_five["ids"], abo_five["prompts"])):
        noise(i).save(tmp_path / "img" / f"{item}.png")
        lines.append(f'{item},"{prompt}",img/{item}.png')
    (tmp_path / "items.csv").write_text("\n".join(lines) + "\n")
    (tmp_path / "QA.csv").write_text(format_qa_csv(abo_five["qa"]))
    judge_flags = ["--backend", "fagent_helpers:KeyedReplay", "--model", str(answers)]
    assert main(["score", str(tmp_path / "items.csv"), "--qa", str(tmp_path / "QA.csv"), *judge_flags,
                 "--out", str(tmp_path / "run" / "details.jsonl")]) == 0
    assert [float(r["overall_score"]) for r in __import__("fager").read_summary(tmp_path / "run/summary.csv")] \
        == [round(s, 2) for s in abo_five["scores"]]
    assert len((tmp_path / "run/details.jsonl").read_text().splitlines()) == 5
    printed = capsys.readouterr().out
    check_printed(printed, "mean ", abo_five["scores"])
    verdicts = [json.loads(line) for line in (tmp_path / "run/details.jsonl").read_text().splitlines()]
    for level in ("level_1", "level_2", "level_3"):
        values = [v["level_scores"][level] for v in verdicts]
        if any(value is not None for value in values):
            check_printed(printed, f"{level} ", values)
    # rubric: the agents' answers replayed for one prompt
    rubric = {lv: {c: {"importance": "low", "facts": []} for c in ("existence", "counting", "relation", "shape",
                                                                       "size", "color", "posture", "scene", "others")}
              for lv in ("level_1", "level_2", "level_3")}
    rubric["level_1"]["existence"]["facts"] = ["A bottle is shown"]
    write_answers(tmp_path / "agents.jsonl", {
        ("1", "proposal"): json.dumps(rubric), ("1", "qa"): json.dumps({"questions": ["Is a bottle shown?"]}),
        ("1", "verification"): json.dumps({"verified_rubric": rubric, "added": [], "dropped": []})})
    (tmp_path / "prompts.csv").write_text('index,prompt\n1,"Amazon Elements Melatonin 3mg, 260 Tablets"\n')
    assert main(["rubric", str(tmp_path / "prompts.csv"), "--backend", "fagent_helpers:KeyedReplay", "--model",
                 str(tmp_path / "agents.jsonl"), "--out", str(tmp_path / "built.csv")]) == 0
    built = read_qa_csv(tmp_path / "built.csv")
    assert [(q.index, [i.question for i in q.items]) for q in built] == [("1", ["Is a bottle shown?"])]
    # refine: edits go to a module:callable editor
    (tmp_path / "fagent_tools.py").write_text(
        "from PIL import Image\n"
        "def edit(images, instructions, seeds):\n"
        "    return [Image.new('RGB', (8, 8), (1, 2, 3)) for _ in images]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    refined = tmp_path / "refined"
    code = main(["refine", str(tmp_path / "items.csv"), "--qa", str(tmp_path / "QA.csv"), *judge_flags,
                 "--editor", "fagent_tools:edit", "--out", str(refined)])
    report = json.loads((refined / "report.json").read_text())
    assert code == 0 and report["generated"] == sum(d == "edit" for d in
                                                   (r["next_step"]["decision"] for r in abo_five["records"]))
    # bad input: a missing column is exit code 2 with the column named
    (tmp_path / "bad.csv").write_text("index,prompt\n1,x\n")
    assert main(["score", str(tmp_path / "bad.csv"), *judge_flags]) == 2
    assert "image" in capsys.readouterr().err


def test_space_app_scores_in_a_browser(abo_five, tmp_path, chromium_path):
    from browser import api_names, drive_app, looks_blank, serve_app
    from vlmjudge.hub.app import card_header
    app = REPO / "metrics" / "fager" / "app.py"
    answers = tmp_path / "answers.jsonl"
    item = abo_five["ids"][0]
    write_answers(answers, {("0", k[1]): v for k, v in abo_five["answers"].items() if k[0] == item})
    image = tmp_path / "image.png"
    noise(5).save(image)
    env = {"VLMJUDGE_MODEL": str(answers), "VLMJUDGE_BACKEND": "replay", "VLMJUDGE_KEY_FIELDS": "item_id,question_id",
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    with serve_app(app, env) as url:
        shown = drive_app(url, chromium_path, {"image": str(image)},
                          texts={"prompt": abo_five["prompts"][0], "qa_set": abo_five["qa"][0].model_dump_json()},
                          screenshot=tmp_path / "space.png")
        api = api_names(url)
    assert shown["score"] == f"{abo_five['scores'][0]:.2f} (edit)"
    assert "Edit instruction" in shown["details"] and abo_five["qa"][0].items[0].question in shown["details"]
    assert shown["heading"] == shown["page_title"] == card_header(app.with_name("README.md"))[0] == "FAGER"
    assert shown["labels"] == ["Generated image", "Prompt", "Reference image (optional)", "QA set (optional)"]
    assert shown["overlay_visible"] is False and shown["empty_panels"] == [] and not shown["title_blank"]
    assert not looks_blank((tmp_path / "space.png").read_bytes())
    assert api == {"/score": ["image", "prompt", "references", "qa_set", "Score", "Details"]}

    # the bundled example has no QA set: the agents build the rubric (replayed: the kite's) and score it
    write_answers(answers, {("0", question): text for (_, question), text in kite_answers().items()})
    with serve_app(app, env) as url:
        example = drive_app(url, chromium_path, example=0)
    assert example["score"] == "50.00 (edit)" and "make the kite larger" in example["details"]
    assert example["empty_panels"] == []


def test_vlmjudge_command_lists_the_fager_subcommands(capsys):
    from vlmjudge.cli import main as vlmjudge_main
    with pytest.raises(SystemExit) as exited:
        vlmjudge_main(["fager", "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert all(word in out for word in ("rubric", "score", "refine", "abtest", "rescore"))
