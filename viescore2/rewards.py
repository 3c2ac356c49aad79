"""GRPO rewards from parsed judge text: coverage-weighted F-beta (Dice at beta = 1), score and format.

Total = 1.0 * Dice + 0.3 * score + 0.1 * format. A term the example has no supervision for
is 0 for every completion of the group, so it adds no within-group difference. Targets and
completions are read with the same tolerant reader (`viescore2.parsing.parse_output`), as the
public release reads them (VIEScoreTwo ``train_grpo.py``). The reward
callables follow TRL's ``GRPOTrainer`` convention: they take ``prompts=``, ``completions=``
(strings or conversational message lists), ``completion_ids=`` and the dataset columns as
keyword arguments, and return one float per completion. The ground truth is the column
``target``: the target text in the judge format (what an SFT example would be trained to
write), so only the supervision it holds is rewarded.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .grid import DEFAULT_N, SCORE_KEYS, Grid, ParsedOutput
from .parsing import parse_output
from .scoring import MARK_WEIGHT, REWARD_WEIGHTS, fbeta_reward, score_reward, supervised_keys

TERMS = ("dice", "score", "format", "total")
FORMAT_RULES = ("any_score", "supervised")
# A target that names a grid section but holds no readable grid is corrupt data (the release refuses it).
_GRID_LABEL = re.compile(r"\b(cells?|artifact|misalign)\s*:")


@dataclass(frozen=True)
class Target:
    """The supervision one example carries: scores and/or the aggregate ground-truth grid.

    Examples:
        >>> target = Target.from_text("score: 8/10\\nr1: 1,2!\\nr2: 2", n=4)
        >>> target.scores, target.grid.lines(), target.has_scores, target.has_grid
        ({'score': 8.0}, ['r1: 1,2!', 'r2: 2'], True, True)
        >>> Target.from_text("artifact:\\ngarbled", n=4)
        Traceback (most recent call last):
        ...
        ValueError: target names a grid but none can be read: 'artifact:\\ngarbled'
    """

    scores: Mapping[str, float] = field(default_factory=dict)
    grid: Grid | None = None

    def __post_init__(self) -> None:
        if not self.has_scores and not self.has_grid:
            raise ValueError("a target needs scores, a grid, or both")

    @property
    def has_scores(self) -> bool:
        """True when a score is supervised: the overall score, or PQ and SC together."""
        return bool(supervised_keys(self.scores))

    @property
    def has_grid(self) -> bool:
        """True when localization is supervised (a clean ``none`` grid counts)."""
        return self.grid is not None

    @classmethod
    def from_text(cls, text: str, n: int = DEFAULT_N, strict: bool = False) -> "Target":
        """Read a target text in the judge format, tolerantly as the release does (``strict=True``: exactly).

        A target that labels a grid (``cells:``, ``artifact:``, ``misalign:``) without a readable
        grid raises ValueError, as does one with neither a grid nor a score.
        """
        parsed = parse_output(text, n=n, strict=strict)
        if parsed.union is None and _GRID_LABEL.search(text):
            raise ValueError(f"target names a grid but none can be read: {text[:80]!r}")
        return cls(dict(parsed.scores), parsed.union)


def format_reward(parsed: ParsedOutput, target: Target, rule: str = "any_score") -> float:
    """1 when the output is well formed for the target: its grid parses if localization is supervised.

    Without localization supervision, ``rule="any_score"`` (the default, the release's and the
    paper's "a score can be parsed") asks for an overall score or both PQ and SC;
    ``rule="supervised"`` asks for every score the target supervises.

    Examples:
        Without a grid target, any readable overall score is well formed by default; the
        "supervised" rule asks for the very scores the target holds:

        >>> from viescore2.parsing import parse_output
        >>> parsed, target = parse_output("score: 7/10", n=4), Target(scores={"pq": 7, "sc": 5})
        >>> format_reward(parsed, target), format_reward(parsed, target, rule="supervised")
        (1.0, 0.0)
    """
    if rule not in FORMAT_RULES:
        raise ValueError(f"format rule must be one of {FORMAT_RULES}, got {rule!r}")
    if target.has_grid:
        return 1.0 if parsed.grid_parsed else 0.0
    if rule == "supervised":
        keys = [k for k in SCORE_KEYS if target.scores.get(k) is not None]
        return 1.0 if all(parsed.scores.get(k) is not None for k in keys) else 0.0
    return 1.0 if supervised_keys(parsed.scores) else 0.0


def rewards(text: str, target: Target, beta: float = 1.0, weights: Mapping[str, float] = REWARD_WEIGHTS,
            n: int = DEFAULT_N, mark_weight: float = MARK_WEIGHT, format_rule: str = "any_score") -> dict[str, float]:
    """All reward terms and their weighted total for one completion text (n: grid size if no grid target).

    Examples:
        The marked cell (1, 2) weighs 2: TP_w = 3, FP = 0, FN_w = 1, so Dice = 6/7; the score is
        off by 1 (0.9); total = 6/7 + 0.3 x 0.9 + 0.1 x 1:

        >>> target = Target.from_text("score: 8/10\\nr1: 1,2!\\nr2: 2", n=4)
        >>> {term: round(value, 4) for term, value in rewards("score: 7/10\\nr1: 1,2", target).items()}
        {'dice': 0.8571, 'score': 0.9, 'format': 1.0, 'total': 1.2271}
    """
    n = target.grid.n if target.grid is not None else n
    parsed = parse_output(text, n=n)
    terms = {
        "dice": fbeta_reward(parsed.union, target.grid, beta, mark_weight) if target.has_grid else 0.0,
        "score": score_reward(parsed.scores, target.scores) if target.has_scores else 0.0,
        "format": format_reward(parsed, target, format_rule),
    }
    terms["total"] = sum(weights[k] * terms[k] for k in ("dice", "score", "format"))
    return terms


def completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or the text parts of a conversational message list joined by "\\n".

    Examples:
        >>> completion_text([{"role": "assistant", "content": [{"type": "text", "text": "score: 7/10"},
        ...                                                    {"type": "text", "text": "none"}]}])
        'score: 7/10\\nnone'
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Mapping):
        completion = [completion]
    if isinstance(completion, Sequence):
        parts = []
        for message in completion:
            content = message.get("content") if isinstance(message, Mapping) else None
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, Sequence):
                parts.extend(p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text")
            else:
                raise TypeError(f"unsupported message in completion: {message!r}")
        return "\n".join(parts)
    raise TypeError(f"a completion must be a string or a list of messages, got {type(completion).__name__}")


@functools.lru_cache(maxsize=4096)
def _target(text: str, n: int) -> Target:
    return Target.from_text(text, n)


class RewardFunction:
    """One reward term as a TRL ``reward_funcs`` callable reading the ``target`` column.

    Examples:
        A TRL reward callable: one float per completion, the target text from the dataset column:

        >>> total = RewardFunction("total", n=4)
        >>> target = ["score: 8/10\\nr1: 1,2!\\nr2: 2"] * 2
        >>> scores = total(completions=["score: 7/10\\nr1: 1,2", "garbled"], target=target)
        >>> total.__name__, [round(s, 4) for s in scores]
        ('viescore2_total', [1.2271, 0.0])
    """

    def __init__(self, term: str = "total", n: int = DEFAULT_N, beta: float = 1.0,
                 weights: Mapping[str, float] = REWARD_WEIGHTS, target_column: str = "target") -> None:
        if term not in TERMS:
            raise ValueError(f"term must be one of {TERMS}, got {term!r}")
        self.term, self.n, self.beta, self.weights, self.target_column = term, n, beta, dict(weights), target_column
        self.__name__ = f"viescore2_{term}"  # TRL logs rewards/<name>/mean

    def __call__(self, prompts: Sequence | None = None, completions: Sequence | None = None,
                 completion_ids: Sequence | None = None, **columns: Any) -> list[float]:
        if completions is None:
            raise TypeError("completions= is required")
        if self.target_column not in columns:
            raise KeyError(f"dataset column {self.target_column!r} (the target text) is missing; "
                           f"got columns {sorted(k for k in columns if not k.startswith(('trainer_', 'log_')))}")
        targets = columns[self.target_column]
        if len(targets) != len(completions):
            raise ValueError(f"{len(completions)} completions but {len(targets)} targets")
        return [rewards(completion_text(c), _target(t, self.n), self.beta, self.weights, self.n)[self.term]
                for c, t in zip(completions, targets)]

    def __repr__(self) -> str:
        return f"RewardFunction(term={self.term!r}, n={self.n}, beta={self.beta})"


def reward_functions(n: int = DEFAULT_N, beta: float = 1.0,
                     target_column: str = "target") -> tuple[list[RewardFunction], list[float]]:
    """The Dice, score and format callables with their weights (1, 0.3, 0.1) for ``GRPOConfig.reward_weights``.

    Examples:
        >>> functions, weights = reward_functions(n=4)
        >>> [f.__name__ for f in functions], weights
        (['viescore2_dice', 'viescore2_score', 'viescore2_format'], [1.0, 0.3, 0.1])
    """
    terms = ("dice", "score", "format")
    return ([RewardFunction(t, n=n, beta=beta, target_column=target_column) for t in terms],
            [REWARD_WEIGHTS[t] for t in terms])
