"""What a leaderboard cannot be built from is one line (a LeaderboardError, a ValueError the command
turns into exit status 2), raised before any number is computed: hostile values, another method's
file, a missing or broken manifest, duplicate ids, an empty run, a folder for a file, bad settings."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from vlmjudge.benchmark.leaderboard import build_leaderboard
from vlmjudge.benchmark.leaderboard_runs import LeaderboardError
from vlmjudge.outputs import manifest_path

IDS = ("p0", "p1", "p2", "p3", "p4", "p5")


@pytest.fixture
def runs(make_runs):
    return make_runs({model: {"terravis": {i: 0.1 * (k + m) for k, i in enumerate(IDS)},
                              "viescore2": {i: 1.0 + k + m for k, i in enumerate(IDS)}}
                      for m, model in enumerate(("A", "B"))})


def raw_lines(path: str, *lines: str) -> None:
    """Replace a run's records with raw JSON-lines text (what a writer of this project never writes)."""
    Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def first_good(path: str) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()[1:]


def hostile_score(text: str):
    def mutate(runs, tmp_path):
        path = runs["A"]["terravis"]
        raw_lines(path, f'{{"id": "p0", "status": "scored", "score": {text}, "checks": []}}', *first_good(path))
    return mutate


def swap_methods(runs, tmp_path):
    runs["A"]["terravis"], runs["A"]["viescore2"] = runs["A"]["viescore2"], runs["A"]["terravis"]


def write_manifest_text(text: str):
    def mutate(runs, tmp_path):
        manifest_path(runs["B"]["viescore2"]).write_text(text)
    return mutate


def lines(*text: str):
    def mutate(runs, tmp_path):
        raw_lines(runs["B"]["terravis"], *text)
    return mutate


def set_run(value):
    def mutate(runs, tmp_path):
        runs["B"]["terravis"] = value(tmp_path) if callable(value) else value
    return mutate


def other_judge(runs, tmp_path):
    path = manifest_path(runs["B"]["terravis"])
    path.write_text(json.dumps({**json.loads(path.read_text()), "model": "another-judge"}))


def drop_method(runs, tmp_path):
    del runs["B"]["viescore2"]


def unknown_method(runs, tmp_path):
    for model in runs:
        runs[model]["no-such-method"] = runs[model].pop("viescore2")


def same_file_twice(runs, tmp_path):
    runs["B"]["terravis"] = runs["A"]["terravis"]


def no_common_prompt(runs, tmp_path):
    for model, prefix in (("A", "p0"), ("B", "p1")):
        for method in ("terravis", "viescore2"):
            path = runs[model][method]
            kept = [line for line in Path(path).read_text().splitlines() if f'"id": "{prefix}"' in line]
            raw_lines(path, *kept)


CASES = {
    "Infinity score": (hostile_score("Infinity"), "no NaN or Infinity"),  # the words of vlmjudge.run_records
    "NaN score": (hostile_score("NaN"), "no NaN or Infinity"),
    "score as text": (hostile_score('"0.5"'), "not a number"),
    "score as a bool": (hostile_score("true"), "not a number"),
    "score of 1e308": (hostile_score("1e308"), "outside terravis's score range"),
    "score of 10**400": (hostile_score("1" + "0" * 400), "too large"),
    "another method's file": (swap_methods, "manifest says method"),
    "missing manifest": (lambda runs, tmp: manifest_path(runs["B"]["viescore2"]).unlink(), "no manifest"),
    "manifest that is a list": (write_manifest_text("[1, 2]"), "must be a JSON object"),
    "broken manifest": (write_manifest_text('{"method": '), "not valid JSON"),
    "duplicate ids": (lines('{"id": "p0", "status": "scored", "score": 0.5}',
                            '{"id": "p0", "status": "scored", "score": 0.6}'), "appears twice"),
    "empty run": (lines(), "holds no record"),
    "line that is not JSON": (lines("not json at all"), "not valid JSON"),
    "line that is a list": (lines("[1, 2]"), "expected a JSON object"),
    "record without the schema": (lines('{"score": 0.5, "id": "p0"}'), "starts with id, status, score"),
    "unknown status": (lines('{"id": "p0", "status": "great", "score": 0.5}'), "not one of"),
    "id of no prompt": (lines('{"id": "p0.png", "status": "scored", "score": 0.5}'), "name no prompt"),
    "binary file": (set_run(lambda tmp: _binary(tmp)), "is not UTF-8 text"),
    "folder for a file": (set_run(lambda tmp: str(tmp)), "is a folder"),
    "missing file": (set_run(lambda tmp: str(tmp / "gone.jsonl")), "no such file"),
    "a number for a path": (set_run(3), "expected a path"),
    "runs of another judge": (other_judge, "not scored alike"),
    "a model without a method": (drop_method, "every model needs a run of every method"),
    "unknown method": (unknown_method, "no method 'no-such-method'"),
    "one file for two runs": (same_file_twice, "given twice"),
    "no prompt in every run": (no_common_prompt, "nothing pairs the models"),
}


def _binary(tmp_path: Path) -> str:
    path = tmp_path / "binary" / "records.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"\xff\xfe\x00\x81garbage\n")
    manifest_path(path).write_text(json.dumps({"method": "terravis", "model": "tiny-judge"}))
    return str(path)


@pytest.mark.parametrize("case", CASES)
def test_bad_runs_are_one_line(case, runs, suite_of, tmp_path):
    mutate, words = CASES[case]
    mutate(runs, tmp_path)
    with pytest.raises(LeaderboardError) as caught:
        build_leaderboard(runs, suite_of(), n_resamples=5)
    assert words in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("settings, words", [
    ({"n_resamples": 0}, "n_resamples"), ({"n_resamples": True}, "n_resamples"), ({"n_resamples": 2.5}, "n_resamples"),
    ({"n_resamples": 10 ** 7}, "n_resamples"), ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"),
    ({"confidence": 1.0}, "confidence"), ({"confidence": float("nan")}, "confidence"), ({"confidence": "0.9"}, "confidence"),
])
def test_bad_settings_are_one_line(settings, words, runs, suite_of):
    with pytest.raises(LeaderboardError, match=words):
        build_leaderboard(runs, suite_of(), **settings)


@pytest.mark.parametrize("given, words", [
    ([], "runs must map"), ({}, "empty"), ({"": {"terravis": "x"}}, "model name"), ({"A": {}}, "give its runs"),
    ({"A": ["terravis"]}, "give its runs"), ({"A": {3: "x"}}, "method name"),
])
def test_runs_that_are_not_a_model_to_method_map_are_one_line(given, words, suite_of):
    with pytest.raises(LeaderboardError, match=words):
        build_leaderboard(given, suite_of())


def test_a_suite_that_is_not_a_prompt_suite_is_one_line(runs):
    with pytest.raises(LeaderboardError, match="PromptSuite"):
        build_leaderboard(runs, ["p0", "p1"])
