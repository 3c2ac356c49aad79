"""What an option's probability is, on every backend: one definition in one place.

P(option) is the probability that the judge's answer, right after the assistant prefix,
starts with the option written as the next word: after one space, unless the prefix ends in
whitespace ("Answer:" -> " Yes"; "Answer:\n" -> "Yes"), as `surface_form` writes it. A form
of several tokens (" 1" is "Ġ" "1" on Qwen tokenizers) counts as the product of its tokens'
probabilities under teacher forcing. Options are then normalised over each other, and their
raw total is kept as `OptionProbs.mass`: below `MIN_OPTION_MASS` the judge was mostly not
answering with an option, and records flag the decision. An option a backend could not see
(a server's top-k without it) is never reported as 0: the result is `truncated`, the option
holds its upper bound, and methods treat it as a failed decision. docs/judges.md says why.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

#: Below this option mass the judge mostly started its answer with something other than an
#: option (a newline, markdown, a refusal): more than half its answers would not be an option.
MIN_OPTION_MASS = 0.5


def surface_form(option: str, before: str) -> str:
    """How an answer starts with `option` right after the text `before` (the prefix): as the next
    word, after a space unless `before` is empty or ends in whitespace.

    Examples:
        >>> surface_form("Yes", "Answer:"), surface_form("Yes", "Answer:\\n"), surface_form("1", "")
        (' Yes', 'Yes', '1')
    """
    return option if not before or before[-1].isspace() else " " + option


def single_token_ids(tokenizer: Any, tail: str, options: Sequence[str]) -> list[int]:
    """The one token id each option's `surface_form` is after the prompt's `tail`, for backends
    that restrict the first answer token to the options (constrained generation's
    `first_options`); a ValueError when an option is not one token there, or two share one."""
    base = tokenizer.encode(tail, add_special_tokens=False)
    ids = []
    for option in options:
        full = tokenizer.encode(tail + surface_form(option, tail), add_special_tokens=False)
        if len(full) != len(base) + 1 or full[:len(base)] != base:
            pieces = tokenizer.convert_ids_to_tokens(full[len(base):] if full[:len(base)] == base else full)
            raise ValueError(f"option {option!r} is not a single token after {tail[-12:]!r} "
                             f"(it tokenises as {pieces}); choose single-token options")
        ids.append(full[-1])
    if len(set(ids)) != len(ids):
        raise ValueError(f"options {list(options)} share token ids {ids}")
    return ids


class OptionProbs(dict):
    """option -> probability (a plain dict to read), with what a number alone cannot say.

    `mass`: the options' total probability before normalising over them (None where nothing
    measured it: a replayed text answer). `bounds`: option -> upper bound of its raw
    probability, for options the backend did not see; their values are those bounds (never
    0), so the result is `truncated`.

    Examples:
        >>> probs = OptionProbs.from_raw({"Yes": 0.375, "No": 0.125}, ["Yes", "No"])
        >>> probs, probs.mass, probs.low_mass, probs.truncated
        ({'Yes': 0.75, 'No': 0.25}, 0.5, False, False)
        >>> cut = OptionProbs.from_raw({"No": 0.02}, ["Yes", "No"], bounds={"Yes": 0.001})
        >>> round(cut["Yes"], 4), cut.truncated, OptionProbs.from_json(cut.to_json()).bounds
        (0.0476, True, {'Yes': 0.001})
    """

    def __init__(self, probs: Mapping[str, float] = (), mass: float | None = None,
                 bounds: Mapping[str, float] | None = None) -> None:
        super().__init__(probs)
        self.mass = mass
        self.bounds = dict(bounds or {})

    @property
    def truncated(self) -> bool:
        """True when some option was not seen and holds only its upper bound."""
        return bool(self.bounds)

    @property
    def low_mass(self) -> bool:
        """True when a measured option mass is below `MIN_OPTION_MASS`."""
        return self.mass is not None and self.mass < MIN_OPTION_MASS

    @classmethod
    def from_raw(cls, raw: Mapping[str, float], options: Sequence[str], normalize: bool = True,
                 bounds: Mapping[str, float] | None = None) -> "OptionProbs":
        """From raw (full-vocabulary) option probabilities; an option in `bounds` takes its
        bound. Normalised over the options unless `normalize` is False; empty (a failed
        answer) when nothing is left to normalise."""
        bounds = {o: float(b) for o, b in (bounds or {}).items() if o in options}
        values = {o: float(bounds[o]) if o in bounds else float(raw.get(o, 0.0)) for o in options}
        mass = math.fsum(v for o, v in values.items() if o not in bounds)
        if not normalize:
            return cls(values, mass, bounds)
        total = math.fsum(values.values())
        if not total > 0:
            return cls()
        return cls({o: v / total for o, v in values.items()}, mass, bounds)

    @classmethod
    def from_logprobs(cls, logprobs: Mapping[str, float], options: Sequence[str],
                      normalize: bool = True) -> "OptionProbs":
        """From each option's full-vocabulary log-probability (the vLLM backends read them by token
        id): a softmax over the options, taken relative to the largest so that tiny values do not
        underflow, with their raw total as the mass; raw probabilities when `normalize` is False.

        Examples:
            >>> probs = OptionProbs.from_logprobs({"Yes": math.log(0.375), "No": math.log(0.125)}, ["Yes", "No"])
            >>> {o: round(p, 6) for o, p in probs.items()}, round(probs.mass, 6)
            ({'Yes': 0.75, 'No': 0.25}, 0.5)
        """
        values = [float(logprobs[o]) for o in options]
        mass = math.fsum(math.exp(v) for v in values)
        if not normalize:
            return cls({o: math.exp(v) for o, v in zip(options, values)}, mass)
        top = max(values)
        weights = [math.exp(v - top) for v in values]
        total = math.fsum(weights)
        return cls({o: w / total for o, w in zip(options, weights)}, mass)

    def to_json(self) -> dict[str, Any]:
        """The cached form: the probabilities, the mass and the bounds (`cache.answer_problem` checks it)."""
        return {"probs": dict(self), "mass": self.mass, "bounds": dict(self.bounds)}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> "OptionProbs":
        """The inverse of `to_json`."""
        return cls(value["probs"], value.get("mass"), value.get("bounds"))

    def __reduce__(self) -> tuple:
        return (OptionProbs.from_json, (self.to_json(),))


def as_option_probs(value: Mapping[str, float] | None) -> OptionProbs:
    """A backend's answer as `OptionProbs` (a plain dict carries no mass)."""
    if isinstance(value, OptionProbs):
        return value
    return OptionProbs(value or {})


def read_top_logprobs(alternatives: Iterable[tuple[str, float]], options: Sequence[str], before: str,
                      normalize: bool = True) -> OptionProbs:
    """Option probabilities from one position's top-k (token, logprob) list, as a server gives it,
    after the prefix `before`.

    A listed token counts for an option when it is the option's `surface_form`. An option whose
    form is not listed is bounded, never 0: by the listed tokens that start its form (" " for
    " 1": the rest of the form can only lower it), else by the k-th (smallest listed)
    probability or what the list leaves of 1, whichever is smaller. A listed option is bounded
    too when tokens that start its form hold more than all listed options together: a form
    written in pieces would otherwise hide most of its probability.

    Examples:
        >>> cut = read_top_logprobs([(" No", math.log(0.9)), ("\\n", math.log(0.05))], ["Yes", "No"], "Answer:")
        >>> round(cut["No"], 3), round(cut.bounds["Yes"], 3), round(cut.mass, 3)
        (0.947, 0.05, 0.9)
    """
    pairs = [(t, math.exp(lp)) for t, lp in alternatives if isinstance(t, str) and t and math.isfinite(lp)]
    room = max(1.0 - math.fsum(p for _, p in pairs), math.ulp(1.0))  # what the list leaves; never 0
    kth = min(min((p for _, p in pairs), default=1.0), room)
    raw: dict[str, float] = {}
    hidden: dict[str, float] = {}
    for option in options:
        form = surface_form(option, before)
        raw[option] = math.fsum(p for t, p in pairs if t == form)
        hidden[option] = math.fsum(p for t, p in pairs if form.startswith(t) and t != form)
    bounds: dict[str, float] = {}
    listed = math.fsum(raw.values())
    for option in options:
        if raw[option] == 0:
            bounds[option] = min(1.0, hidden[option] or kth)
        elif hidden[option] > listed:
            bounds[option] = min(1.0, raw[option] + hidden[option])
    return OptionProbs.from_raw(raw, options, normalize, bounds)
