"""Identical requests within one call are computed once, in the core judge, for every backend."""
from vlmjudge.backends.replay import ReplayJudge
from vlmjudge.requests import Decoding, Request


def test_replay_computes_each_distinct_request_once_and_answers_in_order():
    a, b = Request(text="one"), Request(text="two")
    judge = ReplayJudge({a.content_hash(): "Yes, one", b.content_hash(): "No, two"})
    answers = judge.generate([a, b, Request(text="one", meta={"item": 9}), a])
    assert [x.text for x in answers] == ["Yes, one", "No, two", "Yes, one", "Yes, one"]
    assert judge.stats.model_calls == 2 and judge.stats.deduplicated == 2
    assert [r.text for _, r in judge.log] == ["one", "two"]
    answers[2].text = "changed"  # each position holds its own answer
    assert answers[0].text == "Yes, one"
    probs = judge.choice_probs([b, a, b, b], ["Yes", "No"])
    assert probs == [{"Yes": 0.0, "No": 1.0}, {"Yes": 1.0, "No": 0.0}] + [{"Yes": 0.0, "No": 1.0}] * 2
    assert judge.stats.model_calls == 4 and judge.stats.deduplicated == 4
    assert "deduplicated" in judge.stats.as_dict() and "cache_hits" in judge.stats.as_dict()


def test_samples_scripted_answers_and_meta_keys_stay_apart():
    sampled = Request(text="draw", decoding=Decoding(temperature=1.0))
    seeded = Request(text="draw", decoding=Decoding(temperature=1.0, seed=3))
    judge = ReplayJudge({sampled.content_hash(): ["first", "second"], seeded.content_hash(): "same"})
    assert [x.text for x in judge.generate([sampled, sampled, seeded, seeded])] == ["first", "second", "same", "same"]
    assert judge.stats.model_calls == 3 and judge.stats.deduplicated == 1
    by_meta = ReplayJudge({1: "one", 2: "two"}, key_fields=("item",))
    same_text = [Request(text="q", meta={"item": 1}), Request(text="q", meta={"item": 2}),
                 Request(text="q", meta={"item": 1})]
    assert [x.text for x in by_meta.generate(same_text)] == ["one", "two", "one"]
    assert by_meta.stats.model_calls == 2 and by_meta.stats.deduplicated == 1


def test_transformers_dedupes_generate_and_choice_probs(loaded, fresh, noise):
    base = loaded["qwen3_vl"]
    img_a, img_b = noise(2, seed=4)

    def ask(image, text="Is it red?"):
        return Request(images=[image], text=text, prefix="Answer:", decoding=Decoding(max_new_tokens=3))
    batch = [ask(img_a), ask(img_b), ask(img_a.copy()), ask(img_a), ask(img_b, "Is it blue?")]
    judge = fresh(base)
    answers = judge.generate(batch)
    assert judge.stats.model_calls == 3 and judge.stats.deduplicated == 2
    alone = fresh(base)
    expected = alone.generate([batch[0], batch[1], batch[4]])
    assert [a.text for a in answers] == [expected[0].text, expected[1].text, expected[0].text,
                                         expected[0].text, expected[2].text]
    probs = judge.choice_probs(batch, ["Yes", "No"])
    assert judge.stats.model_calls == 6 and judge.stats.deduplicated == 4
    single = alone.choice_probs([batch[0], batch[1], batch[4]], ["Yes", "No"])
    assert probs[0] == probs[2] == probs[3] == single[0]
    assert probs[1] == single[1] and probs[4] == single[2]
