"""Constrained JSON output always closes on the transformers backend (issue 19 item 4)."""
import json
import random

import jsonschema
import pytest
import torch

from vlmjudge import Constraint
from vlmjudge.backends.hf.decoding.forcing import compiler_with_closers
from vlmjudge.requests import Decoding, Request


def _fager_constraints():
    from fager.asking import FagerAgents
    from fager.schema import qa_schema
    agents = FagerAgents(object())
    out = {stage: agents._constraint(stage)
           for stage in ("proposal", "extraction", "verification", "evaluation", "regenerate", "edit")}
    out["qa"] = Constraint.json_schema(qa_schema(5, agents.pack.agent("qa").limits))
    return out


def _terravis_constraints():
    from terravis import schema
    from terravis.pack import load_pack
    pack = load_pack()
    return {stage: Constraint.json_schema(schema.continuation_schema(pack, stage))
            for stage in ("detection", "eligibility", "severity")}


def _regeneration_constraints():
    from regeneration.schema import Caption, PromptAnswer
    from regeneration.schema import ATTRIBUTE_MODELS, CaptionStage, ObjectsStage, relationships_model
    from regeneration.schema import Rating
    models = {"prompt": PromptAnswer, "caption": Caption, "iut_caption": CaptionStage,
              "iut_objects": ObjectsStage, "rating": Rating,
              "relationships": relationships_model(["cat", "dog"])}
    models.update({f"attribute_{k}": m for k, m in ATTRIBUTE_MODELS.items()})
    return {name: Constraint.json_schema(m) for name, m in models.items()}


SHIPPED = {**{f"fager/{k}": v for k, v in _fager_constraints().items()},
           **{f"terravis/{k}": v for k, v in _terravis_constraints().items()},
           **{f"regeneration/{k}": v for k, v in _regeneration_constraints().items()}}


@pytest.fixture(scope="module")
def judge(loaded):
    return loaded["qwen3_vl"]


@pytest.fixture(scope="module")
def compiler(judge):
    return compiler_with_closers(judge.tokenizer, judge.vocab_size, judge.eos_ids)


def _random_document(compiler, constraint, budget, seed):
    """Drive a matcher with uniformly random allowed tokens under the closer, as a random
    judge would; returns the text and whether the matcher ended on its end token."""
    taken, _, matcher = _choices(compiler, constraint, budget, seed)
    ids = [t for t in taken if t not in compiler.stop_token_ids]
    text = b"".join(compiler.closers.vocab.token_bytes[i] for i in ids).decode()
    return text, matcher.is_terminated()


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_every_shipped_schema_closes_at_its_shortest_budget_and_a_little_more(compiler, name):
    constraint = SHIPPED[name]
    shortest = compiler.closers.shortest(constraint)
    assert shortest > 1
    for seed, extra in enumerate((0, 1, 9)):
        text, ended = _random_document(compiler, constraint, shortest + extra, seed)
        assert ended, (name, text)
        jsonschema.validate(json.loads(text), constraint.schema)


def test_bounded_and_free_strings_refuse_surrogate_bytes(compiler):
    c = Constraint.json_schema({"type": "object", "properties": {"s": {"type": "string", "maxLength": 3},
                                                                 "any": {}}, "required": ["s", "any"]})
    for text in (b'{"s": "\xed\xa0\x80', b'{"s": "a", "any": "\xed\xb0\x80'):
        assert not compiler.matcher(c).accept_string(text)
    assert compiler.matcher(c).accept_string('{"s": "é😀a", "any": "😀"}'.encode())


def test_a_string_of_at_least_one_character_is_never_blank(compiler):
    c = Constraint.json_schema({"type": "object", "properties": {"s": {"type": "string", "minLength": 1,
                                                                       "maxLength": 4}}, "required": ["s"]})

    def complete(text):
        m = compiler.matcher(c)
        return m.accept_string(text.encode()) and m.is_completed()
    assert complete('{"s": "a b"}') and complete('{"s": "ab  "}')
    assert not any(complete(f'{{"s": "{ws}x"}}') for ws in (" ", "\u00a0", "\u3000", "\u2003"))
    assert not complete('{"s": "abcde"}')  # still at most maxLength characters


def test_budget_below_the_shortest_document_is_refused_at_request_time(judge, compiler):
    c = SHIPPED["fager/evaluation"]
    shortest = compiler.closers.shortest(c)
    short = Request(text="q", constraint=c, decoding=Decoding(max_new_tokens=shortest - 1))
    with pytest.raises(ValueError, match="shortest document"):
        judge.generate([short])


def _sampled_requests(stage, constraint, budget, n, image=None):
    return [Request(text=f"Write the {stage} answer {k}.", images=[image] if image is not None else [],
                    constraint=constraint, decoding=Decoding(max_new_tokens=budget, temperature=1.0, seed=k))
            for k in range(n)]


def test_fifty_random_judge_outputs_parse_for_every_shipped_pack(loaded, fresh, compiler, noise):
    """Small budgets (the shortest document and a few tokens more) are what the guarantee
    must survive: every output of every pack's schemas parses as its method reads it."""
    from fager.asking import FEEDBACK_MODELS, QuestionList, to_output
    judge = fresh(loaded["qwen3_vl"], batch_size=16)
    image = noise(1, seed=2)[0]
    from fager.schema import QuestionAnswer, ReferenceExtraction, Rubric, Verification
    readers = {"proposal": Rubric, "extraction": ReferenceExtraction, "verification": Verification,
               "evaluation": QuestionAnswer, "qa": QuestionList, **FEEDBACK_MODELS}
    for method in ("fager", "terravis", "regeneration"):
        names = sorted(k for k in SHIPPED if k.startswith(method + "/"))
        per = -(-50 // len(names))
        requests, owners = [], []
        for name in names:
            c = SHIPPED[name]
            requests += _sampled_requests(name, c, compiler.closers.shortest(c) + 4, per, image)
            owners += [name] * per
        answers = judge.generate(requests)
        assert len(answers) >= 50
        for name, answer in zip(owners, answers):
            assert answer.finish_reason == "stop", (name, answer)
            stage = name.split("/", 1)[1]
            if method == "fager":
                assert to_output(stage, answer, readers[stage]).value is not None, (name, answer.text)
            else:
                jsonschema.validate(json.loads(answer.text), SHIPPED[name].schema)


def test_fager_builds_every_qa_set_with_the_default_pack_and_a_random_judge(loaded, fresh):
    from fager import Fager
    judge = fresh(loaded["qwen3_vl"], batch_size=4)
    prompts = ["a red cube on a blue sphere", "two cats under a table"]
    qa_sets = Fager(judge).build_qa(prompts)
    assert len(qa_sets) == 2 and all(q is not None for q in qa_sets)


def test_fifty_random_judge_outputs_parse_for_viescore2_under_its_grammar_budget(loaded, fresh, noise):
    """VIEScore2's grammar is EBNF (no closer); its own budget always suffices, so a random
    judge's outputs all stop and read strictly."""
    from viescore2.parsing import parse_output
    from viescore2.core import VIEScore2
    judge = fresh(loaded["qwen3_vl"], batch_size=25)
    scorer = VIEScore2(judge, grid_size=4, max_rows=2, max_cols=2)
    image = noise(1, seed=3)[0]
    requests = [Request(images=[image], text=scorer.instruction("a red cube"), constraint=scorer.constraint,
                        decoding=Decoding(max_new_tokens=scorer.decoding.max_new_tokens, temperature=1.0, seed=k))
                for k in range(50)]
    answers = judge.generate(requests)
    assert [a.finish_reason for a in answers] == ["stop"] * 50
    for answer in answers:
        parsed = parse_output(answer.text, 4, strict=True)
        assert parsed.scores, answer.text


def test_a_schema_the_walker_cannot_follow_still_closes_on_its_planned_ending(compiler):
    both_objects = Constraint.json_schema({"anyOf": [
        {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}}, "required": ["a"]},
        {"type": "object", "properties": {"b": {"type": "string", "maxLength": 4}}, "required": ["b"]}]})
    shortest = compiler.closers.shortest(both_objects)
    for seed in range(3):
        text, ended = _random_document(compiler, both_objects, shortest + 20, seed)
        assert ended
        jsonschema.validate(json.loads(text), both_objects.schema)


def test_judges_on_one_tokenizer_share_one_compiler_until_it_is_gone(judge):
    import copy
    import gc

    from vlmjudge.backends.hf.decoding import forcing
    args = (judge.vocab_size, judge.eos_ids)
    first = compiler_with_closers(judge.tokenizer, *args)
    assert compiler_with_closers(judge.tokenizer, *args) is first
    assert compiler_with_closers(judge.tokenizer, judge.vocab_size + 8, judge.eos_ids) is not first
    other = copy.deepcopy(judge.tokenizer)
    own = compiler_with_closers(other, *args)
    assert own is not first
    key = (id(other), *args[:1], tuple(args[1]), len(other))
    assert forcing._SHARED[key][1] is own
    del other, own
    gc.collect()
    assert key not in forcing._SHARED


def _choices(compiler, constraint, budget, seed, read_bitmask=False):
    """(the tokens a closer takes under random allowed candidates, the closer, its matcher);
    after each token, a plan the closer holds as fresh must be what planning afresh gives.
    `read_bitmask`: tell the closer what the bitmask says of each candidate, as decoding does."""
    import xgrammar as xgr

    from vlmjudge.backends.hf.decoding.row_control import _holds
    rng = random.Random(seed)
    matcher = compiler.matcher(constraint)
    closer = compiler.closers.row(constraint, matcher)
    assert closer is not None
    bitmask = xgr.allocate_token_bitmask(1, compiler.vocab_size)
    taken = []
    for step in range(budget):
        matcher.fill_next_token_bitmask(bitmask, 0)
        scores = torch.zeros(1, compiler.vocab_size)
        xgr.apply_token_bitmask_inplace(scores, bitmask)
        allowed = (scores[0] == 0).nonzero().squeeze(1).tolist()
        candidate = rng.choice(allowed)
        held = _holds(bitmask.numpy(), 0, candidate) if read_bitmask else None
        token = closer.choose(candidate, budget - step, allowed=held)
        taken.append(token)
        assert matcher.accept_token(token)
        if token in compiler.stop_token_ids:
            break
        closer.advance(token)
        if closer._fresh and closer.stack is not None:
            again = closer._plan(closer.stack, matcher)
            assert (closer.plan.text, closer.plan.n_tokens) == (again.text, again.n_tokens)
    return taken, closer, matcher


def test_skipping_the_plan_inside_a_long_enough_string_decides_as_planning_does(compiler, monkeypatch):
    """`RowCloser._keeps_ending` lets plain characters through without planning the ending
    anew; every shipped schema takes the same tokens, at every budget, as when it plans each one,
    and a fresh plan is always what planning afresh gives."""
    from vlmjudge.backends.hf.decoding import forcing
    skipped = []
    keeps = forcing.RowCloser._keeps_ending
    monkeypatch.setattr(forcing.RowCloser, "_keeps_ending",
                        lambda self, t: keeps(self, t) and (skipped.append(t) or True))
    runs = [(name, budget, seed) for name in sorted(SHIPPED) for seed, budget in enumerate((1, 12, 40, 90))]
    fast = {}
    for name, budget, seed in runs:
        constraint = SHIPPED[name]
        taken, closer, _ = _choices(compiler, constraint, compiler.closers.shortest(constraint) + budget, seed)
        fast[name, budget] = (taken, closer.steered)
    assert skipped  # the shortcut ran
    monkeypatch.setattr(forcing.RowCloser, "_keeps_ending", lambda self, t: False)
    for name, budget, seed in runs:
        constraint = SHIPPED[name]
        taken, closer, _ = _choices(compiler, constraint, compiler.closers.shortest(constraint) + budget, seed)
        assert (taken, closer.steered) == fast[name, budget]


def test_a_closer_told_the_bitmask_decides_as_one_that_asks_its_matcher(compiler):
    """Decoding tells `RowCloser.choose` whether the row's token bitmask holds the candidate,
    so the closer's shortcut forks no matcher to ask; every shipped schema, at several budgets,
    takes the same tokens and steers as often as when the closer asks its matcher."""
    for name in sorted(SHIPPED):
        constraint = SHIPPED[name]
        for seed, budget in enumerate((1, 12, 40, 90)):
            total = compiler.closers.shortest(constraint) + budget
            asked, asking, _ = _choices(compiler, constraint, total, seed)
            told, telling, _ = _choices(compiler, constraint, total, seed, read_bitmask=True)
            assert (told, telling.steered) == (asked, asking.steered), name


def test_a_bitmask_bit_is_what_the_matcher_accepts(compiler):
    """`_holds` reads a token's bit of an xgrammar bitmask: for every token that ends no
    sequence, at the first steps of every shipped schema, it says what `accept_token` says."""
    import xgrammar as xgr

    from vlmjudge.backends.hf.decoding.row_control import _holds
    stops = set(compiler.stop_token_ids)
    bitmask = xgr.allocate_token_bitmask(1, compiler.vocab_size)
    assert _holds(None, 0, 5) is None and _holds(bitmask.numpy(), 0, bitmask.shape[1] * 32) is None
    for k, name in enumerate(sorted(SHIPPED)):
        rng = random.Random(k)
        matcher = compiler.matcher(SHIPPED[name])
        for _ in range(6):
            matcher.fill_next_token_bitmask(bitmask, 0)
            bits = bitmask.numpy()
            said = {t: _holds(bits, 0, t) for t in range(compiler.vocab_size) if t not in stops}
            assert said == {t: matcher.fork().accept_token(t) for t in said}, name
            allowed = [t for t, ok in said.items() if ok]
            if not allowed:
                break
            assert matcher.accept_token(rng.choice(allowed))
