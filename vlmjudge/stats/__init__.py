"""Pure statistics on numpy and scipy, no model and no judge: rank correlations, paired comparisons
of runs (intervals, tests, corrections, leaderboards) and agreement with people."""
