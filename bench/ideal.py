"""The ideal prefill of a run: every distinct token prefix of the prompts it sends, counted once.

That is the number of nodes of the token trie over those prompts (the root, the empty prefix,
not counted). No engine that computes each prompt's keys and values can prefill fewer tokens:
a token's state depends on every token before it, so two prompts can share a token's work only
up to their first difference. Images enter as their visual tokens, named by the image's pixel
digest, so the same image in two prompts is the same run of tokens and two images of one size
are not.

`record(judge)` wraps a judge's `generate` and `choice_probs` to keep every request a run sends
(cached and duplicate requests included: the trie counts a repeated prompt once anyway);
`ideal_prefill(judge, requests)` expands them as the transformers backend would and counts.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from contextlib import contextmanager
from typing import Any, Iterator

from vlmjudge.requests import Request


def trie_nodes(sequences: Iterable[Sequence[Hashable]]) -> int:
    """Nodes of the trie over `sequences` (the empty root not counted) = distinct non-empty prefixes.

    Sorted in a common order, each sequence adds the tokens past its longest common prefix with
    the one before it; that neighbour shares the longest prefix any earlier sequence does, so
    the sum is the trie's size. Tokens of any hashable kind are first numbered, so that ints and
    (digest, k) pairs sort together."""
    numbers: dict[Hashable, int] = {}
    coded = sorted([numbers.setdefault(t, len(numbers)) for t in seq] for seq in sequences)
    total, previous = 0, []
    for seq in coded:
        total += len(seq) - _common_prefix(previous, seq)
        previous = seq
    return total


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class Recorder:
    """The requests one judge was asked for, in call order."""

    def __init__(self) -> None:
        self.requests: list[Request] = []

    def add(self, requests: Sequence[Request]) -> None:
        self.requests.extend(requests)


@contextmanager
def record(judge: Any) -> Iterator[Recorder]:
    """Keep every request sent through `judge.generate` and `judge.choice_probs` (both
    normalisations) while the block runs; the judge's own methods are restored after it."""
    recorder = Recorder()
    own = {name: judge.__dict__[name] for name in ("generate", "choice_probs") if name in judge.__dict__}
    generate, choice_probs = judge.generate, judge.choice_probs

    def recorded_generate(requests: Sequence[Request], **kw: Any) -> Any:
        requests = list(requests)
        recorder.add(requests)
        return generate(requests, **kw)

    def recorded_choice_probs(requests: Sequence[Request], options: Sequence[str], **kw: Any) -> Any:
        requests = list(requests)
        recorder.add(requests)
        return choice_probs(requests, options, **kw)

    judge.generate, judge.choice_probs = recorded_generate, recorded_choice_probs
    try:
        yield recorder
    finally:
        for name in ("generate", "choice_probs"):  # the judge's own methods show again
            if name in own:
                setattr(judge, name, own[name])
            else:
                delattr(judge, name)


def ideal_prefill(judge: Any, requests: Sequence[Request]) -> int:
    """Trie nodes over the expanded prompts of `requests` on a transformers judge."""
    from vlmjudge.backends._hf_prompt_ids import prompt_token_keys
    digests: dict = {}
    return trie_nodes(prompt_token_keys(judge, r, digests) for r in requests)


def measure_with_ideal(name: str, n_images: int, judges: Sequence[Any], fn: Any,
                       cuda: bool = False) -> tuple[Any, Any]:
    """`bench.measure` of `fn`, with the ideal prefill of the requests it sent through `judges`
    (all on one model) in `Measure.extra["ideal_prefill"]`; counted after the timing stops."""
    from contextlib import ExitStack

    from . import measure
    with ExitStack() as stack:
        recorders = [stack.enter_context(record(j)) for j in judges]
        m, result = measure(name, n_images, judges, fn, cuda)
    m.extra["ideal_prefill"] = ideal_prefill(judges[0], [r for rec in recorders for r in rec.requests])
    return m, result


def prefill_over_ideal(m: Any) -> float:
    """A path's prefill tokens over its own ideal (1.0: each distinct prefix prefilled once)."""
    ideal = m.extra["ideal_prefill"]
    return m.prefill_tokens / ideal if ideal else float("nan")


#: Table columns (`bench.table`) for a path measured by `measure_with_ideal`.
IDEAL_COLUMNS = (("ideal prefill", lambda m: m.extra.get("ideal_prefill", "")),
                 ("prefill/ideal", lambda m: f"{prefill_over_ideal(m):.3f}" if "ideal_prefill" in m.extra else ""))
