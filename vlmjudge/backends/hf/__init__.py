"""The in-process transformers backend (`load_judge(..., backend="transformers")`).

The judge and what it needs around it (loading, checkpoint identity, token memo, batch
planning) sit here; `prefix/` shares prompt prefixes and keeps KV rows and vision outputs
across calls, `decoding/` constrains and closes generated answers. The judge itself is
`vlmjudge.backends.hf.judge.TransformersJudge`; this package imports nothing, so loading one
room does not load the others.
"""
