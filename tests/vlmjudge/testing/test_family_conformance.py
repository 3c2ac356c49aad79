"""Every supported judge family answers the same with and without shared prefixes, batched
and one at a time, under a grammar, and (where it has one) from its vision cache.

Run on tiny random checkpoints with each family's real classes (see conftest); the windowed
families (Gemma 3/4, Mistral 3, Llama 4) are built with a 12-token window, shorter than the
long prompts below. The "Supported families" table of docs/judges.md states these results (`vlmjudge.backends.hf.families`).
"""
import json
import os

import pytest

from vlmjudge import Constraint, Decoding, Request
from vlmjudge.backends.hf.judge import TransformersJudge
from vlmjudge.backends.hf.families import FAMILIES as SUPPORTED
from vlmjudge.testing.tiny_families import FAMILIES, WINDOWED


OPTIONS = ["Yes", "No"]
TOL = 1e-4
INSTRUCTIONS = ("You are a careful judge of generated images. Look at the image, then answer the "
                "question about it with Yes or No. The object is present and the colour is right. ")


def mixed_requests(images, decoding=None):
    """One batch holding every layout the shared path must get right."""
    a, b, c, d, e = images
    kw = {"prefix": "Answer:"} if decoding is None else {"decoding": decoding}

    def chat(*parts):
        content = [{"type": "image"} if p is None else {"type": "text", "text": p} for p in parts]
        return [{"role": "user", "content": content}]
    return [
        Request(images=[a], text="Is there a cat in the image?", **kw),
        Request(images=[a], text="Does the image show a red car on the street?", **kw),    # shares a's prefix
        Request(images=[a], text=INSTRUCTIONS * 2 + "Is there a cat?", system=INSTRUCTIONS, **kw),  # long
        Request(images=[a], text=INSTRUCTIONS * 2 + "Is it red?", system=INSTRUCTIONS, **kw),       # long, shared
        Request(images=[a], messages=chat("First", None, "Is there a cat?"), **kw),  # text before the image
        Request(images=[a], messages=chat("Rate the image.", None, "Is there a cat?"), **kw),  # ... diverging
        Request(images=[b], text="Is there a cat in the image?", **kw),                 # another size
        Request(images=[e], text="Is there a cat in the image?", **kw),                 # another tile count
        Request(text="Is it red?", **kw),                                                # text only
        Request(images=[c, d], messages=chat("First", None, "then", None, "Same?"), **kw),  # images between text
        Request(images=[d, c], messages=chat("First", None, "then", None, "Same?"), **kw),
    ]


def close(p, q):
    return all(abs(x[o] - y[o]) <= TOL for x, y in zip(p, q) for o in OPTIONS)


@pytest.fixture(params=FAMILIES)
def family(request):
    return request.param


def test_shared_prefix_equals_unshared(family, judges, images):
    shared, unshared = judges(family)
    requests = mixed_requests(images)
    before = shared.stats.prefill_tokens, unshared.stats.prefill_tokens
    p_shared, p_plain = shared.choice_probs(requests, OPTIONS), unshared.choice_probs(requests, OPTIONS)
    assert close(p_shared, p_plain), (p_shared, p_plain)
    # the images matter (else the layouts above would test nothing)
    assert len({round(p["Yes"], 6) for p in p_plain}) > 3
    ran = shared.stats.prefill_tokens - before[0], unshared.stats.prefill_tokens - before[1]
    if SUPPORTED[family].shared_prefix.startswith("yes"):
        assert ran[0] < ran[1]  # the prefixes really were shared
    else:
        assert shared.sharing_blocker and shared.stats.unshared_fallback >= len(requests)
        assert shared.manifest()["prefix_fallback"] == shared.sharing_blocker


def test_shared_prefix_greedy_texts_equal_unshared(family, judges, images):
    shared, unshared = judges(family)
    requests = mixed_requests(images, Decoding(max_new_tokens=5))
    texts = [a.text for a in shared.generate(requests)]
    assert texts == [a.text for a in unshared.generate(requests)]


def test_shared_prefix_attention_runs_where_the_cache_is_plain(family, judges, images, monkeypatch):
    """On CPU, every family whose shared prefix is a plain "yes" (full attention only) reads each
    prefix once per unit (`shared_attention`), and the tests above cover it; windowed and
    hybrid ones (Mistral 3 is built here with a window) keep a copy per request, and say why."""
    from vlmjudge.backends.hf.prefix import shared_attention
    shared, _ = judges(family)
    calls = []
    split = shared_attention._split
    monkeypatch.setattr(shared_attention, "_split", lambda *a, **k: calls.append(1) or split(*a, **k))
    shared.choice_probs(mixed_requests(images)[:4], OPTIONS)
    if SUPPORTED[family].shared_prefix == "yes" and family not in WINDOWED:
        assert shared._runner.shared_blocker is None and calls
    else:
        assert "not plain full attention" in shared._runner.shared_blocker and not calls


def test_batched_equals_one_at_a_time(family, judges, images):
    shared, _ = judges(family)
    requests = mixed_requests(images)
    alone = TransformersJudge(shared.model, shared.processor, batch_size=1)
    assert close(shared.choice_probs(requests, OPTIONS), [alone.choice_probs([r], OPTIONS)[0] for r in requests])
    greedy = mixed_requests(images, Decoding(max_new_tokens=5))[::3]
    assert [a.text for a in shared.generate(greedy)] == [alone.generate([r])[0].text for r in greedy]


def test_prompts_are_longer_than_the_window(family, judges, images, window):
    """The long requests exceed a windowed family's window, so the tests above cover it."""
    if family not in WINDOWED:
        pytest.skip("no attention window")
    shared, _ = judges(family)
    text = shared.model.config.get_text_config()
    built = getattr(text, "sliding_window", None) or getattr(text, "attention_chunk_size", None)
    if built is None:
        pytest.skip("checkpoint built without a window")
    assert built == window or os.environ.get("VLMJUDGE_FAMILY_CHECKPOINTS")
    window = built
    long = mixed_requests(images)[2]
    inputs = shared.processor(text=[shared.prompt_text(long)], images=[long.pil_images()], return_tensors="pt")
    assert inputs["input_ids"].shape[1] > 4 * window


def test_grammar_constrained_json_parses(family, judges, images):
    shared, _ = judges(family)
    schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]},
                                               "score": {"type": "integer", "minimum": 0, "maximum": 10}},
              "required": ["answer", "score"]}
    requests = [Request(images=[im], text="Answer in JSON.", constraint=Constraint.json_schema(schema),
                        decoding=Decoding(max_new_tokens=40)) for im in images[:3]]
    for answer in shared.generate(requests):
        value = json.loads(answer.text, strict=False)
        assert value["answer"] in ("yes", "no") and 0 <= value["score"] <= 10


def test_vision_cache_serves_a_second_call(family, judges, images):
    shared, _ = judges(family)
    # the prefix KV cache off: a second call it served would not reach the vision tower at all
    judge = TransformersJudge(shared.model, shared.processor, batch_size=8, kv_cache_mb=0)
    requests = mixed_requests(images)
    first = judge.choice_probs(requests, OPTIONS)
    encoded = judge.stats.images_encoded
    judge.choice_probs(requests, OPTIONS)  # the judge has no response cache: the model runs again
    assert judge.stats.cache_hits == 0
    if SUPPORTED[family].vision_cache == "yes":
        assert judge.vision_cache.enabled and judge.stats.images_encoded == encoded
        assert judge.vision_cache.hits > 0 and first
    else:
        assert not judge.vision_cache.enabled
        assert judge.stats.images_encoded == 2 * encoded  # every image encoded again, as the table says


def test_split_where_the_processor_retokenises_around_an_image(family, judges, images):
    """Texts that start with newlines right after the image: Gemma 3's processor adds "\\n\\n"
    after each image, which merges with them, so the tokenizer's split point is not one of
    the processor's; those requests run as units of their own, still exact."""
    shared, unshared = judges(family)
    requests = [Request(images=[images[0]], text=text, prefix="Answer:")
                for text in ("\nIs there a cat?", "\n\nIs it red?", "\n\n\nIs it red?", "Is it red?")]
    assert close(shared.choice_probs(requests, OPTIONS), unshared.choice_probs(requests, OPTIONS))


def test_a_text_stem_before_the_images_runs_once(family, judges, images, monkeypatch):
    """Units of different images whose prompts start with the same long text (a system prompt)
    run that stem once per batch, not once per image (`units.shared_stem`), and answer as the
    unshared path does, by probabilities and greedy texts, whether the units read the stem in place
    (CPU) or each hold a copy of it (other devices). Windowed families (Gemma 3 and 4, whose
    images must also run from column 0, and Llama 4) keep the stem in every unit."""
    from vlmjudge.backends.hf.prefix import runner, units
    shared, unshared = judges(family)
    same_size = [im.resize((48, 48)) for im in images[:3]]
    requests = [Request(images=[im], system=INSTRUCTIONS * 2, text=f"Question {k}: is there a cat?", prefix="Answer:")
                for k, im in enumerate(same_size)]
    greedy = [Request(images=r.images, system=r.system, text=r.text, decoding=Decoding(max_new_tokens=5))
              for r in requests]

    def run(judge):
        before = judge.stats.prefill_tokens
        probs = judge.choice_probs(requests, OPTIONS)
        ran = judge.stats.prefill_tokens - before
        return probs, ran, [a.text for a in judge.generate(greedy)]

    kv_off = {"kv_cache_mb": 0, "vision_cache_mb": 0}  # nothing served from an earlier call
    stem_judge = TransformersJudge(shared.model, shared.processor, batch_size=8, **kv_off)
    p_stem, ran_stem, t_stem = run(stem_judge)
    p_plain, _, t_plain = run(unshared)
    assert close(p_stem, p_plain), (p_stem, p_plain)
    assert t_stem == t_plain
    assert len({round(p["Yes"], 6) for p in p_plain}) == 3  # the images matter
    # the layout of other devices (CUDA): the stem's row copied to every unit, not read in place
    with monkeypatch.context() as m:
        m.setattr(runner.PrefixRunner, "shares", lambda self, device: False)
        p_copied, ran_copied, t_copied = run(TransformersJudge(shared.model, shared.processor, batch_size=8, **kv_off))
    assert close(p_copied, p_plain) and t_copied == t_plain and ran_copied == ran_stem
    shortest = units.MIN_STEM
    monkeypatch.setattr(units, "MIN_STEM", 10**9)
    p_whole, ran_whole, _ = run(TransformersJudge(shared.model, shared.processor, batch_size=8, **kv_off))
    assert close(p_stem, p_whole)
    if SUPPORTED[family].shared_prefix.startswith("yes") and shared._runner.stems:
        assert ran_whole - ran_stem >= 2 * shortest  # two of the three units skipped the stem
    else:  # no units (the unshared fallback), or a model that must see its images from column 0
        assert ran_whole == ran_stem
        assert family in runner.IMAGES_FROM_COLUMN_ZERO or shared._runner.windowed or shared.sharing_blocker
