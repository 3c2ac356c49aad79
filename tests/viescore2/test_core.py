"""The VIEScore2 pipeline over a replay judge: requests, reading answers into records, counts, the spec."""
import math

import pytest
from PIL import Image

from viescore2 import VIEScore2, VIEScore2Record, build_instruction, read_answer, token_budget
from viescore2.schema import output_grammar  # the function; `viescore2.output_grammar` was a module before 0.1.0
from viescore2.grid import CategoryGrids, Grid
from viescore2.spec import SPEC
from vlmjudge.backends.replay import ReplayJudge
from vlmjudge.registry import get_method
from vlmjudge.requests import Answer
from vlmjudge.testing.conformance import check_method

JOINT = "pq: 8/10\nsc: 2/10\nartifact:\nr2: 3,4!\nmisalign:\nnone"


def image(colour, size=(32, 32)):
    return Image.new("RGB", size, colour)


def replay(answers):
    return ReplayJudge(answers, key_fields=("prompt",))


def test_requests_put_conditioning_first_and_carry_grammar_and_budget():
    vs = VIEScore2(replay({"a": JOINT}), fields="pq_sc+split", grid_size=8)
    gen, src, ref = image((200, 0, 0)), image((0, 200, 0)), image((0, 0, 200))
    from viescore2.asking import make_items
    (req,) = vs.requests(make_items([gen], ["a"], [[src, ref]], ["x1"]))
    assert [img.getpixel((0, 0)) for img in req.images] == [(0, 200, 0), (0, 0, 200), (200, 0, 0)]
    assert req.text == build_instruction("a", "pq_sc+split", 8, num_conditioning=2)
    assert req.constraint.kind == "ebnf" and req.constraint.spec == output_grammar("pq_sc+split", 8)
    assert req.decoding.max_new_tokens == token_budget("pq_sc+split", 8) and req.decoding.greedy
    assert req.meta == {"method": "viescore2", "id": "x1", "prompt": "a", "fields": "pq_sc+split", "grid_size": 8}
    assert VIEScore2(replay({}), constrain=False).requests(make_items([gen], ["a"]))[0].constraint is None
    packed = VIEScore2(replay({}), "overall", pack={"templates": {"overall": "Rate {prompt}"}, "system": "Be strict."})
    (req,) = packed.requests(make_items([gen], ["a fox"]))
    assert req.text == "Rate a fox" and req.system == "Be strict." and req.chat()[0]["role"] == "system"


def test_records_from_scripted_answers_in_one_batched_call():
    judge = replay({"a": JOINT, "b": "garbage", "c": None, "d": "pq: 5/10\nsc: 5/10\nartifact: none"})
    vs = VIEScore2(judge, fields="pq_sc+split")
    result = vs.run([image((i * 50, 0, 0)) for i in range(4)], ["a", "b", "c", "d"],
                    conditioning=[None, image((1, 1, 1)), [], [image((2, 2, 2)), image((3, 3, 3))]])
    a, b, c, d = result.records
    assert judge.stats.forward_batches == 1 and len(judge.log) == 4
    assert [len(r.images) for _, r in judge.log] == [1, 2, 1, 3]
    assert a.status == "scored" and a.read_status == "ok" and a.scores == {"pq": 8.0, "sc": 2.0} and a.overall == pytest.approx(4.0)
    assert a.localization == CategoryGrids(Grid(frozenset({(2, 3), (2, 4)}), n=16), Grid(n=16))  # marks dropped
    assert a.grid_status == "ok" and a.category_status == {"artifact": "ok", "misalign": "none"}
    assert "Visual artifacts in 2 cells" in a.explanation and "geometric mean" in a.explanation
    assert b.status == "failed" and b.score is None and not b.valid and b.missing == ["pq", "sc", "grid"]
    assert c.status == "failed" and c.read_status == "error" and c.finish_reason == "error" and c.score is None
    assert d.status == "scored" and d.read_status == "partial" and d.missing == ["grid"] and d.overall == pytest.approx(5.0)
    assert d.category_status == {"artifact": "failed", "misalign": "failed"}
    assert result.counts == {"images": 4, "finish_stop": 3, "finish_error": 1, "status_scored": 2, "status_failed": 2,
                             "parse_failures": 7, "scored": 2}
    m = result.manifest
    assert m["method"] == "viescore2" and m["backend"] == "replay" and m["fields"] == "pq_sc+split"
    assert m["constraint"] == "ebnf" and len(m["grammar_sha256"]) == 64 and m["pack_version"] == "viescore2-default-2"
    assert m["decoding"]["max_new_tokens"] == token_budget("pq_sc+split", 16)


def test_reading_rules():
    def read(text, fields, reason="stop", n=16):
        return read_answer(Answer(text, reason), fields, n)

    # only requested scores count; a native score does not stand in for PQ and SC
    assert read("score: 6/10", "pq_sc")["missing"] == ["pq", "sc"]
    assert read("score: 6/10\npq: 3/10\nsc: 3/10", "pq_sc")["scores"] == {"pq": 3.0, "sc": 3.0}
    # a single grid requested, two sections given: their union
    one = read("score: 5/10\nartifact:\nr1: 1\nmisalign:\nr2: 2", "overall+grid")
    assert one["read_status"] == "ok" and one["localization"] == Grid(frozenset({(1, 1), (2, 2)}), n=16)
    # two sections requested, one grid given: the categories are unknown
    two = read("score: 5/10\nr1: 1", "overall+split")
    assert two["read_status"] == "partial" and two["localization"] is None and two["missing"] == ["grid"]
    # marks kept only when requested
    assert read("r1: 1!,2", "grid+marks")["localization"].marks == {(1, 1)}
    assert read("r1: 1!,2", "grid")["localization"].marks == frozenset()
    # a grid cut off at the token limit is not read; the score lines before it are
    cut = read("pq: 7/10\nsc: 6/10\nr1: 1,2", "pq_sc+grid", reason="length")
    assert cut["scores"] == {"pq": 7.0, "sc": 6.0} and cut["missing"] == ["grid"]
    assert "cut off at the token limit" in cut["explanation"] and "could not be read" in cut["explanation"]
    # none is a successful clean grid; grid-only configurations have no score
    clean = read("none", "grid")
    assert clean["read_status"] == "ok" and clean["grid_status"] == "none" and clean["localization"].is_empty
    # indices outside 1..N are ignored by the tolerant parser
    assert read("r1: 1,9", "grid", n=8)["localization"].cells == {(1, 1)}


def test_geometric_mean_and_native_overall():
    judge = replay({"p": "pq: 9/10\nsc: 4/10", "o": "score: 7.5/10"})
    (pq,) = VIEScore2(judge, fields="pq_sc").score([image((5, 5, 5))], ["p"])
    (ov,) = VIEScore2(judge, fields="overall").score([image((5, 5, 5))], ["o"])
    assert pq.overall == pytest.approx(math.sqrt(9 * 4)) == pytest.approx(6.0)
    assert ov.overall == 7.5
    grid_only = VIEScore2(replay({"g": "r3: 3"}), fields="grid").score([image((5, 5, 5))], ["g"])[0]
    assert grid_only.read_status == "ok" and grid_only.status == "not_applicable" and grid_only.score is None and grid_only.grid.cells == {(3, 3)}


def test_record_json_round_trip():
    (record,) = VIEScore2(replay({"a": JOINT}), fields="pq_sc+split+marks").score([image((9, 9, 9))], ["a"])
    data = record.to_json()
    assert data["artifact"] == "r2: 3,4!" and data["misalign"] == "none" and data["grid"] is None
    assert data["score"] == pytest.approx(4.0) and data["text"] == JOINT
    back = VIEScore2Record.from_json(data)
    assert back.localization == record.localization and back.to_json() == data


def test_input_errors_are_clear():
    vs = VIEScore2(replay({}))
    with pytest.raises(ValueError, match="2 prompts for 1 images"):
        vs.score([image((1, 1, 1))], ["a", "b"])
    with pytest.raises(TypeError, match="prompts must be strings"):
        vs.score([image((1, 1, 1))], [3])
    with pytest.raises(TypeError, match="wrap a single image"):
        vs.score(image((1, 1, 1)), ["a"])
    with pytest.raises(ValueError, match="conditioning entries"):
        vs.score([image((1, 1, 1))], ["a"], conditioning=[None, None])
    with pytest.raises(KeyError, match="no template"):
        VIEScore2(replay({}), fields="overall", pack={"templates": {"grid": "{prompt}"}})
    with pytest.raises(TypeError, match="Judge"):
        VIEScore2(object())


def test_registered_spec_passes_conformance_and_renders_overlay():
    assert get_method("viescore2") is SPEC
    assert SPEC.inputs == ("image", "prompt") and "conditioning" in SPEC.optional_inputs
    judge = replay({"a": JOINT, "b": "nonsense", "c": "pq: 10/10\nsc: 0/10\nartifact:\nnone\nmisalign:\nnone"})
    records = check_method(SPEC, judge, {"image": [image((200, 200, 200), (64, 64))] * 3, "prompt": ["a", "b", "c"],
                                         "conditioning": [None, [image((0, 0, 0))], None]})
    shown = SPEC.render(records[0])
    assert shown["score_text"] == "4.000/10" and "Visual artifacts" in shown["markdown"]
    overlay = shown["image"]
    assert overlay.size == (64, 64)
    assert overlay.getpixel((10, 5)) != (200, 200, 200)   # row 2, column 3 of 16 (4 px cells) is tinted
    assert overlay.getpixel((40, 40)) == (200, 200, 200)  # elsewhere untouched
    failed = SPEC.render(records[1])
    assert failed["score_text"] == "unscored (failed)" and "image" not in failed
    assert SPEC.render(records[2])["score_text"] == "0.000/10" and SPEC.normalize(10.0) == 1.0
