"""TerraVis against its release (ShyFoo/TerraVis): one test per corpus line of tests/data/golden/terravis."""
import pytest

from terravis import scoring

from .replay import cases, replay


@pytest.mark.parametrize("case", cases("terravis/score_formula"))
def test_score_formula(case):
    """S = exp(-lambda (N_major + alpha N_minor)), as the release computes it."""
    replay("terravis/score_formula", case, lambda inp: {"score": scoring.score_from_counts(
        inp["n_major"], inp["n_minor"], lam=inp["lambda"], alpha=inp["alpha"])})
