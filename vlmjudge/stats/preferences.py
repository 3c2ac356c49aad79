"""Bradley-Terry strengths from pairwise preferences, with bootstrap bounds over the comparisons.

P(i beats j) = 1 / (1 + exp(s_j - s_i)) on the natural-log scale, log-strengths summing to 0.
Ties count as half a win each way. The fit is Newton's method on the log-likelihood, run on all
bootstrap resamples at once; a small prior (games tied against a player of strength 0) keeps players who
never lost or never won finite, as an arena's sparse resamples often make them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Iterable

import numpy as np

_OUTCOMES = {"a": 1.0, "b": 0.0, "tie": 0.5}


@dataclass(frozen=True)
class PlayerStrength:
    """One player's log-strength, its bootstrap interval, rank (1 = strongest), wins and games."""
    player: Hashable
    strength: float
    low: float
    high: float
    rank: int
    wins: float
    games: int


@dataclass(frozen=True)
class BradleyTerry:
    """Players in rank order, with how the fit was made."""
    players: tuple[PlayerStrength, ...]
    n_comparisons: int
    n_resamples: int
    confidence: float
    prior: float
    n_degenerate: int

    def __getitem__(self, player: Hashable) -> PlayerStrength:
        """A player's row by name."""
        for row in self.players:
            if row.player == player:
                return row
        raise KeyError(player)

    def win_probability(self, i: Hashable, j: Hashable) -> float:
        """Fitted chance that i is preferred to j."""
        return float(1 / (1 + np.exp(self[j].strength - self[i].strength)))


def _parse(comparisons: Iterable[tuple]) -> tuple[list, np.ndarray, np.ndarray, np.ndarray]:
    """Players, and per comparison: index of a, index of b, a's score (1 win, 0 loss, 0.5 tie)."""
    players: dict[Hashable, int] = {}
    first, second, score = [], [], []
    for comp in comparisons:
        if len(comp) == 2:
            a, b, s = comp[0], comp[1], 1.0
        elif len(comp) == 3:
            a, b, s = comp
            s = _OUTCOMES[s] if isinstance(s, str) else float(s)
        else:
            raise ValueError(f"a comparison is (winner, loser) or (a, b, outcome), not {comp!r}")
        if a == b or not 0 <= s <= 1:
            raise ValueError(f"bad comparison {comp!r}: two different players, outcome in [0, 1]")
        first.append(players.setdefault(a, len(players)))
        second.append(players.setdefault(b, len(players)))
        score.append(s)
    if not score:
        raise ValueError("no comparisons")
    return list(players), np.array(first), np.array(second), np.array(score)


def _fit(wins: np.ndarray, prior: float, tol: float, max_iter: int) -> np.ndarray:
    """Log-strengths (summing to 0) for a batch of win matrices, shape (R, P, P) -> (R, P).

    wins[r, i, j] is i's score against j. Newton steps on the concave log-likelihood, each step
    shrunk to move no strength by more than 2 (a guard for lopsided records). Without a prior a
    batch row where someone never won or never lost has no finite fit: it comes back NaN.
    """
    n_rows, n_players, _ = wins.shape
    games = wins + np.swapaxes(wins, 1, 2)
    won, played = wins.sum(axis=2), games.sum(axis=2)
    degenerate = ((won <= 0) | (won >= played)).any(axis=1) if prior == 0 else np.zeros(n_rows, bool)
    if degenerate.any():
        stand_in = 0.5 * (1 - np.eye(n_players))
        wins, games = wins.copy(), games.copy()
        wins[degenerate], games[degenerate] = stand_in, 2 * stand_in
        won = wins.sum(axis=2)
    theta = np.zeros((n_rows, n_players))
    diag = np.arange(n_players)
    for _ in range(max_iter):
        pi = 1 / (1 + np.exp(theta[:, None, :] - theta[:, :, None]))
        sig = 1 / (1 + np.exp(-theta))
        grad = won - (games * pi).sum(axis=2) + prior / 2 - prior * sig
        curv = games * pi * (1 - pi)
        neg_hess = -curv
        neg_hess[:, diag, diag] = curv.sum(axis=2) + prior * sig * (1 - sig) + 1e-9
        step = np.linalg.solve(neg_hess, grad[..., None])[..., 0]
        size = np.abs(step).max(axis=1, keepdims=True)
        theta += step * np.minimum(1.0, 2.0 / np.maximum(size, 1e-300))
        if size.max() < tol:
            break
    theta -= theta.mean(axis=1, keepdims=True)
    theta[degenerate] = np.nan
    return theta


def bradley_terry(comparisons: Iterable[tuple], n_resamples: int = 1000, seed: int = 0,
                  confidence: float = 0.95, prior: float = 1.0, tol: float = 1e-10,
                  max_iter: int = 100) -> BradleyTerry:
    """Fit strengths and bootstrap percentile bounds by resampling comparisons with replacement.

    comparisons: (winner, loser) tuples, or (a, b, outcome) with outcome a's score in [0, 1] or
    one of "a", "b", "tie". prior: tied games each player plays against a strength-0 player;
    with prior=0 every player must have won and lost at least once, and resamples where someone
    did not are left out of the bounds (counted in n_degenerate).
    """
    players, first, second, score = _parse(comparisons)
    n_players, n = len(players), len(score)
    kinds, counts = np.unique(np.stack([first, second, score]), axis=1, return_counts=True)
    i, j, s = kinds[0].astype(int), kinds[1].astype(int), kinds[2]
    contrib = np.zeros((len(s), n_players, n_players))
    contrib[np.arange(len(s)), i, j] = s
    contrib[np.arange(len(s)), j, i] = 1 - s
    full = np.tensordot(counts.astype(float), contrib, axes=1)
    wins, games = full.sum(axis=1), (full + full.T).sum(axis=1)
    if prior == 0 and ((wins == 0) | (wins == games)).any():
        raise ValueError("with prior=0 every player needs a win and a loss; use prior > 0")
    strength = _fit(full[None], prior, tol, max_iter)[0]
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, counts / n, size=n_resamples).astype(float)
    boot = _fit(np.tensordot(draws, contrib, axes=1), prior, tol, max_iter)
    tail = 100 * (1 - confidence) / 2
    low, high = np.nanpercentile(boot, [tail, 100 - tail], axis=0) if np.isfinite(boot).any() \
        else np.full((2, n_players), np.nan)
    rank = 1 + (strength[None, :] > strength[:, None]).sum(axis=1)
    rows = [PlayerStrength(players[k], float(strength[k]), float(low[k]), float(high[k]), int(rank[k]),
                           float(wins[k]), int(round(games[k]))) for k in range(n_players)]
    rows.sort(key=lambda r: (r.rank, str(r.player)))
    return BradleyTerry(tuple(rows), n, n_resamples, confidence, prior, int(np.isnan(boot).any(axis=1).sum()))
