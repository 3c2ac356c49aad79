"""A cache file is never trusted blindly: every stored answer is checked before it is served.

A stored value of the wrong shape, out of range or NaN is a miss (asked again, overwritten and
counted in `stats.cache_invalid`); a value that is no JSON at all, or a file damaged inside its
pages, is one `CacheFileError` naming the file and how to start afresh. Never a wrong score.
"""
import random
import sqlite3

import pytest
from PIL import Image

from vlmjudge import Request, load_judge
from vlmjudge.cache import CacheFileError, ResponseCache, cache_key
from vlmjudge.cli.exits import run_command

OPTIONS = ["Yes", "No"]
ANSWERS = {i: {"text": "Yes" if i % 3 else "No", "probs": {"Yes": 0.1 + 0.08 * i, "No": 0.3}} for i in range(10)}


def judge(cache, answers=ANSWERS):
    return load_judge(answers, backend="replay", key_fields=("item_id",), cache=cache)


def asks(n=10):
    return [Request(images=[Image.new("RGB", (4, 4), (20 * i, 0, 0))], text="Is it red?", meta={"item_id": i})
            for i in range(n)]


def overwrite(path, key, text):
    """Store raw text under `key`, as a damaged or foreign writer would."""
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE responses SET value = ? WHERE key = ?", (text, key))
    conn.close()


def key_of(j, request, op="choice_probs"):
    return cache_key(j.identity(), op, request.content_hash(), OPTIONS if op != "generate" else None)


def choice(probs, mass="null", bounds="{}"):
    """A stored choice answer (`OptionProbs.to_json`) around `probs`, as JSON text."""
    return f'{{"probs": {probs}, "mass": {mass}, "bounds": {bounds}}}'


@pytest.mark.parametrize("stored", [
    choice('{"foo": 1}'),                          # wrong keys: once served as eligibility 0.0, eligible
    choice('{"Yes": 7.5, "No": -6.5}'),            # out of range: once served as a probability of 7.5
    choice('{"Yes": NaN, "No": 0.5}'),             # NaN: once written as a bare NaN token into records
    choice('{"Yes": 0.5, "No": 0.4}'),             # no distribution: normalised values must sum to 1
    choice('{"Yes": true, "No": false}'),          # booleans are no probabilities
    choice('{"Yes": 0.5, "No": 0.5, "Maybe": 0}'),  # an extra key
    choice('{"Yes": 0.5, "No": 0.5}', mass="1.5"),  # an option mass above 1
    choice('{"Yes": 0.5, "No": 0.5}', bounds='{"Maybe": 0.1}'),  # a bound on no option
    '{"Yes": 0.25, "No": 0.75}',                   # the bare mapping stored before the option mass
    '[0.5, 0.5]',                                  # not an object at all
])
def test_a_bad_choice_entry_is_asked_again_and_overwritten(tmp_path, stored):
    path = tmp_path / "r.sqlite"
    requests = asks()
    truth = judge(path).choice_probs(requests, OPTIONS)
    overwrite(path, key_of(judge(None), requests[4]), stored)
    rerun = judge(path)
    assert rerun.choice_probs(requests, OPTIONS) == truth
    assert rerun.stats.cache_invalid == 1 and rerun.stats.model_calls == 1 and rerun.stats.cache_hits == 9
    again = judge(path)  # the entry was overwritten with the recomputed answer
    assert again.choice_probs(requests, OPTIONS) == truth and again.stats.cache_invalid == 0
    assert again.stats.model_calls == 0


@pytest.mark.parametrize("stored", [
    '{"text": 3, "finish_reason": "stop", "num_tokens": 1}',
    '{"text": "Yes", "finish_reason": "error", "num_tokens": 0}',
    '{"text": "Yes", "finish_reason": "stop", "num_tokens": -2}',
    '{"text": "Yes"}',
    '{"Yes": 1.0, "No": 0.0}',  # a choice answer where a text belongs
])
def test_a_bad_text_entry_is_asked_again(tmp_path, stored):
    path = tmp_path / "r.sqlite"
    requests = asks()
    truth = [a.text for a in judge(path).generate(requests)]
    overwrite(path, key_of(judge(None), requests[2], "generate"), stored)
    rerun = judge(path)
    assert [a.text for a in rerun.generate(requests)] == truth
    assert rerun.stats.cache_invalid == 1 and rerun.stats.model_calls == 1


def test_raw_probabilities_may_all_be_zero_but_not_sum_past_one(tmp_path):
    path = tmp_path / "r.sqlite"
    requests = asks(2)
    truth = judge(path).choice_probs(requests, OPTIONS, normalize=False)
    raw_key = cache_key(judge(None).identity(), "choice_probs_raw", requests[0].content_hash(), OPTIONS)
    overwrite(path, raw_key, choice('{"Yes": 0.0, "No": 0.0}', mass="0.0"))
    served = judge(path)
    assert served.choice_probs(requests, OPTIONS, normalize=False)[0] == {"Yes": 0.0, "No": 0.0}
    assert served.stats.cache_invalid == 0
    overwrite(path, raw_key, choice('{"Yes": 0.9, "No": 0.8}'))
    rerun = judge(path)
    assert rerun.choice_probs(requests, OPTIONS, normalize=False) == truth and rerun.stats.cache_invalid == 1


@pytest.mark.parametrize("stored", ["null", "not json at all", '{"Yes": 0.5, "No": ', None])
def test_a_value_that_is_no_json_answer_is_a_cache_file_error(tmp_path, stored):
    path = tmp_path / "r.sqlite"
    requests = asks(3)
    judge(path).choice_probs(requests, OPTIONS)
    if stored is None:  # SQL NULL: only a table made without our NOT NULL constraint can hold it
        with sqlite3.connect(path) as conn:
            conn.execute("ALTER TABLE responses RENAME TO old")
            conn.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute("INSERT INTO responses SELECT key, NULL FROM old")
        conn.close()
    else:
        overwrite(path, key_of(judge(None), requests[1]), stored)
    with pytest.raises(CacheFileError) as caught:
        judge(path).choice_probs(requests, OPTIONS)
    message = str(caught.value)
    assert str(path) in message and "--no-cache" in message and "move it aside" in message


def damaged_cache(tmp_path):
    """A valid cache of 3000 answers, then 8 KiB of seeded garbage over its middle pages."""
    path = tmp_path / "r.sqlite"
    cache = ResponseCache(path)
    cache.put_many((f"k{i}", {"text": f"answer {i} " * 8, "finish_reason": "stop", "num_tokens": 16})
                   for i in range(3000))
    cache.close()  # the last connection checkpoints the WAL into the file
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 8192] = random.Random(0).randbytes(8192)
    path.write_bytes(bytes(data))
    return path


def test_garbage_inside_the_pages_is_a_cache_file_error(tmp_path):
    path = damaged_cache(tmp_path)
    with pytest.raises(CacheFileError) as caught:
        ResponseCache(path).get_many([f"k{i}" for i in range(3000)])
    assert str(path) in str(caught.value) and "--no-cache" in str(caught.value)


def test_a_command_meeting_a_damaged_cache_says_one_line_and_exits_2(tmp_path, capsys):
    path = damaged_cache(tmp_path)

    def body():
        ResponseCache(path).get_many([f"k{i}" for i in range(3000)])

    assert run_command(body, "vlmjudge demo") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("vlmjudge demo: error: the response cache") and str(path) in err[0]


def test_nan_from_the_backend_is_a_failed_request_and_never_stored(tmp_path):
    path = tmp_path / "r.sqlite"
    requests = asks(2)
    broken = judge(path)
    broken._probs = lambda request, options, normalize=True: {"Yes": float("nan"), "No": float("nan")}
    assert broken.choice_probs(requests, OPTIONS) == [{}, {}]
    assert broken.stats.invalid_answers == 2 and len(ResponseCache(path)) == 0
    with pytest.raises(ValueError, match="NaN or Infinity"):
        ResponseCache(path).put_many([("k", {"Yes": float("nan")})])


def test_a_text_answer_that_would_fail_the_check_is_served_but_not_stored(tmp_path):
    from vlmjudge.requests import Answer
    path = tmp_path / "r.sqlite"
    odd = judge(path)
    odd._generate = lambda chunk: [Answer("Yes", "stop", -1) for _ in chunk]
    assert [a.text for a in odd.generate(asks(2))] == ["Yes", "Yes"] and len(ResponseCache(path)) == 0


def test_terravis_rescores_exactly_after_its_cached_decisions_are_corrupted(tmp_path, tiny_vlm_path):
    """End to end on a tiny random model: every cached decision replaced by an out-of-range one."""
    from terravis import TerraVis, load_pack
    pack = load_pack({"system": "Judge the image.", "eligibility": "Is it a real scene?",
                      "detection": "Answer Yes or No.",
                      "severity": "{type_name}: {aspect}, {evidence}. Major or Minor?",
                      "limits": {"reason": 6, "aspect": 4, "evidence": 8},
                      "max_new_tokens": {"reason": 16, "evidence": 40}})
    images = [Image.new("RGB", (48, 40), (200, 30, 30)), Image.new("RGB", (40, 48), (30, 30, 200))]
    path = tmp_path / "r.sqlite"

    def score():
        j = load_judge(tiny_vlm_path(yes_bias=7.75), device="cpu", batch_size=16, cache=str(path))
        return j, [r.to_json() for r in TerraVis(j, pack=pack, decision="choice").score(images)]

    first_judge, first = score()
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT key, value FROM responses").fetchall()
        decisions = [key for key, value in rows if '"text"' not in value]
        conn.executemany("UPDATE responses SET value = ? WHERE key = ?",
                         [(choice('{"Yes": 7.5, "No": -6.5}'), key) for key in decisions])
    conn.close()
    assert decisions and first_judge.stats.model_calls > len(decisions)
    rerun_judge, again = score()
    assert again == first
    assert rerun_judge.stats.cache_invalid == len(decisions) == rerun_judge.stats.model_calls
    assert all(0.0 <= r["eligibility_prob"] <= 1.0 for r in again if r.get("eligibility_prob") is not None)



def test_terravis_score_over_a_damaged_default_cache_is_one_line_and_status_2(tmp_path, tiny_vlm_path, capsys):
    """The CLI path end to end: `vlmjudge terravis score` finds its default cache damaged."""
    from vlmjudge.cli import main
    from vlmjudge.outputs import default_cache_path
    (tmp_path / "imgs").mkdir()
    Image.new("RGB", (64, 64), (90, 120, 60)).save(tmp_path / "imgs" / "a.png")
    out = tmp_path / "r.jsonl"
    damaged_cache(tmp_path).rename(default_cache_path(out))
    model = tiny_vlm_path()
    capsys.readouterr()  # the fixture's own output, when it builds the model here
    status = main(["terravis", "score", str(tmp_path / "imgs"), "--model", model, "--device", "cpu",
                   "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error:" in line]  # beside the weights' loading bar
    assert status == 2 and "Traceback" not in err and len(errors) == 1
    assert str(default_cache_path(out)) in errors[0] and "--no-cache" in errors[0]
    assert not out.exists()  # no records from a run that could not trust its cache
