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

import time
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
        total += len(seq) - shared_start(previous, seq)
        previous = seq
    return total


def shared_start(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` share (compared 64 at a time, then one by one).

    Written here, not taken from the engine: the ideal is a yardstick for the engine's prefix
    sharing, so it shares none of that code.

    >>> shared_start([1, 2, 3], [1, 2, 4]), shared_start([], [1])
    (2, 0)
    >>> shared_start(list(range(200)), list(range(150)) + [0])  # past one 64-token block
    150
    """
    n, i = min(len(a), len(b)), 0
    while i + 64 <= n and a[i:i + 64] == b[i:i + 64]:
        i += 64
    while i < n and a[i] == b[i]:
        i += 1
    return i


class Recorder:
    """The requests one judge was asked for, in call order, and per call the prefill tokens the
    judge counted while answering it and its wall time (`calls`: (stage of the first request,
    requests, tokens, seconds))."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.calls: list[tuple[str, list[Request], int, float]] = []

    def add(self, requests: Sequence[Request], prefill: int = 0, seconds: float = 0.0) -> None:
        self.requests.extend(requests)
        stage = str(requests[0].meta.get("stage", "")) if requests else ""
        self.calls.append((stage, list(requests), prefill, seconds))


@contextmanager
def record(judge: Any) -> Iterator[Recorder]:
    """Keep every request sent through `judge.generate` and `judge.choice_probs` (both
    normalisations) while the block runs; the judge's own methods are restored after it."""
    recorder = Recorder()
    own = {name: judge.__dict__[name] for name in ("generate", "choice_probs") if name in judge.__dict__}
    generate, choice_probs = judge.generate, judge.choice_probs

    def prefill() -> int:
        return int(judge.stats.prefill_tokens)

    def recorded_generate(requests: Sequence[Request], **kw: Any) -> Any:
        requests, before, start = list(requests), prefill(), time.perf_counter()
        out = generate(requests, **kw)
        recorder.add(requests, prefill() - before, time.perf_counter() - start)
        return out

    def recorded_choice_probs(requests: Sequence[Request], options: Sequence[str], **kw: Any) -> Any:
        requests, before, start = list(requests), prefill(), time.perf_counter()
        out = choice_probs(requests, options, **kw)
        recorder.add(requests, prefill() - before, time.perf_counter() - start)
        return out

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
    from .prompt_ids import prompt_token_keys
    digests: dict = {}
    return trie_nodes(prompt_token_keys(judge, r, digests) for r in requests)


def stage_breakdown(judge: Any, calls: Sequence[tuple]) -> dict[str, tuple[int, int, float]]:
    """Per stage (the meta "stage" of a call's first request), in order of first call: the prefill
    tokens the judge counted, the ideal's share: the trie nodes its prompts add to those of every
    earlier call, and the stage's seconds. The shares add up to the run's ideal, so a stage whose
    prefill is far above its share runs again what an earlier stage already ran."""
    from .prompt_ids import prompt_token_keys
    digests: dict = {}
    out: dict[str, list] = {}
    trie = Trie()
    for stage, requests, tokens, *seconds in calls:
        row = out.setdefault(stage, [0, 0, 0.0])
        row[0] += tokens
        row[1] += sum(trie.add(prompt_token_keys(judge, r, digests)) for r in requests)
        row[2] += seconds[0] if seconds else 0.0
    return {stage: (a, b, t) for stage, (a, b, t) in out.items()}


class Trie:
    """A token trie grown one sequence at a time; `add` says how many nodes the sequence added
    (its tokens past the longest prefix already held), so shares can be told per call."""

    def __init__(self) -> None:
        self.root: dict = {}
        self.nodes = 0

    def add(self, seq: Sequence[Hashable]) -> int:
        node, added = self.root, 0
        for token in seq:
            child = node.get(token)
            if child is None:
                child = node[token] = {}
                added += 1
            node = child
        self.nodes += added
        return added


def breakdown_line(name: str, stages: dict[str, tuple]) -> str:
    """`<name> by stage (prefill / its share of the ideal, seconds): eligibility 32,560 / 25,795, 3.1 s; ...`"""
    parts = "; ".join(f"{stage or '-'} {a:,} / {b:,}, {t:.1f} s" for stage, (a, b, t) in stages.items())
    return f"{name} by stage (prefill / its share of the ideal, seconds): {parts}"


def measure_with_ideal(name: str, n_images: int, judges: Sequence[Any], fn: Any,
                       cuda: bool = False, stages: bool = False) -> tuple[Any, Any]:
    """`bench.measure` of `fn`, with the ideal prefill of the requests it sent through `judges`
    (all on one model) in `Measure.extra["ideal_prefill"]`, and with `stages` the per-stage
    `stage_breakdown` in `extra["stages"]`; both counted after the timing stops."""
    from contextlib import ExitStack

    from . import measure
    with ExitStack() as stack:
        recorders = [stack.enter_context(record(j)) for j in judges]
        m, result = measure(name, n_images, judges, fn, cuda)
    m.extra["ideal_prefill"] = ideal_prefill(judges[0], [r for rec in recorders for r in rec.requests])
    if stages:
        m.extra["stages"] = stage_breakdown(judges[0], [c for rec in recorders for c in rec.calls])
    return m, result


def prefill_over_ideal(m: Any) -> float:
    """A path's prefill tokens over its own ideal (1.0: each distinct prefix prefilled once)."""
    ideal = m.extra["ideal_prefill"]
    return m.prefill_tokens / ideal if ideal else float("nan")


#: Table columns (`bench.table`) for a path measured by `measure_with_ideal`.
IDEAL_COLUMNS = (("ideal prefill", lambda m: m.extra.get("ideal_prefill", "")),
                 ("prefill/ideal", lambda m: f"{prefill_over_ideal(m):.3f}" if "ideal_prefill" in m.extra else ""))
