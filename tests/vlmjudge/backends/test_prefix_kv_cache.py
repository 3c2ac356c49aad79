"""The prefix KV cache across calls (issue 22): a later call whose prompts start with a kept
prefix runs only its new tokens, and answers exactly as without it (probabilities within 1e-5
in float32 on CPU, greedy texts equal), on Qwen3-VL, LLaVA and Gemma 3 with a sliding window
shorter than the prompts; hits and evictions are counted, the budget holds, and the unshared
reference path (`prefix_reuse=False`) keeps no cache."""
import pickle

import pytest
import torch

from vlmjudge import Decoding, Request
from vlmjudge.backends.hf.prefix import kv_store
from vlmjudge.backends.hf.judge import TransformersJudge
from vlmjudge.testing.tiny_families import FAMILIES, build_tiny_family

OPTIONS = ["Yes", "No"]
TOL = 1e-5
SYSTEM = "You judge generated images carefully, and you answer every question with Yes or No only."


def stage(images, tag, n, **kw):
    """n questions per image; every stage's prompts start alike (system, image, a shared line)."""
    return [Request(images=[im], system=SYSTEM, text=f"Look at the image closely. {tag} {k}: is there a cat?",
                    prefix="Answer:", **kw) for im in images for k in range(n)]


def text_only(n):
    return [Request(system=SYSTEM * 2, text=f"No image here. Question {k}: is it red?", prefix="Answer:")
            for k in range(n)]


def run_stages(judge, images):
    """Eligibility (one request per image), checks (a shared prefix per image), a mixed call
    (seen images with new questions, a new image, text-only requests), then greedy evidence."""
    old, new = images[:3], images[3:]
    calls = [stage(old, "Eligibility", 1), stage(old, "Check", 4) + text_only(2),
             stage(old[:2], "Check", 2) + stage(old[1:] + new, "Other", 2) + text_only(3)]
    probs = [judge.choice_probs(call, OPTIONS) for call in calls]
    evidence = stage(old, "Check", 2, decoding=Decoding(max_new_tokens=8))
    return probs, [a.text for a in judge.generate(evidence)]


def assert_same(cached, plain):
    (p_cached, t_cached), (p_plain, t_plain) = cached, plain
    for a, b in zip(p_cached, p_plain):
        assert max(abs(x[o] - y[o]) for x, y in zip(a, b) for o in OPTIONS) < TOL
    assert t_cached == t_plain
    assert len({round(p["Yes"], 6) for call in p_plain for p in call}) > 5  # answers differ by request


@pytest.mark.parametrize("family", ["qwen3_vl", "llava"])
def test_later_calls_run_only_new_tokens_and_answer_the_same(loaded, noise, family):
    base = loaded[family]
    images = noise(4)
    cached = TransformersJudge(base.model, base.processor, batch_size=2, vision_cache_mb=0)
    plain = TransformersJudge(base.model, base.processor, batch_size=2, vision_cache_mb=0, kv_cache_mb=0)
    assert cached.kv_cache.enabled and not plain.kv_cache.enabled
    assert_same(run_stages(cached, images), run_stages(plain, images))
    s, p = cached.stats, plain.stats
    # call 2 serves 3 image prefixes and call 3 two (the new image runs fresh beside them), evidence 3
    # and the greedy evidence prompts repeat the checks' prompts, each served as a request's own unit
    assert s.prefix_cache_hits >= 8 and p.prefix_cache_hits == 0
    assert s.prefill_tokens < 0.6 * p.prefill_tokens and s.prefix_cache_tokens > p.prefill_tokens / 2
    assert s.images_encoded == 4 < p.images_encoded  # without a vision cache the tower runs once per image
    assert cached.identity() == plain.identity()  # the response cache's identity is unchanged
    assert cached.manifest()["kv_cache_mb"] == kv_store.DEFAULT_MB and plain.manifest()["kv_cache_mb"] == 0


@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    """Tiny Gemma 3 judges: window 12 (every prompt is longer) and 512 (none is)."""
    root = tmp_path_factory.mktemp("kv_gemma")
    return {w: TransformersJudge(build_tiny_family("gemma3", root / str(w), sliding_window=w), batch_size=2)
            for w in (12, 512)}


@pytest.mark.parametrize("window", [12, 512])
def test_sliding_window_family_is_exact(gemma, noise, window):
    base = gemma[window]
    images = noise(4, seed=5)
    cached = TransformersJudge(base.model, base.processor, batch_size=2)
    plain = TransformersJudge(base.model, base.processor, batch_size=2, kv_cache_mb=0)
    assert base.model.config.get_text_config().sliding_window == window
    assert_same(run_stages(cached, images), run_stages(plain, images))
    if window == 512:  # entries shorter than the window are cut where a later prompt departs
        assert cached.stats.prefix_cache_hits >= 8
    else:  # longer ones only at their exact end: the evidence prompts extend the checks' prefixes
        assert cached.stats.prefix_cache_hits >= 3
    assert cached.stats.prefill_tokens < plain.stats.prefill_tokens


def test_windowed_entries_are_reused_only_at_their_end(gemma, noise):
    base = gemma[12]
    images = noise(2, seed=9)
    judge = TransformersJudge(base.model, base.processor, vision_cache_mb=0)
    judge.choice_probs(stage(images, "Eligibility", 1), OPTIONS)
    judge.choice_probs(stage(images, "Check", 3), OPTIONS)   # would need a cut inside the window: runs fresh
    assert judge.stats.prefix_cache_hits == 0
    judge.choice_probs(stage(images, "Check", 3), OPTIONS)   # the checks' prefixes, exactly: served
    assert judge.stats.prefix_cache_hits == 2 and judge.stats.images_encoded == 4


@pytest.mark.parametrize("which", ["qwen3_vl", "gemma3_window12"])
def test_a_continuation_runs_only_its_new_tokens(loaded, gemma, noise, which):
    """Evidence after a check (the check's prompt, its answer, more text): each request's prompt
    was kept after its suffix forward, so only the tokens after it run, even where a sliding
    window shorter than the prompt forbids any cut (an exact end needs none)."""
    base = loaded["qwen3_vl"] if which == "qwen3_vl" else gemma[12]
    images = noise(2, seed=3)
    cached = TransformersJudge(base.model, base.processor, batch_size=2)
    plain = TransformersJudge(base.model, base.processor, batch_size=2, kv_cache_mb=0)
    checks = stage(images, "Check", 3)
    asked = checks[::2]
    follow = [Request(images=r.images, system=r.system, text=r.text, prefix=r.prefix + " Yes. Because",
                      decoding=Decoding(max_new_tokens=6)) for r in asked]
    new = 0
    for r, f in zip(asked, follow):
        ids, more = cached._prompt(r).ids, cached._prompt(f).ids
        assert more[:len(ids)] == ids and len(more) > len(ids)  # the continuation extends the prompt
        new += len(more) - len(ids)
    for judge in (cached, plain):
        judge.probs = judge.choice_probs(checks, OPTIONS)
    before = cached.stats.prefill_tokens, cached.stats.images_encoded
    texts = [a.text for a in cached.generate(follow)]
    assert texts == [a.text for a in plain.generate(follow)]
    assert cached.stats.prefill_tokens - before[0] == new and cached.stats.images_encoded == before[1]
    assert max(abs(x["Yes"] - y["Yes"]) for x, y in zip(cached.probs, plain.probs)) < TOL


def test_the_budget_holds_least_recently_used_first(loaded, noise):
    base = loaded["qwen3_vl"]
    images = noise(3, sizes=((64, 64),))
    probe = TransformersJudge(base.model, base.processor)
    probe.choice_probs(stage(images[:1], "Eligibility", 1), OPTIONS)
    one = probe.kv_cache.bytes  # the prompt's prefix, and its last token kept as a child of it
    assert len(probe.kv_cache) == 2 and one > 0
    judge = TransformersJudge(base.model, base.processor, kv_cache_mb=2.5 * one / 2**20)
    judge.choice_probs(stage(images, "Eligibility", 1), OPTIONS)   # three run, the first evicted
    assert judge.stats.prefix_cache_evictions >= 1 and len(judge.kv_cache) == 4
    assert judge.kv_cache.bytes <= judge.kv_cache.max_bytes
    evicted = judge.stats.prefix_cache_evictions
    judge.choice_probs(stage(images[:1], "Eligibility", 1), OPTIONS)  # evicted: runs again, evicts the 2nd
    assert judge.stats.prefix_cache_hits == 0 and judge.stats.prefix_cache_evictions > evicted
    assert judge.kv_cache.bytes <= judge.kv_cache.max_bytes
    judge.choice_probs(stage(images[2:], "Eligibility", 1), OPTIONS)  # still kept: served
    assert judge.stats.prefix_cache_hits == 1
    tiny = TransformersJudge(base.model, base.processor, kv_cache_mb=0.5 * one / 2**20)
    tiny.choice_probs(stage(images[:1], "Eligibility", 1), OPTIONS)  # larger than the budget: not kept
    assert len(tiny.kv_cache) == 0 and tiny.stats.prefix_cache_evictions == 0
    with pytest.raises(ValueError, match=">= 0"):
        TransformersJudge(base.model, base.processor, kv_cache_mb=-1)


def test_the_unshared_reference_path_keeps_no_cache(loaded, noise):
    base = loaded["qwen3_vl"]
    judge = TransformersJudge(base.model, base.processor, prefix_reuse=False)
    assert not judge.kv_cache.enabled and judge.manifest()["kv_cache_mb"] == 0
    requests = stage(noise(2), "Check", 2)
    judge.choice_probs(requests, OPTIONS)
    first = judge.stats.prefill_tokens
    judge.choice_probs(requests, OPTIONS)
    assert judge.stats.prefill_tokens == 2 * first and judge.stats.prefix_cache_hits == 0
    assert len(judge.kv_cache) == 0


def test_text_only_prefixes_are_served(loaded):
    base = loaded["qwen3_vl"]
    cached = TransformersJudge(base.model, base.processor)
    plain = TransformersJudge(base.model, base.processor, kv_cache_mb=0)
    for judge in (cached, plain):
        judge.probs = [judge.choice_probs(text_only(n), OPTIONS) for n in (2, 3)]
    assert cached.stats.prefix_cache_hits >= 1 and cached.stats.prefix_cache_tokens > 32
    for a, b in zip(cached.probs, plain.probs):
        assert max(abs(x["Yes"] - y["Yes"]) for x, y in zip(a, b)) < TOL


def test_a_pickled_judge_keeps_its_budget_not_its_entries(loaded, noise):
    base = loaded["qwen3_vl"]
    judge = TransformersJudge(base.model, base.processor, kv_cache_mb=64)
    judge.choice_probs(stage(noise(1), "Eligibility", 1), OPTIONS)
    clone = pickle.loads(pickle.dumps(judge))
    assert clone.kv_cache.max_bytes == 64 * 2**20 and len(clone.kv_cache) == 0 and len(judge.kv_cache) == 2
    assert clone.kv_cache.stats is clone.stats


def _entry(n_ids, columns, verbatim, clean, window=None):
    kv = torch.zeros((1, 2, columns if window is None else min(columns, window - 1), 4))
    return kv_store.Entry(("img",), tuple(range(n_ids)), kv_store.RowKV([(kv, kv)], columns, columns), verbatim, clean)


def test_where_an_entry_may_be_cut():
    usable = kv_store.PrefixKVStore._usable
    entry = _entry(20, 40, verbatim=6, clean=False)
    assert usable(entry, 20, images_end=10) == 20          # its exact end
    assert usable(entry, 15, images_end=10) == 15          # inside the verbatim tail
    assert usable(entry, 14, images_end=10) == 0           # the tail's start, no special token before it
    assert usable(_entry(20, 40, 6, clean=True), 14, images_end=10) == 14
    assert usable(entry, 16, images_end=17) == 0           # an image of the new prompt lies past the cut
    windowed = _entry(20, 40, 6, clean=True, window=12)    # the window kept 11 of 40 columns
    assert usable(windowed, 20, images_end=10) == 20 and usable(windowed, 18, images_end=10) == 0
    row = entry.kv.crop(36)
    assert row.length == 36 and row.next == 36 and row.layers[0][0].shape[-2] == 36
    with pytest.raises(ValueError):
        windowed.kv.crop(30)


@pytest.fixture(scope="module")
def family_judges(tmp_path_factory):
    """family -> judge on its tiny checkpoint (windowed families with a 12-token window)."""
    from vlmjudge.testing.tiny_families import WINDOWED
    root = tmp_path_factory.mktemp("kv_families")
    built = {}

    def get(family):
        if family not in built:
            window = {WINDOWED[family]: 12} if family in WINDOWED else {}
            built[family] = TransformersJudge(build_tiny_family(family, root / family, **window), batch_size=4)
        return built[family]
    return get


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_answers_the_same_from_the_cache(family_judges, noise, family):
    """Repeated prompts (served at their exact end), new questions on seen images (served by a
    cut where the family's window allows one), then greedy decoding: as without the cache."""
    base = family_judges(family)
    cached = TransformersJudge(base.model, base.processor, batch_size=4)
    plain = TransformersJudge(base.model, base.processor, batch_size=4, kv_cache_mb=0)
    if base.sharing_blocker is not None:  # a recurrent cache: no sharing, so no prefix cache either
        assert not cached.kv_cache.enabled
        return
    images = noise(3, sizes=((32, 32), (64, 48), (48, 80)), seed=11)
    checks = stage(images[:2], "Check", 2) + text_only(2)
    calls = [checks, checks, stage(images[1:], "Other", 2) + text_only(3)]
    for k, call in enumerate(calls):
        a, b = cached.choice_probs(call, OPTIONS), plain.choice_probs(call, OPTIONS)
        assert max(abs(x[o] - y[o]) for x, y in zip(a, b) for o in OPTIONS) < TOL, k
        if k == 1:
            assert cached.stats.prefix_cache_hits >= 3  # two image prefixes and the text one
    greedy = stage(images[:2], "Check", 1, decoding=Decoding(max_new_tokens=6))
    assert [x.text for x in cached.generate(greedy)] == [x.text for x in plain.generate(greedy)]
    assert cached.stats.prefill_tokens < plain.stats.prefill_tokens


def test_out_of_memory_empties_the_store_before_the_retry(loaded, noise):
    base = loaded["qwen3_vl"]
    judge = TransformersJudge(base.model, base.processor, prefetch=False)
    first, second = noise(2, seed=21), noise(2, seed=22)
    judge.choice_probs(stage(first, "Check", 2), OPTIONS)
    assert len(judge.kv_cache) > 0
    real, failed = judge._forward_batch, []

    def flaky(op, batch, options):
        if not failed:
            failed.append(len(batch))
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real(op, batch, options)
    judge._forward_batch = flaky
    judge.choice_probs(stage(second, "Check", 2), OPTIONS)  # fails once, retried as two halves
    assert failed == [4] and judge.stats.prefix_cache_hits == 0
    judge.choice_probs(stage(first, "Check", 2), OPTIONS)   # the first call's prefixes were dropped
    assert judge.stats.prefix_cache_hits == 0
    judge.choice_probs(stage(second, "Check", 2), OPTIONS)  # the retry's were kept
    assert judge.stats.prefix_cache_hits >= 2


def test_packed_prefix_lengths_equal_the_plain_count():
    """Lookups compare packed ids as arrays (`common_length`); it counts what the token-by-token
    comparison of the planner counts, at every length and divergence point."""
    import random

    from vlmjudge.backends.hf.prefix.units import common_prefix_length
    rng = random.Random(3)
    for _ in range(500):
        a = [rng.randrange(3) for _ in range(rng.randrange(0, 90))]
        b = a[:rng.randrange(len(a) + 1)] + [rng.randrange(3) for _ in range(rng.randrange(0, 40))]
        assert kv_store.common_length(kv_store.packed_ids(a), kv_store.packed_ids(b)) == common_prefix_length(a, b)
    long, common = tuple(range(200)), lambda a, b: kv_store.common_length(kv_store.packed_ids(a), kv_store.packed_ids(b))
    assert common(long, long[:130] + (-1,)) == 130 and common(long, long) == 200
    assert common(long[:64], long) == 64 and common((), long) == 0
    assert common([2**40, 5], [2**40, 6]) == 1
