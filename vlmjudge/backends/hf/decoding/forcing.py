"""JSON output that always closes within its token budget (the transformers backend's guarantee).

Each row under a JSON-schema constraint carries a `RowCloser` with a plan: the tokens of the
shortest ending from the current state (`closing`), checked on a fork of the row's matcher
whenever the plan is close to deciding anything. Before each token the closer checks that the
ending after it, plus one end token, still fits the budget left; if not, the row takes its
plan's first token instead. So a row whose budget runs out has written a complete document and
its end token; a budget below the shortest document is refused when the request is made
(`Closers.check_budgets`). EBNF rows get no closer and end with "length", as on servers. Plans
are written as tokens by `ByteVocab` (longest ordinary-token match); a tokenizer without a
token for every byte decodes without closers (logged once).
"""
from __future__ import annotations

import logging
import threading
import weakref
from typing import Any

from .closing import JsonWalker, Unsupported

logger = logging.getLogger(__name__)

#: Verify a plan on a matcher fork when its reserve is within this many tokens of the budget.
VERIFY_MARGIN = 8


class ByteVocab:
    """Token ids by their bytes, to write any text as tokens (greedy longest match)."""

    def __init__(self, tokenizer: Any, decoded_vocab: list[bytes], vocab_size: int) -> None:
        excluded = set(getattr(tokenizer, "all_special_ids", ()) or ())
        excluded |= set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
        self.token_bytes = list(decoded_vocab)
        self.by_bytes: dict[bytes, int] = {}
        for i, data in enumerate(self.token_bytes[:vocab_size]):
            if data and i not in excluded:
                self.by_bytes.setdefault(data, i)
        self.longest = max((len(b) for b in self.by_bytes), default=0)
        self.complete = all(bytes([b]) in self.by_bytes for b in range(256))
        self._ids: dict[bytes, list[int]] = {}

    def encode(self, text: bytes) -> list[int]:
        """`text` as token ids, each the longest vocabulary entry that matches (memoised)."""
        if text not in self._ids:
            ids, at = [], 0
            while at < len(text):
                for width in range(min(self.longest, len(text) - at), 0, -1):
                    token = self.by_bytes.get(text[at:at + width])
                    if token is not None:
                        ids.append(token)
                        at += width
                        break
                else:
                    raise ValueError(f"no token writes byte {text[at]:#x}")
            self._ids[text] = ids
        return self._ids[text]

    def count(self, text: bytes) -> int:
        return len(self.encode(text))


class Plan:
    """An ending of the document: its text, token count, and (once asked) its token ids,
    written piece by piece (`leaves`) so that they are exactly `n_tokens`."""

    def __init__(self, text: bytes, n_tokens: int, leaves: tuple[bytes, ...] = (),
                 ids: list[int] | None = None, verified: bool = False) -> None:
        self.text, self.n_tokens, self.leaves = text, n_tokens, leaves
        self._ids, self.verified = ids, verified

    def ids(self, vocab: ByteVocab) -> list[int]:
        if self._ids is None:
            self._ids = [t for leaf in self.leaves for t in vocab.encode(leaf)]
        return self._ids

    def verify(self, matcher: Any) -> bool:
        """Whether the grammar, from `matcher`'s state, accepts this text as a complete document."""
        if not self.verified:
            probe = matcher.fork()
            self.verified = (probe.accept_string(self.text) if self.text else True) and probe.is_completed()
        return self.verified

    def after_first(self, vocab: ByteVocab) -> "Plan":
        ids = self.ids(vocab)
        rest = b"".join(vocab.token_bytes[t] for t in ids[1:])
        return Plan(rest, len(ids) - 1, ids=ids[1:], verified=self.verified)


def compiler_with_closers(tokenizer: Any, vocab_size: int, stop_ids: list[int]) -> Any:
    """A `vlmjudge.grammar.ConstraintCompiler` for the tokenizer, its `Closers` as `.closers`.

    Shared by every judge on the same tokenizer object (and vocabulary size, stop ids and
    tokenizer length): building one reads the whole vocabulary (a third of a second for a
    150k-token vocabulary), and what it holds follows from those alone. Dropped with the
    tokenizer."""
    key = (id(tokenizer), vocab_size, tuple(stop_ids), len(tokenizer))
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is not None and found[0]() is tokenizer:
            return found[1]
    from ....grammar import ConstraintCompiler
    compiler = ConstraintCompiler(tokenizer, vocab_size, stop_ids)
    compiler.closers = Closers(compiler, tokenizer)
    with _SHARED_LOCK:
        _SHARED[key] = (weakref.ref(tokenizer), compiler)
    weakref.finalize(tokenizer, _forget, key)
    return compiler


#: Compilers by (tokenizer id, vocabulary size, stop ids, tokenizer length), each beside a weak
#: reference to its tokenizer (an id alone could be reused by a later object).
_SHARED: dict[tuple, tuple[Any, Any]] = {}
_SHARED_LOCK = threading.Lock()


def _forget(key: tuple) -> None:
    with _SHARED_LOCK:
        _SHARED.pop(key, None)


class Closers:
    """Per-constraint walkers and the shared vocabulary of one tokenizer."""

    def __init__(self, compiler: Any, tokenizer: Any) -> None:
        """`compiler` is the tokenizer's `vlmjudge.grammar.ConstraintCompiler`."""
        self.compiler = compiler
        self.vocab = ByteVocab(tokenizer, compiler.tokenizer_info.decoded_vocab, compiler.vocab_size)
        self.stop_ids = list(compiler.stop_token_ids)
        self._walkers: dict[str, JsonWalker | None] = {}
        self._shortest: dict[str, int] = {}
        if not self.vocab.complete:
            logger.warning("the tokenizer has no token for some single bytes: constrained JSON output "
                           "is not forced to close within its budget")

    def walker(self, constraint: Any) -> JsonWalker | None:
        """The constraint's walker (None for EBNF, or where decoding cannot be planned)."""
        if constraint.kind != "json_schema" or not self.vocab.complete:
            return None
        if constraint.spec not in self._walkers:
            from ....grammar import bounded_schema
            self._walkers[constraint.spec] = JsonWalker(bounded_schema(constraint.schema), self.vocab.count)
        return self._walkers[constraint.spec]

    def row(self, constraint: Any, matcher: Any) -> "RowCloser | None":
        """A closer for one row starting at `matcher`'s (fresh) state, or None without one."""
        walker = self.walker(constraint)
        if walker is None:
            return None
        try:
            closer = RowCloser(walker, self.vocab, matcher, self.stop_ids)
        except Unsupported as exc:
            logger.warning("constrained JSON output is not forced to close for this schema: %s", exc)
            self._walkers[constraint.spec] = None
            return None
        if not closer.plan.verify(matcher):
            logger.warning("the planned shortest document does not match the grammar; "
                           "decoding this schema without a closer")
            self._walkers[constraint.spec] = None
            return None
        return closer

    def shortest(self, constraint: Any) -> int:
        """Tokens of the shortest document a JSON-schema constraint allows, its end token
        included (0 where no closer plans it)."""
        if constraint.spec not in self._shortest:
            closer = self.row(constraint, self.compiler.matcher(constraint))
            self._shortest[constraint.spec] = closer.reserve if closer is not None else 0
        return self._shortest[constraint.spec]

    def check_budgets(self, requests: list) -> None:
        """Raise ValueError for a JSON-schema request whose budget cannot hold the shortest
        valid document and its end token (the guarantee starts from there)."""
        for i, r in enumerate(requests):
            c = r.constraint
            if c is not None and c.kind == "json_schema":
                need = self.shortest(c)
                if need > r.decoding.max_new_tokens:
                    raise ValueError(f"request {i}: max_new_tokens={r.decoding.max_new_tokens} is shorter than "
                                     f"the shortest document its JSON schema allows ({need - 1} tokens and "
                                     "the end token); raise the budget")


class RowCloser:
    """One row's plan to end its document, kept current as tokens are chosen."""

    def __init__(self, walker: JsonWalker, vocab: ByteVocab, matcher: Any, stop_ids: list[int]) -> None:
        self.walker, self.vocab, self.matcher = walker, vocab, matcher
        self.eos_id, self.stop_ids = stop_ids[0], frozenset(stop_ids)
        self.stack = walker.start()
        self.plan = self._plan(self.stack, matcher)
        self._fresh = True  # `plan` is the shortest ending from here (not a steered plan's rest)
        self._next: tuple[int, list, Plan] | None = None
        self.steered = 0  # tokens taken from the plan instead of the row's own choice

    @property
    def reserve(self) -> int:
        """Tokens the current plan needs, its end token included."""
        return self.plan.n_tokens + 1

    def _plan(self, stack: list, matcher: Any) -> Plan:
        pieces = self.walker.closing(stack, matcher.fork())
        return Plan(b"".join(p[0] for p in pieces), sum(p[1] for p in pieces),
                    tuple(leaf for p in pieces for leaf in p[2]))

    def choose(self, candidate: int, remaining: int, allowed: bool | None = None) -> int:
        """The token to take when the row wants `candidate` with `remaining` tokens left
        (this one included). `allowed`: whether the matcher's current token bitmask holds
        `candidate` (None: not known, the matcher is asked); the bitmask is the set of tokens
        the matcher accepts, so a row that read it need not fork the matcher to ask again."""
        self._next = None
        if candidate in self.stop_ids:  # the grammar allows an end token only once complete
            return candidate
        if self.stack is None:  # the walker lost the document: write the known ending
            return self._steer()
        if self._fresh and self._keeps_ending(candidate) and self.plan.n_tokens + 1 < remaining - 1 - VERIFY_MARGIN:
            if allowed if allowed is not None else self.matcher.fork().accept_token(candidate):
                self._next = (candidate, None, None)  # the ending is the same, far inside the budget: taken
                return candidate
            return self._steer()
        fork = self.matcher.fork()
        if fork.accept_token(candidate):
            stack = self.walker.copy(self.stack)
            try:
                self.walker.feed(stack, self.vocab.token_bytes[candidate])
                plan = self._plan(stack, fork)
            except Unsupported:
                plan = None
            if plan is not None and plan.n_tokens + 1 <= remaining - 1:
                near = plan.n_tokens + 1 >= remaining - 1 - VERIFY_MARGIN
                if not near or plan.verify(fork):
                    self._next = (candidate, stack, plan)
                    return candidate
        return self._steer()

    def _keeps_ending(self, token: int) -> bool:
        """Whether `token` leaves the shortest ending as it is: plain printable ASCII (no quote,
        no backslash) inside a string value that already has its minimum length. Such bytes only
        lengthen the string, so the plan's text and token count stay, and `choose` skips
        re-planning (the same decision as planning anew: see `_plan`, `JsonWalker.closing`)."""
        top = self.stack[-1] if self.stack else None
        if top is None or top.kind != "string" or top.is_key or top.pending or top.escape:
            return False
        if top.count < int(top.schema.get("minLength", 0)):
            return False
        data = self.vocab.token_bytes[token]
        return bool(data) and all(0x20 <= b < 0x7F and b not in (0x22, 0x5C) for b in data)

    def _steer(self) -> int:
        """The plan's next token (its end token once the text is written)."""
        if not self.plan.verify(self.matcher):
            raise RuntimeError("the closing plan of a constrained row does not match its grammar")
        ids = self.plan.ids(self.vocab)
        token = ids[0] if ids else self.eos_id
        self.steered += 1
        return token

    def advance(self, token: int) -> None:
        """After the matcher accepted `token`."""
        if token in self.stop_ids:
            return
        if self._next is not None and self._next[0] == token and self._next[1] is None:
            self._feed(token)  # `_keeps_ending`: the same ending text, planned afresh from here
            self.plan = Plan(self.plan.text, self.plan.n_tokens, self.plan.leaves)
        elif self._next is not None and self._next[0] == token:
            _, self.stack, self.plan = self._next
            self._fresh = True
        elif self.plan.n_tokens and self.plan.ids(self.vocab)[0] == token:
            self._feed(token)
            self.plan = self.plan.after_first(self.vocab)
            self._fresh = False
        else:  # a token the closer did not choose (tests drive matchers by hand)
            self._feed(token)
            if self.stack is None:
                raise RuntimeError("a constrained row took a token its closer cannot follow")
            self.plan = self._plan(self.stack, self.matcher)
            self._fresh = True
        self._next = None

    def _feed(self, token: int) -> None:
        """Move the walker over a token; where it cannot follow (an `anyOf` whose branches
        start alike, say), drop it: the row then writes its current plan, a valid ending."""
        if self.stack is None:
            return
        try:
            self.walker.feed(self.stack, self.vocab.token_bytes[token])
        except Unsupported as exc:
            logger.debug("closer stops following a row: %s", exc)
            self.stack = None
