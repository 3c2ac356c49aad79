"""Shared-prefix batching gives the unshared path's probabilities (1e-5) and greedy texts."""
import pytest

from vlmjudge import Constraint, Decoding, Request
from vlmjudge.backends.hf.prefix import units as prefixes

FAMILIES = ["qwen3_vl", "llava"]
QUESTIONS = ["Is there a cat?", "Does the image show a red car on the street?", "Is the sky blue?",
             "Rate the image.", "Describe the image."]


def _requests(images, per_image=4, prefix="Answer:", **decoding):
    """`per_image` questions per image, one image's requests adjacent, and one text-only request."""
    out = [Request(images=[img], text="Look closely. " + QUESTIONS[(i + k) % len(QUESTIONS)], prefix=prefix,
                   system="You judge images.", decoding=Decoding(**decoding))
           for i, img in enumerate(images) for k in range(per_image)]
    out.append(Request(text="No image here. Is it red?", prefix=prefix, decoding=Decoding(**decoding)))
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_shared_probs_equal_unshared(judge_for, noise, family):
    reqs = _requests(noise(3))
    shared, plain = judge_for(family, batch_size=2), judge_for(family, batch_size=2, prefix_reuse=False)
    p_shared = shared.choice_probs(reqs, ["Yes", "No"])
    p_plain = plain.choice_probs(reqs, ["Yes", "No"])
    assert max(abs(a["Yes"] - b["Yes"]) for a, b in zip(p_shared, p_plain)) < 1e-5
    assert len({round(p["Yes"], 6) for p in p_plain}) > 5  # the probabilities differ by request
    # each image ran through the vision tower once, not once per question
    assert shared.stats.images_encoded == 3 and plain.stats.images_encoded == 12
    # prefill: the shared prefixes once plus every suffix, well under the unshared total
    assert shared.stats.prefill_tokens < 0.6 * plain.stats.prefill_tokens


@pytest.mark.parametrize("family", FAMILIES)
def test_shared_greedy_texts_equal_unshared(judge_for, noise, family):
    reqs = _requests(noise(3), per_image=3, max_new_tokens=12)
    shared, plain = judge_for(family, batch_size=2), judge_for(family, batch_size=2, prefix_reuse=False)
    a, b = shared.generate(reqs), plain.generate(reqs)
    assert [x.text for x in a] == [x.text for x in b]
    assert [x.finish_reason for x in a] == [x.finish_reason for x in b]
    assert [x.num_tokens for x in a] == [x.num_tokens for x in b]
    assert len({x.text for x in a}) > 3


@pytest.mark.parametrize("family", FAMILIES)
def test_shared_constrained_generation_equals_unshared(judge_for, noise, family):
    """First-option restriction plus a grammar, budgets that differ by row, early finishers."""
    grammar = Constraint.ebnf('root ::= (" Yes" | " No") (", because " [a-z ]{1,20} ".")?',
                              first_options=["Yes", "No"])
    reqs = [Request(images=r.images, text=r.text, system=r.system, prefix=r.prefix, constraint=grammar,
                    decoding=Decoding(max_new_tokens=4 + 3 * (i % 3)))
            for i, r in enumerate(_requests(noise(4, seed=3), per_image=3))]
    shared, plain = judge_for(family, batch_size=3), judge_for(family, batch_size=3, prefix_reuse=False)
    a, b = shared.generate(reqs), plain.generate(reqs)
    assert [(x.text, x.finish_reason, x.num_tokens) for x in a] == [(x.text, x.finish_reason, x.num_tokens) for x in b]
    probs = plain.choice_probs(reqs, ["Yes", "No"])
    assert [x.text.split(",")[0].strip() for x in a] == [max(p, key=p.get) for p in probs]


def test_sampled_rows_match_with_a_seed(judge_for, noise):
    reqs = _requests(noise(2), per_image=3, max_new_tokens=8, temperature=1.0, seed=7)
    shared, plain = judge_for("qwen3_vl"), judge_for("qwen3_vl", prefix_reuse=False)
    assert [x.text for x in shared.generate(reqs)] == [x.text for x in plain.generate(reqs)]


def test_batches_are_planned_by_size_and_order_is_restored(judge_for, noise):
    """Mixed sizes, batch size 1 (one prefix per forward): every answer lands in its place."""
    imgs = noise(4, sizes=((32, 32), (96, 96)))
    reqs = [Request(images=[imgs[i % 4]], text=QUESTIONS[i % 5], prefix="Answer:") for i in range(12)]
    one, plain = judge_for("qwen3_vl", batch_size=1), judge_for("qwen3_vl", batch_size=1, prefix_reuse=False)
    p_one, p_plain = one.choice_probs(reqs, ["Yes", "No"]), plain.choice_probs(reqs, ["Yes", "No"])
    assert max(abs(a["Yes"] - b["Yes"]) for a, b in zip(p_one, p_plain)) < 1e-5
    assert one.stats.forward_batches == 4 and one.stats.images_encoded == 4
    assert plain.stats.forward_batches == 12


def test_units_share_only_images_and_a_prefix_covering_them():
    def prompt(ids, key, end):
        return prefixes.Prompt("", ids, key, end)
    a, b = ("obj", 1), ("obj", 2)
    prompts = [prompt([1, 9, 9, 5, 6], (a,), 3), prompt([1, 9, 9, 5, 7, 8], (a,), 3),
               prompt([1, 9, 9, 5, 6], (b,), 3), prompt([1, 2, 3], (), 0), prompt([1, 2, 4], (), 0),
               prompt([1, 9, 9, 5, 6], (a,), 3)]
    units = prefixes.make_units(prompts)
    assert [(sorted(u.rows), u.split) for u in units] == [([0, 1, 5], 4), ([2], 4), ([3, 4], 2)]
    # images at the divergence point cannot be shared: the group is cut where neighbours share least
    split = prefixes.make_units([prompt([1, 7, 2, 3], (a,), 2), prompt([1, 8, 2, 3], (a,), 2)])
    assert [(u.rows, u.split) for u in split] == [([0], 3), ([1], 3)]
    # a prompt that ends in an image placeholder has no suffix: no shared plan
    assert prefixes.make_units([prompt([1, 2, 3], (a,), 3)]) is None
