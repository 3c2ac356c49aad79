"""Loading a Hugging Face vision-language model + processor, and what to record about it.

Split from the backend so the judge class holds only batching and decoding.
"""
from __future__ import annotations

import importlib.metadata
from typing import Any


def resolve_dtype(dtype: Any) -> Any:
    """"auto"/None -> "auto"; "bfloat16"/"bf16"/torch.bfloat16 -> torch dtype; else a clear error."""
    import torch
    if dtype is None or dtype == "auto":
        return "auto"
    if isinstance(dtype, torch.dtype):
        return dtype
    aliases = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}
    name = aliases.get(str(dtype), str(dtype)).removeprefix("torch.")
    value = getattr(torch, name, None)
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}; use e.g. 'bfloat16', 'float16', 'float32' or 'auto'")
    return value


def default_device() -> str:
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


def load_model_and_processor(model_id: str, *, revision: str | None, dtype: Any, device: str | None,
                             device_map: Any, trust_remote_code: bool, attn_implementation: str | None,
                             hf_cache_dir: str | None) -> tuple[Any, Any]:
    """`AutoModelForImageTextToText` + `AutoProcessor` from a Hub id (at `revision`) or a local dir."""
    from transformers import AutoModelForImageTextToText, AutoProcessor
    common: dict[str, Any] = {"revision": revision, "trust_remote_code": trust_remote_code}
    if hf_cache_dir is not None:
        common["cache_dir"] = str(hf_cache_dir)
    processor = AutoProcessor.from_pretrained(model_id, **common)
    check_processor(processor, model_id)
    kwargs: dict[str, Any] = {**common, "dtype": resolve_dtype(dtype)}
    if attn_implementation is not None:
        kwargs["attn_implementation"] = attn_implementation
    if device_map is not None:
        kwargs["device_map"] = device_map
    model = AutoModelForImageTextToText.from_pretrained(model_id, **kwargs)
    if device_map is None:
        model = model.to(device or default_device())
    return model.eval(), processor


def check_processor(processor: Any, model_id: str) -> None:
    """AutoProcessor silently falls back to a bare tokenizer for unknown processors: refuse that."""
    if not hasattr(processor, "image_processor") or not hasattr(processor, "tokenizer"):
        raise ValueError(f"{model_id!r} has no multimodal processor (AutoProcessor gave "
                         f"{type(processor).__name__}); a vision-language checkpoint is needed")


def resolved_commit(model_id: str, revision: str | None, hf_cache_dir: str | None) -> str | None:
    """The Hub snapshot commit a loaded checkpoint came from, read from the local Hub cache
    (None for a local folder). Called after loading, so the files are in the cache."""
    import os
    import re

    from huggingface_hub import try_to_load_from_cache
    if os.path.isdir(model_id):
        return None
    try:
        path = try_to_load_from_cache(model_id, "config.json", cache_dir=hf_cache_dir, revision=revision)
    except ValueError:  # not a Hub id
        return None
    found = re.search(r"[\\/]snapshots[\\/]([0-9a-f]{40})[\\/]", path) if isinstance(path, str) else None
    return found.group(1) if found else None


def library_versions() -> dict[str, str | None]:
    """Versions of the libraries that shape the answers (xgrammar None when absent)."""
    out: dict[str, str | None] = {}
    for dist in ("torch", "transformers", "xgrammar", "accelerate"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = None
    return out


def model_name(model: Any) -> str:
    """A readable id for a model object handed in already built."""
    name = getattr(model.config, "_name_or_path", "") or ""
    return name or type(model).__name__


def eos_token_ids(model: Any, tokenizer: Any) -> list[int]:
    """Every id that ends an answer: the generation config's EOS ids and the tokenizer's."""
    ids: list[int] = []
    for source in (getattr(model.generation_config, "eos_token_id", None), tokenizer.eos_token_id):
        if source is None:
            continue
        for i in (source if isinstance(source, (list, tuple)) else [source]):
            if int(i) not in ids:
                ids.append(int(i))
    if not ids:
        raise ValueError("the model has no EOS token id (generation_config or tokenizer)")
    return ids


def check_family(model: Any) -> Any:
    """The model's supported family (a `vlmjudge.backends.hf.families.Family`, None for the generic path,
    which warns), refusing known-wrong architectures, with the workarounds it needs applied."""
    from .families import family_of
    family = family_of(model.config)
    if getattr(model.config, "model_type", None) == "llama4":
        _add_image_outputs_field(model)
    return family


def _add_image_outputs_field(model: Any) -> None:
    """Llama 4 in transformers 5.24: `Llama4ForConditionalGeneration.forward` reads
    `outputs.image_outputs` from its text model's output, which has no such field, so every
    forward raises AttributeError. A forward hook on the text model sets the field (None: the
    judge never reads it); a module-level hook keeps the model picklable."""
    text_model = getattr(model, "language_model", None)
    if text_model is None or getattr(text_model, "_vlmjudge_image_outputs_hook", False):
        return
    text_model.register_forward_hook(_with_image_outputs, with_kwargs=True)
    text_model._vlmjudge_image_outputs_hook = True


def _with_image_outputs(module: Any, args: Any, kwargs: Any, output: Any) -> Any:
    if not isinstance(output, tuple) and not hasattr(output, "image_outputs"):
        output.image_outputs = None
    return output
