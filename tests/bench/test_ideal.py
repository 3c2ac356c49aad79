"""The ideal prefill (bench.ideal): the token trie over a run's prompts, images as their visual
tokens named by pixel digest."""
import pytest

from bench.ideal import ideal_prefill, record, trie_nodes
from vlmjudge import Request
from bench.prompt_ids import expanded_image_token_id, prompt_token_keys


@pytest.mark.parametrize("sequences, nodes", [
    ([], 0),
    ([[]], 0),
    ([[1, 2, 3]], 3),
    ([[1, 2, 3], [1, 2, 4], [1, 5]], 5),           # 1 -> 2 -> {3, 4}; 1 -> 5
    ([[1, 2], [1, 2]], 2),                         # a repeated prompt adds nothing
    ([[1, 2, 3], [1, 2]], 3),                      # a prompt that is a prefix of another adds nothing
    ([[9, 1], [1, 9], [9, 1, 1]], 5),              # order of the input does not matter
    ([[("a", 0), ("a", 1), 7], [("b", 0), ("b", 1), 7]], 6),  # two images of one size are different tokens
    ([[("a", 0), ("a", 1), 7], [("a", 0), ("a", 1), 8]], 4),  # the same image is the same tokens
    ([[2, 1], [1], [2]], 3),                       # ints never equal (digest, k) pairs, and sort with them
])
def test_trie_nodes_on_hand_made_sequences(sequences, nodes):
    assert trie_nodes(sequences) == nodes


def test_trie_nodes_equals_distinct_prefixes_on_random_sequences():
    import random
    rng = random.Random(4)
    seqs = [[rng.choice([0, 1, 2, ("x", 0)]) for _ in range(rng.randint(0, 7))] for _ in range(60)]
    distinct = {tuple(s[:k]) for s in seqs for k in range(1, len(s) + 1)}
    assert trie_nodes(seqs) == len(distinct)


@pytest.mark.parametrize("family", ["qwen3_vl", "llava"])
def test_expansion_is_the_processors(judge_for, noise, family):
    judge = judge_for(family)
    image = noise(1, sizes=((64, 48),))[0]
    request = Request(images=[image], text="Is there a cat?", system="You judge images.", prefix="Answer:")
    keys = prompt_token_keys(judge, request)
    expanded = judge.processor(text=[judge.prompt_text(request)], images=request.pil_images(),
                               return_tensors="pt")["input_ids"][0].tolist()
    pad = expanded_image_token_id(judge)
    assert len(keys) == len(expanded)
    assert [k for k in keys if not isinstance(k, tuple)] == [t for t in expanded if t != pad]
    assert sum(isinstance(k, tuple) for k in keys) == expanded.count(pad) > 0


def test_two_requests_sharing_an_image_count_the_prefix_once(judge_for, noise):
    judge = judge_for("qwen3_vl")
    a, b = noise(2, sizes=((48, 48),))  # same size: the same number of visual tokens
    ask = lambda image, q: Request(images=[image], text=q, system="You judge images.", prefix="Answer:")  # noqa: E731
    first, second, other = ask(a, "Is there a cat?"), ask(a, "Is the sky blue today?"), ask(b, "Is there a cat?")
    n1, n2 = len(prompt_token_keys(judge, first)), len(prompt_token_keys(judge, second))
    ideal = ideal_prefill(judge, [first, second])
    visual = sum(isinstance(k, tuple) for k in prompt_token_keys(judge, first))
    assert visual > 0 and ideal <= n1 + n2 - visual  # the system turn and the image counted once
    assert ideal_prefill(judge, [first, first]) == n1
    # another image of the same size shares only the tokens before it
    before_image = next(i for i, k in enumerate(prompt_token_keys(judge, first)) if isinstance(k, tuple))
    assert ideal_prefill(judge, [first, other]) == 2 * n1 - before_image


def test_record_keeps_every_request_and_restores_the_judge(judge_for, noise):
    judge = judge_for("qwen3_vl")
    image = noise(1)[0]
    probs_requests = [Request(images=[image], text=q, prefix="Answer:") for q in ("Is it red?", "Is it big?")]
    gen_request = Request(images=[image], text="Describe it.")
    with record(judge) as seen:
        judge.choice_probs(probs_requests, ["Yes", "No"])
        judge.generate([gen_request, gen_request])
    assert seen.requests == [*probs_requests, gen_request, gen_request]
    assert "generate" not in judge.__dict__ and "choice_probs" not in judge.__dict__
    judge.generate([gen_request])
    assert len(seen.requests) == 4
    # the unshared path prefills every prompt whole: never fewer tokens than the ideal
    plain = judge_for("qwen3_vl", prefix_reuse=False)
    plain.choice_probs(probs_requests, ["Yes", "No"])
    assert ideal_prefill(judge, probs_requests) < plain.stats.prefill_tokens


@pytest.mark.parametrize("family", ["qwen3_vl", "llava"])
def test_the_processors_expansion_names_the_same_tokens(judge_for, noise, family):
    """Where the processor cannot tell visual-token counts, its own expansion is read: the same keys."""
    from bench.prompt_ids import _expanded_by_processor
    from vlmjudge.images import image_bytes_digest
    judge = judge_for(family)
    a, b = noise(2, sizes=((48, 32),), seed=7)
    request = Request(images=[a, b], text="Which one is brighter?", system="You judge images.")
    names = [image_bytes_digest(p) for p in request.pil_images()]
    slow = _expanded_by_processor(judge, judge.prompt_text(request), request.pil_images(), names,
                                  expanded_image_token_id(judge))
    fast = prompt_token_keys(judge, request)
    assert slow == fast
    assert {k[0] for k in fast if isinstance(k, tuple)} == set(names) and names[0] != names[1]
