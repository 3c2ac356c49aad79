"""The family table: unknown architectures warn, known-wrong ones are refused, Llama 4's
upstream bug is worked around, and docs/judges.md / `vlmjudge info` say what is supported."""
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

from vlmjudge.backends.hf.judge import TransformersJudge
from vlmjudge.backends.hf.families import FAMILIES, UnsupportedArchitecture, family_of, markdown_table
from vlmjudge.testing.tiny_families import FAMILIES as BUILT

JUDGES_PAGE = Path(__file__).resolve().parents[3] / "docs" / "judges.md"


def test_every_built_family_is_in_the_table_and_back():
    assert set(BUILT) == set(FAMILIES)


def test_the_judges_page_table_is_the_family_table():
    text = JUDGES_PAGE.read_text(encoding="utf-8")
    assert "## Supported families" in text and markdown_table() in text


def test_unknown_architecture_loads_generically_with_a_warning():
    with pytest.warns(UserWarning, match="generic path"):
        assert family_of(SimpleNamespace(model_type="brand_new_vlm")) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert family_of(SimpleNamespace(model_type="gemma3")).name == "Gemma 3"


def test_known_wrong_architecture_is_refused(checkpoint):
    with pytest.raises(UnsupportedArchitecture, match="not supported"):
        family_of(SimpleNamespace(model_type="mllama"))
    judge = TransformersJudge(checkpoint("llava"), batch_size=2)
    judge.model.config.model_type = "mllama"  # the same check runs on every load
    try:
        with pytest.raises(ValueError, match="not supported"):
            TransformersJudge(judge.model, judge.processor)
    finally:
        judge.model.config.model_type = "llava"


def test_llama4_forward_works_only_with_the_workaround(checkpoint):
    """transformers 5.24's Llama 4 forward reads a missing `image_outputs`; the backend's hook
    adds it (if upstream fixes the bug, the bare model passes and the hook is a no-op)."""
    import torch
    from transformers import AutoModelForImageTextToText
    bare = AutoModelForImageTextToText.from_pretrained(checkpoint("llama4"))
    ids = torch.tensor([[1, 2, 3]])
    try:
        bare(input_ids=ids)
        upstream_fixed = True
    except AttributeError as exc:
        assert "image_outputs" in str(exc)
        upstream_fixed = False
    judge = TransformersJudge(bare, _processor(checkpoint("llama4")))
    assert judge.model(input_ids=ids).logits.shape[1] == 3
    assert upstream_fixed or judge.family.model_type == "llama4"


def _processor(path):
    from transformers import AutoProcessor
    return AutoProcessor.from_pretrained(path)


def test_info_lists_the_families():
    from vlmjudge.cli.info import collect_info
    assert collect_info()["families"] == {t: f.name for t, f in FAMILIES.items()}
