"""A vLLM-compatible checkpoint built here with its decisions set in its weights, for the backends side by side.

Why in the weights: the engines in other processes (vLLM's engine core, a server) see no forward
hook, so the eligibility answer (every image eligible) and the share of positive checks are set
by one residual dimension held constant, which the LM head reads for the chosen tokens.
"""
from __future__ import annotations

import math
import tempfile
from typing import Any, Sequence

import numpy as np

from . import judge_on, load_model, option_token_ids
from .backends import free_memory
from .random_vlm import CONFIGS, build_random_qwen3vl, processor_with_realistic_tokens
from .terravis_setup import ELIGIBILITY_OPTIONS, bench_pack

#: Smallest log-odds of the first eligibility option a built checkpoint gets on every image.
ELIGIBLE_MARGIN = 30.0
#: Residual dimension a built checkpoint holds constant, read by the LM head for shifted tokens.
HELD_DIM = 0


def hold_dimension(model: Any) -> None:
    """Hold residual dimension `HELD_DIM` at 1 for every text token (nothing writes into it) and
    let no LM-head row read it yet; `shift_tokens` then moves chosen tokens' logits by a multiple
    of that constant, in the weights."""
    import torch
    lm = model.model.language_model
    with torch.no_grad():
        lm.embed_tokens.weight[:, HELD_DIM] = 1.0
        for layer in lm.layers:
            layer.self_attn.o_proj.weight[HELD_DIM, :] = 0.0
            layer.mlp.down_proj.weight[HELD_DIM, :] = 0.0
        model.lm_head.weight[:, HELD_DIM] = 0.0


def shift_tokens(model: Any, token_ids: Sequence[int], weight: float) -> None:
    """Set the LM-head weight with which `token_ids` read the held dimension."""
    import torch
    with torch.no_grad():
        model.lm_head.weight[list(token_ids), HELD_DIM] = weight


def _margins(model: Any, processor: Any, requests: Sequence[Any], options: Sequence[str]) -> np.ndarray:
    """log P(first option) / P(second) per request, on a fresh judge (no stale caches)."""
    probs = judge_on(model, processor).choice_probs(list(requests), list(options))
    return np.array([math.log(p[options[0]] / p[options[1]]) for p in probs])


def _slopes(model: Any, processor: Any, ids: Sequence[int], requests: Sequence[Any],
            options: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Margins at weight 0 and their change per unit weight (the logit moves linearly with it)."""
    shift_tokens(model, ids, 0.0)
    m0 = _margins(model, processor, requests, options)
    shift_tokens(model, ids, 1.0)
    slope = _margins(model, processor, requests, options) - m0
    if (slope <= 0).any():
        raise RuntimeError("the held dimension does not raise these tokens' logits on every prompt")
    return m0, slope


def set_decisions(model: Any, processor: Any, images: Sequence[Any], positive_rate: float) -> tuple[float, float]:
    """Weights that make every image eligible and about `positive_rate` of the detection checks
    on two images positive; returns (eligibility weight, Yes weight)."""
    from terravis import asking
    from terravis.taxonomy import TAXONOMY
    pack, tok = bench_pack(), processor.tokenizer
    hold_dimension(model)
    eligible_ids = option_token_ids(tok, ELIGIBILITY_OPTIONS[0])
    m0, slope = _slopes(model, processor, eligible_ids,
                        [asking.eligibility_request(pack, im, str(i)) for i, im in enumerate(images)],
                        ELIGIBILITY_OPTIONS)
    eligible_w = max(0.0, float(np.max((ELIGIBLE_MARGIN - m0) / slope)))
    shift_tokens(model, eligible_ids, eligible_w)
    yes_ids = option_token_ids(tok, "Yes")
    detection = [asking.detection_request(pack, im, str(i), v) for i, im in enumerate(images[:2]) for v in TAXONOMY]
    m0, slope = _slopes(model, processor, yes_ids, detection, pack.options.detection)
    yes_w = float(np.quantile(-m0 / slope, positive_rate))  # check i is positive once the weight passes -m0/slope
    shift_tokens(model, yes_ids, yes_w)
    return eligible_w, yes_w


def build_checkpoint(kind: str, images: Sequence[Any], positive_rate: float, device: str | None,
                     dtype: str) -> tuple[str, str]:
    """A vLLM-compatible Qwen3-VL folder ("tiny", or "random:<config>" of `bench.random_vlm`)
    with its decisions set in its weights; (folder, a line that says what it is)."""
    import torch

    from vlmjudge.testing import build_tiny_vlm
    folder = tempfile.mkdtemp(prefix="vlmjudge-bench-ckpt-")
    if kind == "tiny":
        build_tiny_vlm(folder + "/build", image_tokens="realistic", vllm=True)
        model, processor = load_model(folder + "/build", device, dtype)
        what = "tiny Qwen3-VL (vLLM head size) with realistic visual tokens"
    else:
        config = kind.removeprefix("random:")
        if config not in CONFIGS:
            raise ValueError(f"--model {kind!r}: random configurations are {', '.join(sorted(CONFIGS))}")
        processor = processor_with_realistic_tokens()
        model = build_random_qwen3vl(config, processor, device or "cpu", getattr(torch, dtype))
        what = f"random-weight Qwen3-VL {config} ({sum(p.numel() for p in model.parameters()) / 1e6:,.1f} M parameters)"
    eligible_w, yes_w = set_decisions(model, processor, images, positive_rate)
    model.save_pretrained(folder + "/model")
    processor.save_pretrained(folder + "/model")
    del model, processor
    free_memory()
    return folder + "/model", (f"{what}; weights set: eligibility {eligible_w:+.3f}, Yes {yes_w:+.3f} "
                               f"(all eligible, ~{positive_rate:.0%} positive checks)")
