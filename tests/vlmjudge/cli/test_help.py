"""Issue 23 part 4: help that explains itself, and a rerun that says it is resuming.

Every option of every judging command has a help text, and each one that takes a value says
its default; `viescore2 evaluate --help` shows no RST markup and no internal names; `terravis
score --help` says where the cache goes and what each --variant is. A rerun over a response
cache prints "resuming: N of M done" (terravis score, viescore2 score, fager score; regeneration
compare has its own test), a first run prints nothing of the kind.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import re

import pytest
from PIL import Image

from vlmjudge.cli import build_parser
from vlmjudge.cli import main as vlmjudge_main

JUDGING_COMMANDS = [("terravis", "score"), ("viescore2", "score"), ("viescore2", "evaluate"), ("fager", "rubric"),
                    ("fager", "score"), ("fager", "refine"), ("regeneration", "run"), ("regeneration", "benchmark"),
                    ("regeneration", "compare"), ("vqascore", "score"), ("tifa", "score")]
BACKEND = "cli_bad_inputs_judge:ConstantJudge"


def subcommand(method: str, name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for path in (method, name):
        (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = sub.choices[path]
    return parser


def help_text(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        vlmjudge_main([*argv, "--help"])
    return out.getvalue()


def rendered_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """An option's help as --help prints it (the formatter's default added)."""
    return parser._get_formatter()._expand_help(action) if action.help else ""


@pytest.mark.parametrize("method,name", JUDGING_COMMANDS, ids=[" ".join(c) for c in JUDGING_COMMANDS])
def test_every_option_explains_itself_and_its_default(method, name):
    parser = subcommand(method, name)
    unexplained, no_default = [], []
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        text = rendered_help(parser, action)
        if len(text.split()) < 2:
            unexplained.append(action.option_strings[0])
        takes_value = action.nargs != 0
        says = "default" in text.lower() or "(required" in text.lower()  # --model, --out: needed to run
        if takes_value and not action.required and not says:
            no_default.append(action.option_strings[0])
    assert not unexplained, f"{method} {name}: options without an explanation: {unexplained}"
    assert not no_default, f"{method} {name}: options whose default --help does not give: {no_default}"


def test_a_default_shows_in_the_printed_help():
    text = " ".join(help_text(["terravis", "score"]).split())
    assert "written as each chunk finishes (default: 16)" in text
    assert "(default: 0.5)" in text  # --alpha, from the formatter, not from its help text


@pytest.mark.parametrize("name", ["evaluate", "score"])
def test_viescore2_help_has_no_rst_markup_or_internal_names(name):
    text = help_text(["viescore2", name])
    assert "``" not in text and "`" not in text
    assert not re.search(r":(func|class|mod|meth|attr):", text)
    assert "SCORE_HELP" not in text and "evaluate_suite" not in text
    if name == "evaluate":
        assert "Evaluate saved judge outputs" in text and '{"id": "img-1", "text": "<judge output>"}' in text


def test_terravis_score_help_gives_the_cache_default_and_each_variant():
    text = " ".join(help_text(["terravis", "score"]).split())
    assert "default: beside --out, results.jsonl -> results.cache.sqlite" in text
    options = text[text.index("options:"):]
    variant = options[options.index("--variant {workflow,holistic,gptscore}"):]
    variant = variant[:variant.index("--lam")]
    for choice, words in (("workflow", "staged TerraVis judge"), ("holistic", "TerraVis-H"),
                          ("gptscore", "generic 1-5 quality rating")):
        assert f"{choice}: " in variant and words in variant, variant
    assert "(default: workflow)" in variant


# -- resuming ---------------------------------------------------------------------------------

def run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = vlmjudge_main(argv)
    return code, err.getvalue()


def images(folder, n: int = 3):
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(n):
        Image.new("RGB", (64, 64), (60 * k, 90, 160)).save(folder / f"img{k}.png")
    return sorted(folder.iterdir())


def terravis_argv(tmp_path, folder):
    return ["terravis", "score", str(folder), "--model", "m", "--backend", BACKEND,
            "--out", str(tmp_path / "tv" / "results.jsonl"), "--quiet"]


def viescore2_argv(tmp_path, folder):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("".join(f"a picture of {p.stem}\n" for p in sorted(folder.iterdir())))
    return ["viescore2", "score", str(folder), "--prompts", str(prompts), "--fields", "overall", "--backend",
            BACKEND, "--model", "m", "--out", str(tmp_path / "vs2" / "results.jsonl"),
            "--cache", str(tmp_path / "vs2.sqlite")]


def fager_argv(tmp_path, folder):
    from fager.qa_store import format_qa_csv
    from fager.schema import QAItem, QASet
    files = sorted(folder.iterdir())
    items = tmp_path / "items.csv"
    items.write_text("index,prompt,image\n" + "".join(f"{p.stem},a {p.stem},{p.relative_to(tmp_path)}\n"
                                                       for p in files))
    qa = [QASet(index=p.stem, prompt=f"a {p.stem}",
                items=[QAItem(level="level_1", category="existence", importance="high",
                              question=f"Is a {p.stem} shown?", source_fact=f"A {p.stem} is shown")])
          for p in files]
    (tmp_path / "QA.csv").write_text(format_qa_csv(qa))
    return ["fager", "score", str(items), "--qa", str(tmp_path / "QA.csv"), "--backend", BACKEND, "--model", "m",
            "--out", str(tmp_path / "fager_run" / "details.jsonl"), "--cache", str(tmp_path / "fager.sqlite")]


@pytest.mark.parametrize("build", [terravis_argv, viescore2_argv, fager_argv], ids=["terravis", "viescore2", "fager"])
def test_a_rerun_says_it_is_resuming(build, tmp_path):
    folder = tmp_path / "images"
    images(folder, 3)
    argv = build(tmp_path, folder)
    code, err = run(argv)
    assert code == 0, err
    assert "resuming" not in err
    code, err = run(argv)
    assert code == 0 and "resuming: 3 of 3 done" in err, err
    images(folder, 4)  # one new image: three of the four are done
    argv = build(tmp_path, folder)
    code, err = run(argv)
    assert code == 0 and "resuming: 3 of 4 done" in err, err


@pytest.mark.parametrize("build,other", [(terravis_argv, ["--variant", "gptscore"]),
                                         (viescore2_argv, ["--fields", "pq_sc"])], ids=["terravis", "viescore2"])
def test_a_rerun_with_other_questions_does_not_claim_to_resume(build, other, tmp_path):
    folder = tmp_path / "images"
    images(folder, 2)
    argv = build(tmp_path, folder)
    assert run(argv)[0] == 0
    code, err = run([*argv, *other])  # other questions: the cached answers do not fit them
    assert code == 0 and "resuming" not in err, err
    code, err = run([*argv, *other])
    assert code == 0 and "resuming: 2 of 2 done" in err, err
