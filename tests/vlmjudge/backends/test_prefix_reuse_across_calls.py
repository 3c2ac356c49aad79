"""One judge asked again about images it has seen answers as a fresh judge does (probabilities
within 1e-5, greedy texts equal), whatever mix a later call brings: a seen image beside new
ones of one size (their shared text stem runs once while the seen image's prefix comes from
the KV store: this crashed), the same image twice in one call, one image under several
methods' prompts, kept prefixes longer and shorter than a new request's, batch sizes 1 and 8,
and the layout that copies each request's prefix (the GPU's) as well as the shared one."""
import pytest

from vlmjudge import Decoding, Request
from vlmjudge.backends.hf.judge import TransformersJudge
from vlmjudge.images import digests_held

OPTIONS = ["Yes", "No"]
TOL = 1e-5
# longer than `units.MIN_STEM` tokens before the image: units of one prefix length run it once
SYSTEM = "You judge generated images carefully, and you answer every question with Yes or No only."
CRITIC = "You are a strict critic of images made by a model; rate each aspect of the picture asked about."


def asks(images, n, system=SYSTEM, tag="Question", more="", **kw):
    return [Request(images=[im], system=system, text=f"Look. {tag} {k}: is there a cat?{more}", prefix="Answer:",
                    **kw) for im in images for k in range(n)]


def greedy(images, n, tag="Question"):
    return asks(images, n, tag=tag, decoding=Decoding(max_new_tokens=8))


def answers(judge, call):
    if call[0].decoding.max_new_tokens == 8:
        return [a.text for a in judge.generate(call)]
    return judge.choice_probs(call, OPTIONS)


def judged(base, batch_size, layout):
    judge = TransformersJudge(base.model, base.processor, batch_size=batch_size)
    if layout == "copied":  # each request's prefix copied into its cache row, as on a GPU
        judge._runner.shared_blocker = "copied for this comparison"
    return judge


def assert_as_fresh(base, calls, batch_size, layout="shared"):
    """Runs `calls` in turn on one judge, and each on a fresh judge: the answers agree. Returns
    the first judge, and every prefix forward's (stem, units, prefix rows); the prefix tokens a
    batch counts are those its prefix forwards ran (the model's masks say)."""
    judge = judged(base, batch_size, layout)
    forwards, ran = [], []
    run_prefix = judge._runner.run_prefix

    def spy(batch, *args):
        forwards.append((batch.stem, len(batch.units), int(batch.prefix["attention_mask"].shape[0])))
        ran.clear()
        out = run_prefix(batch, *args)
        assert batch.prefix_tokens == sum(ran)
        return out
    judge._runner.run_prefix = spy
    def count(_, args, kwargs):  # the real tokens a forward runs: its mask's last columns
        ran.append(int(kwargs["attention_mask"][:, -kwargs["input_ids"].shape[1]:].sum()))
    hook = judge.model.register_forward_pre_hook(count, with_kwargs=True)
    seen = set()
    try:
        for call in calls:
            got, want = answers(judge, call), answers(judged(base, batch_size, "shared"), call)
            if isinstance(want[0], str):
                assert got == want
            else:
                assert max(abs(a[o] - b[o]) for a, b in zip(got, want) for o in OPTIONS) < TOL
                seen |= {round(p["Yes"], 6) for p in want}
    finally:
        hook.remove()
    assert len(seen) > 3  # answers differ by request: rows mixed up would show
    return judge, forwards


@pytest.mark.parametrize("layout", ["shared", "copied"])
@pytest.mark.parametrize("family", ["qwen3_vl", "llava"])
def test_a_seen_image_beside_new_ones_of_its_size(loaded, noise, family, layout):
    """The new images' prefixes run in one forward whose stem runs once, and the seen image's
    prefix comes from the store: the forward has a row per new prefix, not per unit."""
    a, b, c = noise(3, sizes=((32, 32),))
    judge, forwards = assert_as_fresh(loaded[family], [asks([a], 2), asks([a, b, c], 2)], 8, layout)
    assert any(stem > 0 and units > rows for stem, units, rows in forwards), forwards
    assert judge.stats.prefix_cache_hits >= 1


@pytest.mark.parametrize("batch_size", [1, 8])
def test_a_resumed_run_repeats_images(loaded, noise, batch_size):
    """TerraVis' stages as a resumed run asks them: the seen images again, with new ones, for
    probabilities and greedy evidence, within a run holding the images' digests."""
    a, b, c, d = noise(4, sizes=((32, 32),))
    calls = [asks([a, b], 2), asks([b, c, d], 3), greedy([a, c, d], 1, tag="Evidence"), asks([c, d], 2, tag="Other")]
    with digests_held():
        judge, _ = assert_as_fresh(loaded["qwen3_vl"], calls, batch_size)
    assert judge.stats.prefix_cache_hits >= 5


def pair(images, n, tag="Pair"):
    return [Request(images=images, system=SYSTEM, text=f"Compare. {tag} {k}: the same?", prefix="Answer:")
            for k in range(n)]


@pytest.mark.parametrize("batch_size", [1, 8])
def test_one_image_twice_in_a_call(loaded, noise, batch_size):
    """One image twice in a request, and in two units of a call: as one object, and as a copy
    with equal pixels (one digest, another image key), before and after the store holds it."""
    a, b = noise(2, sizes=((32, 32),))
    twin = a.copy()
    calls = [asks([a], 2) + asks([twin], 2, tag="Other") + pair([a, a], 2),
             asks([twin, b, a], 2) + asks([a], 1, tag="Again") + pair([a, a], 3) + pair([b, twin], 2),
             pair([a, b], 2) + asks([b], 2, tag="Other")]
    assert_as_fresh(loaded["qwen3_vl"], calls, batch_size)


@pytest.mark.parametrize("batch_size", [1, 8])
def test_one_image_under_several_methods_prompts(loaded, noise, batch_size):
    """An image kept under one system prompt and asked under another (no prefix of the first
    serves it), then under the first again beside a new image."""
    a, b, c, d = noise(4, sizes=((32, 32),))
    calls = [asks([a, b], 2), asks([a, b, c], 2, system=CRITIC, tag="Aspect"), asks([a, c, d], 2, tag="Other")]
    judge, _ = assert_as_fresh(loaded["qwen3_vl"], calls, batch_size)
    assert judge.stats.prefix_cache_hits >= 1


@pytest.mark.parametrize("batch_size", [1, 8])
def test_kept_prefixes_longer_and_shorter_than_a_new_requests(loaded, noise, batch_size):
    """A lone request's whole prompt is kept: a later prompt that shares less of it is served
    cut, one that extends it runs only its new tokens against it."""
    a, b, c = noise(3, sizes=((32, 32),))
    long, short = " Think about the fur, the ears and the whiskers first.", " Think about the fur."
    calls = [asks([a, b], 1, more=long), asks([a, b, c], 2), asks([a, b, c], 1, more=short),
             asks([a, b], 1, more=long + " Then answer.")]
    judge, _ = assert_as_fresh(loaded["llava"], calls, batch_size)
    assert judge.stats.prefix_cache_hits >= 6
