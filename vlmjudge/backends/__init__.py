"""One judge per engine, and the table `load_judge(model, backend=NAME)` reads.

Adding a backend: subclass `vlmjudge.judge.Judge`, name it in `backend`, and implement
`_generate` and `_choice_probs` on one chunk of requests (`_choice_probs_raw` and
`validate_options` where the engine sees token probabilities); the base class does the
cache, chunking, deduplication and counting. Extend `identity()` with whatever makes two of
its judges answer differently (the openai backend adds the endpoint). Then add a row here, or
load it without one as `backend="package.module:Class"`; its engine is imported on first use,
so this table imports nothing. tests/vlmjudge/backends/ holds each backend's tests.
"""
from __future__ import annotations

#: Backend name -> "module:Class" of its judge, imported when `load_judge` is asked for it.
BACKENDS = {
    "transformers": "vlmjudge.backends.hf.judge:TransformersJudge",
    "openai": "vlmjudge.backends.openai:OpenAIJudge",
    "replay": "vlmjudge.backends.replay:ReplayJudge",
    "vllm": "vlmjudge.backends.vllm:VLLMJudge",
}
