"""The evaluate module folders (`metrics/<name>/`), installed as `vlmjudge.metric_modules`."""
