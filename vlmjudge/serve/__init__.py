"""`vlmjudge serve`: start vLLM's (or SGLang's) OpenAI-compatible server for the judges.

Why a launcher: the engines serve the API far better than a server of our own could; the
methods need only their settings right (prefix caching, full logprobs, xgrammar without
free whitespace, loopback). `engine` builds the command, `cli` parses the flags and runs it.
Clients use the openai backend (`backend="openai"`, `base_url=".../v1"`); docs/serving.md.
"""
