"""The decode-side layout helpers: a growing cache layer holds exactly what concatenation would,
suffix rows of like length run together, and prompt token ids are memoised per text."""
import pickle

import pytest
import torch
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

from vlmjudge.backends.hf.prefix.growing_cache import GrowingLayer, adopt_growing
from vlmjudge.backends.hf.prefix.runner import _like_lengths
from vlmjudge.backends.hf.tokens import TokenIds


def _filled_layer(rows=3, heads=2, columns=5, dim=4):
    layer = DynamicLayer()
    layer.update(torch.randn(rows, heads, columns, dim), torch.randn(rows, heads, columns, dim))
    return layer


def _plain_and_growing(seed, spare):
    """A filled plain layer and a growing one holding the same keys and values."""
    torch.manual_seed(seed)
    plain = _filled_layer()
    growing = DynamicLayer()
    growing.update(plain.keys.clone(), plain.values.clone())
    GrowingLayer.adopt(growing, spare=spare)
    return plain, growing


def test_a_growing_layer_holds_what_concatenation_would():
    plain, growing = _plain_and_growing(0, spare=2)
    for step in range(5):  # past the spare columns: the buffer grows
        k, v = torch.randn(3, 2, 1, 4), torch.randn(3, 2, 1, 4)
        want = plain.update(k, v)
        got = growing.update(k, v)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
        assert growing.get_seq_length() == plain.get_seq_length() == 6 + step


def test_a_growing_layer_selects_rows_and_crops_like_a_plain_one():
    plain, growing = _plain_and_growing(1, spare=4)
    index = torch.tensor([2, 0])
    plain.batch_select_indices(index)
    growing.batch_select_indices(index)
    k, v = torch.randn(2, 2, 1, 4), torch.randn(2, 2, 1, 4)
    assert torch.equal(growing.update(k, v)[0], plain.update(k, v)[0])
    plain.crop(-2)
    growing.crop(-2)
    assert torch.equal(growing.keys, plain.keys) and torch.equal(growing.values, plain.values)
    with pytest.raises(NotImplementedError):
        growing.batch_repeat_interleave(2)
    growing.reset()
    assert growing.get_seq_length() == 0
    k, v = torch.randn(2, 2, 3, 4), torch.randn(2, 2, 3, 4)
    assert torch.equal(growing.update(k, v)[1], v)  # after a reset, as a fresh layer


def test_only_plain_full_attention_layers_are_adopted():
    class Cache:
        layers = [_filled_layer(), DynamicSlidingWindowLayer(sliding_window=4), DynamicLayer()]
    cache = Cache()
    cache.layers[1].update(torch.randn(3, 2, 5, 4), torch.randn(3, 2, 5, 4))
    assert adopt_growing(cache, spare=8) == 1  # the empty layer and the sliding one keep their rules
    assert type(cache.layers[0]) is GrowingLayer
    assert type(cache.layers[1]) is DynamicSlidingWindowLayer and type(cache.layers[2]) is DynamicLayer


def test_like_lengths_partition_the_rows_within_the_ratio():
    lengths = torch.tensor([82, 178, 93, 155, 97, 178, 101, 144, 120, 167])
    blocks = _like_lengths(lengths, ratio=0.8)
    rows = sorted(r for b in blocks for r in b.tolist())
    assert rows == list(range(len(lengths)))
    for block in blocks:
        part = lengths[block]
        assert int(part.min()) >= 0.8 * int(part.max())
        assert block.tolist() == sorted(block.tolist())
    assert len(blocks) > 1
    assert len(_like_lengths(torch.tensor([260, 261, 265]))) == 1


class _CountingTokenizer:
    def __init__(self):
        self.calls = 0

    def __call__(self, text):
        self.calls += 1
        return {"input_ids": [ord(c) for c in text]}


def test_token_ids_are_memoised_by_text_and_evicted_oldest_first():
    tok = _CountingTokenizer()
    ids = TokenIds(tok, size=2)
    assert ids("ab") == (97, 98) and ids("ab") == (97, 98)
    assert tok.calls == 1
    ids("c"), ids("d")  # "ab" is the oldest: dropped
    assert len(ids) == 2
    ids("ab")
    assert tok.calls == 4


def test_a_call_tokenises_its_new_texts_in_one_batch_with_the_same_ids(loaded):
    tokenizer = loaded["qwen3_vl"].tokenizer
    texts = ["Is there a cat?", "Does the image show <|vision_start|> a car?", "Is there a cat?", " spaced  out "]
    batched = TokenIds(tokenizer)
    batched.prefetch(texts)
    assert len(batched) == 3
    one_each = TokenIds(tokenizer)
    assert [batched(t) for t in texts] == [one_each(t) for t in texts] == [tuple(tokenizer(t)["input_ids"]) for t in texts]
    counting = TokenIds(_CountingTokenizer(), size=2)
    counting("ab")
    counting.prefetch(["ab"])  # nothing new: no tokenizer call
    assert counting.tokenizer.calls == 1


def test_a_pickled_memo_keeps_its_size_not_its_texts():
    ids = TokenIds(_CountingTokenizer(), size=3)
    ids("xyz")
    copy = pickle.loads(pickle.dumps(ids))
    assert len(copy) == 0 and copy.size == 3
    assert copy("xyz") == (120, 121, 122)
