"""A random tiny Qwen3-VL under grammar-constrained decoding gives schema-valid IUTs for 10 images."""
from __future__ import annotations

import pytest

pytest.importorskip("xgrammar")
pytest.importorskip("vlmjudge.backends.hf.judge")

from regen_helpers import reference_images

from regeneration.asking.iut import build_iuts, initial_prompts
from regeneration.schema import IUT
from vlmjudge.judge import load_judge

#: Short templates keep the prefill of a random model cheap; the schemas stay the real ones.
SHORT = {"system": "Describe.", "iut_caption": "Scene?", "iut_objects": "Objects (at most {max_objects})?",
         "iut_attributes": "{type} {name}: {fields}?", "iut_relations": "Relations of {names}?",
         "initial_prompt": "Prompt from {iut}"}


def test_constrained_iuts_are_schema_valid(tiny_vlm_path):
    path = tiny_vlm_path("qwen3_vl")
    judge = load_judge(path, backend="transformers", device="cpu", batch_size=10)
    refs = reference_images(10)
    results = build_iuts(judge, list(refs.values()), list(refs), pack=SHORT)
    assert len(results) == 10
    for r in results:
        assert r.valid, [f.to_json() for f in r.failures]
        assert not r.failures, [f.to_json() for f in r.failures]
        assert IUT.model_validate(r.iut.model_dump()) == r.iut
    prompts = initial_prompts(results[:2], judge, pack=SHORT)
    assert all(p.prompt for p in prompts)  # written by the judge, or the recorded template fallback
    assert all(p.source == "text_judge" or p.failures for p in prompts)
