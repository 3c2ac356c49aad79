"""What an option's probability is, on every backend: one definition in one place.

P(option) is the probability that the judge's answer, right after the assistant prefix,
starts with the option: written bare or after one space ("Yes" or " Yes"), each form as the
tokenizer writes it in that context; the two forms' probabilities add. A form of several
tokens (" 1" is "Ġ" "1" on Qwen tokenizers) counts as the product of its tokens'
probabilities under teacher forcing. Options are then normalised over each other, and their
raw total is kept as `OptionProbs.mass`: below `MIN_OPTION_MASS` the judge was mostly not
answering with an option, and records flag the decision. An option a backend could not see
(a server's top-k without any of its forms) is never reported as 0: the result is
`truncated`, the option holds its upper bound, and methods treat it as a failed decision.
docs/judges.md says why.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

#: Below this option mass the judge mostly started its answer with something other than an
#: option (a newline, markdown, a refusal): more than half its answers would not be an option.
MIN_OPTION_MASS = 0.5


def surface_forms(option: str) -> tuple[str, str]:
    """The two ways an answer can start with `option` right after the prefix: bare, or after one space."""
    return (option, " " + option)


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


def read_top_logprobs(alternatives: Iterable[tuple[str, float]], options: Sequence[str],
                      normalize: bool = True) -> OptionProbs:
    """Option probabilities from one position's top-k (token, logprob) list, as a server gives it.

    A listed token counts for an option when it is one of the option's `surface_forms`. An
    option with no form listed is bounded, never 0: each form by the listed tokens that start
    it (" " for " 1": the rest of the form can only lower it), else by the k-th (smallest
    listed) probability or what the list leaves of 1, whichever is smaller. A listed option is bounded too when tokens that start its other form
    hold more than all listed options together (Qwen's " " before a digit): its reading would
    otherwise hide most of it.

    Examples:
        >>> cut = read_top_logprobs([(" No", math.log(0.9)), ("\\n", math.log(0.05))], ["Yes", "No"])
        >>> round(cut["No"], 3), round(cut.bounds["Yes"], 3), round(cut.mass, 3)
        (0.947, 0.05, 0.9)
    """
    pairs = [(t, math.exp(lp)) for t, lp in alternatives if isinstance(t, str) and t and math.isfinite(lp)]
    room = max(1.0 - math.fsum(p for _, p in pairs), math.ulp(1.0))  # what the list leaves; never 0
    kth = min(min((p for _, p in pairs), default=1.0), room)
    raw: dict[str, float] = {}
    hidden: dict[str, float] = {}
    unseen: dict[str, float] = {}
    for option in options:
        forms = surface_forms(option)
        raw[option] = math.fsum(p for t, p in pairs if t in forms)
        starts = [math.fsum(p for t, p in pairs if f.startswith(t) and t != f) for f in forms]
        hidden[option] = math.fsum(starts)
        unseen[option] = math.fsum(s if s > 0 else kth for s in starts)
    bounds: dict[str, float] = {}
    listed = math.fsum(raw.values())
    for option in options:
        if raw[option] == 0:
            bounds[option] = min(1.0, unseen[option], room + hidden[option])
        elif hidden[option] > listed:
            bounds[option] = min(1.0, raw[option] + hidden[option])
    return OptionProbs.from_raw(raw, options, normalize, bounds)
