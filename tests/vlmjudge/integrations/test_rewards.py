"""Rewards: one float in [0, 1] per image, batched == unbatched, weighted == weighted sum of parts,
N/A gets the configured value, cached calls, references from a column."""
import json

import pytest

from integ_helpers import NA_CONFIG, noise_images, regeneration, terravis
from vlmjudge import get_method
from vlmjudge.integrations import Method
from vlmjudge.integrations.rewards import DEFAULT_NA_VALUE, reward_fn, weighted

PROMPTS = ["a red car", "a cat on a sofa", "two dogs", "a bridge at night"]


@pytest.fixture(scope="module")
def images():
    return noise_images(4, seed=5)


@pytest.fixture(scope="module")
def references():
    return noise_images(4, seed=6, size=(32, 32))


def in_unit(values, n):
    return len(values) == n and all(isinstance(v, float) and 0.0 <= v <= 1.0 for v in values)


def test_terravis_reward_batched_equals_unbatched(vlm_dir, images):
    judge = {"model": vlm_dir, "device": "cpu", "batch_size": 18}  # no cache: both runs compute
    whole = reward_fn(terravis(), judge)
    one_by_one = reward_fn(terravis(label="terravis_1"), judge, batch_size=1)
    got = whole(images, PROMPTS)
    assert in_unit(got, 4)
    assert one_by_one(images, PROMPTS) == pytest.approx(got, abs=1e-6)
    assert got == [DEFAULT_NA_VALUE if r.score is None else r.score for r in whole.last_records]
    assert whole.__name__ == "terravis_reward"


def test_na_images_get_the_configured_value_and_calls_are_cached(judge_kwargs, images):
    reward = reward_fn(terravis(**NA_CONFIG), judge_kwargs, na_value=0.25)
    assert reward(images, PROMPTS) == [0.25] * 4
    assert [r.score for r in reward.last_records] == [None] * 4
    assert reward.panel.model_calls() == 8  # per image: eligibility, and the reason it is N/A
    assert reward(images[::-1], PROMPTS[::-1]) == [0.25] * 4
    assert reward.panel.model_calls() == 8  # all answers came from the cache
    assert reward_fn(terravis(**NA_CONFIG), judge_kwargs)(images[:1]) == [0.0]  # the documented default
    with pytest.raises(ValueError, match="na_value"):
        reward_fn("terravis", judge_kwargs, na_value=2.0)


def test_regeneration_reward_takes_references_from_a_column(encoders, images, references):
    reward = reward_fn(regeneration(encoders))
    got = reward(images, PROMPTS, reference=references, trainer_state=object())  # unknown keywords pass
    assert in_unit(got, 4) and len(set(got)) == 4
    api = get_method("regeneration").build(None, **regeneration(encoders).config)
    want = [r.score / 100 for r in api.score_batch({"reference": references, "generated": images})]
    assert got == pytest.approx(want, abs=1e-9)
    assert reward_fn(regeneration(encoders), batch_size=3)(images, reference=references) == pytest.approx(got)
    renamed = reward_fn(regeneration(encoders), column_names={"reference": "source_image"})
    assert renamed(images, source_image=references) == pytest.approx(got)
    with pytest.raises(ValueError, match="reference"):
        reward(images, PROMPTS)
    with pytest.raises(ValueError, match="3 values for 4 images"):
        reward(images, reference=references[:3])


def test_weighted_reward_is_the_weighted_sum_of_its_parts(judge_kwargs, encoders, images, references):
    world = reward_fn(terravis(), judge_kwargs)
    close = reward_fn(regeneration(encoders))
    combo = 0.3 * world + 0.7 * close
    got = combo(images, PROMPTS, reference=references)
    parts = [world(images, PROMPTS, reference=references), close(images, PROMPTS, reference=references)]
    assert in_unit(got, 4)
    assert got == pytest.approx([0.3 * a + 0.7 * b for a, b in zip(*parts)], abs=1e-12)
    assert combo.parts(images, PROMPTS, reference=references) == parts
    assert combo.__name__ == "0.3*terravis_reward + 0.7*regeneration_reward"
    same = weighted({world: 3.0, close: 7.0}, normalize=True)
    assert same(images, PROMPTS, reference=references) == pytest.approx(got, abs=1e-12)
    with pytest.raises(ValueError, match="sum to 2"):
        (world + close)(images, PROMPTS, reference=references)


def test_rewards_with_the_cheap_toy_method(toys):
    from PIL import Image

    images = [Image.new("RGB", (4, 4), (v, v, v)) for v in (0, 51, 255)]
    bright = reward_fn("integ_bright", na_value=0.5)
    assert bright(images) == pytest.approx([0.5, 0.2, 1.0])
    lifted = reward_fn(Method("integ_bright", config={"offset": 51.0}, label="lifted"))
    combo = weighted([(0.5, bright), (0.5, lifted)])
    assert combo(images) == pytest.approx([0.5 * 0.5 + 0.5 * 0.0, 0.5 * 0.2 + 0.5 * 0.4, 1.0])
    nested = 0.5 * combo + 0.5 * bright
    assert [w for w, _ in nested.terms()] == [0.25, 0.25, 0.5]
    with pytest.raises(ValueError, match=">= 0"):
        weighted([(-0.5, bright)])
    with pytest.raises(ValueError, match="inside the Method"):
        reward_fn(Method("integ_bright"), offset=1.0)


def test_viescore2_reward_divides_by_ten(vlm_dir, images):
    reward = reward_fn("viescore2", {"model": vlm_dir, "device": "cpu", "batch_size": 18})
    got = reward(images, PROMPTS)
    assert in_unit(got, 4)
    want = [DEFAULT_NA_VALUE if r.score is None else r.score / 10 for r in reward.last_records]
    assert got == want


def _limits(string, items, tokens):
    return {"limits": {"string": string, "items": items}, "max_new_tokens": tokens}


# FAGER's answer and feedback agents with bounds a random tiny model closes quickly.
FAGER_PACK = {"agents": {"evaluation": _limits(10, 2, 100), "regenerate": _limits(10, 2, 100),
                         "edit": _limits(10, 2, 100)}}


def test_fager_reward_uses_the_qa_sets_of_a_column_and_divides_by_100(judge_kwargs, images):
    qa = {"prompt": "a red car", "items": [
        {"question": "Is there a car?", "level": "level_1", "category": "existence", "importance": "high",
         "source_fact": "a car"},
        {"question": "Is the car red?", "level": "level_2", "category": "color", "importance": "medium",
         "source_fact": "the car is red"}]}
    reward = reward_fn("fager", judge_kwargs, pack=FAGER_PACK)
    got = reward(images[:2], ["a red car"] * 2, qa_set=[json.dumps(qa)] * 2)
    assert in_unit(got, 2)
    assert got == [r.score / 100 for r in reward.last_records]
    for record in reward.last_records:
        assert [q.question for q in record.verdict.questions] == ["Is there a car?", "Is the car red?"]
        assert record.verdict.questions[0].status == "answered"
