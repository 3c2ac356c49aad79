"""Statistics for comparing judged runs: paired intervals, tests, corrections and leaderboards."""
