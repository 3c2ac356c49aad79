"""On a tiny random Qwen3-VL, the staged workflow equals the reference path: greedy full
constrained generation of every answer, one image at a time, first token restricted to the
option words.

The tiny model is built with a bias towards "Yes", so that with the short test pack its
18 detection answers are a mix of Yes and No (seeded, so always the same mix). A second
pack lists "Yes" as the N/A eligibility option (option words are arbitrary single tokens to
the workflow), which sends every image down the N/A path.
"""
import numpy as np
import pytest
from PIL import Image

pytest.importorskip("xgrammar")
pytest.importorskip("vlmjudge.backends.hf.judge")

from terravis import TerraVis, load_pack, reference_records  # noqa: E402
from terravis.core import make_items  # noqa: E402
from vlmjudge.judge import load_judge  # noqa: E402
from vlmjudge.testing.tiny_vlm import build_tiny_vlm  # noqa: E402

# Short templates and bounded strings keep a random model's generations cheap.
SHORT = {"system": "Judge the image.", "eligibility": "Is it a real scene?", "detection": "Answer Yes or No.",
         "severity": "{type_name}: {aspect}, {evidence}. Major or Minor?",
         "limits": {"reason": 6, "aspect": 4, "evidence": 8}, "max_new_tokens": {"reason": 16, "evidence": 40}}
N_IMAGES = {"mixed": 1, "not_applicable": 2}  # the mixed run generates a lot: one image is enough
PACKS = {"mixed": SHORT, "not_applicable": {**SHORT, "options": {"eligibility": ["No", "Yes"]}}}


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    path = build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "qwen3vl", family="qwen3_vl", yes_bias=7.75)
    return load_judge(path, backend="transformers", device="cpu", batch_size=18)


@pytest.fixture(scope="module")
def images():
    # Seeded noise: PIL's effect_noise draws from C rand(), whose state earlier tests change.
    noise = np.random.default_rng(7).integers(0, 256, (40, 48, 3), dtype=np.uint8)
    return [Image.fromarray(noise), Image.new("RGB", (64, 48), (200, 30, 30))]


@pytest.fixture(scope="module")
def references(judge, images):
    """The reference records of each pack (computed once; they do not depend on the mode)."""
    cache = {}

    def get(name, tv):
        if name not in cache:
            cache[name] = reference_records(judge, make_items(images[:N_IMAGES[name]]), tv.pack, tv.config)
        return cache[name]
    return get


@pytest.mark.parametrize("decision", ["choice", "generate"])
@pytest.mark.parametrize("name", list(PACKS))
def test_workflow_equals_reference_path(judge, images, references, name, decision):
    tv = TerraVis(judge, pack=load_pack(PACKS[name]), decision=decision, eligibility_reasons="all",
                  severity_reasons=True)
    result = tv.run(images[:N_IMAGES[name]])
    reference = references(name, tv)
    assert [r.to_json(probs=False) for r in result.records] == [r.to_json(probs=False) for r in reference]

    records = result.records
    if name == "mixed":
        (record,) = records
        found = record.detected_types()
        assert 0 < len(found) < 18, f"the tiny model's answers were not mixed: {found}"
        assert all(c.severity in ("major", "minor") and c.severity_reason is not None
                   for c in record.checks if c.detected)
        assert any(c.evidence_parse_ok for c in record.checks), "no evidence JSON was read"
        assert result.counts["evidence"] == result.counts["severity"] == len(found)
        if decision == "choice":
            assert all((c.prob > 0.5) == c.detected for c in record.checks)
    else:
        assert all(r.status == "not_applicable" and r.eligibility_reason is not None for r in records)
        assert result.counts == {"eligibility": 2, "eligibility_reason": 2}
