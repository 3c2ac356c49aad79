"""Each method's records are the same whichever backend judges: TerraVis, VIEScore2 and FAGER run
on the transformers backend, on the vllm backend and on the openai backend against the session's
`vlmjudge serve` server, over the same tiny checkpoint (fp32) and images."""
import pytest
from fager.core import Fager
from fager.schema import QAItem, QASet
from nested_close import assert_nested_close
from terravis import TerraVis, load_pack
from viescore2 import VIEScore2

TOL = 1e-4
#: Short templates and bounded strings keep a random model's generations short (as tests/terravis).
TERRAVIS_PACK = {"system": "Judge the image.", "eligibility": "Is it a real scene?", "detection": "Answer Yes or No.",
                 "severity": "{type_name}: {aspect}, {evidence}. Major or Minor?",
                 "limits": {"reason": 6, "aspect": 4, "evidence": 8},
                 "max_new_tokens": {"reason": 16, "evidence": 40}}
PROMPTS = ["a red apple on a table", "a blue car in the rain"]


#: The backends compared with transformers, by fixture name.
BACKENDS = ["vllm_judge", "server_judge"]


@pytest.fixture(params=BACKENDS)
def judge(request):
    """The vllm judge, then the openai judge on the server (one engine start each per session)."""
    return request.getfixturevalue(request.param)


def both(judge, hf_judge, run):
    """`run(judge)` on the backend under test and on transformers: (its records, transformers')."""
    return run(judge), run(hf_judge)


def test_terravis_records_agree(judge, hf_judge, images):
    def run(judge):
        tv = TerraVis(judge, pack=load_pack(TERRAVIS_PACK), eligibility_reasons="all", severity_reasons=True)
        return [r.to_json() for r in tv.score(images[:2])]
    ours, ref = both(judge, hf_judge, run)
    assert_nested_close(ours, ref, TOL)
    assert any(r["score"] is not None for r in ref)


def test_viescore2_records_agree(judge, hf_judge, images):
    def run(judge):
        return [r.to_json() for r in VIEScore2(judge, "pq_sc+split", 8).score(images[:2], PROMPTS)]
    ours, ref = both(judge, hf_judge, run)
    assert_nested_close(ours, ref, TOL)
    assert all(r["status"] == "scored" for r in ref), ref


def qa_set(index: str, prompt: str) -> QASet:
    items = [QAItem(question=q, level=level, category="existence", importance="high", source_fact=f"fact {q}")
             for q, level in (("Is the object there?", "level_1"), ("Is its colour right?", "level_1"),
                              ("Is it where the prompt says?", "level_2"), ("Is the scene plausible?", "level_3"))]
    return QASet(prompt=prompt, index=index, items=items)


def test_fager_verdicts_agree(judge, hf_judge, images):
    sets = [qa_set(str(i), p) for i, p in enumerate(PROMPTS)]

    def run(judge):
        verdicts = Fager(judge).score(images[2:4], PROMPTS, qa_sets=sets, ids=["0", "1"])
        return [v.model_dump(mode="json", exclude={"provenance"}) for v in verdicts]
    ours, ref = both(judge, hf_judge, run)
    assert_nested_close(ours, ref, TOL)
    assert all(v["score"] is not None for v in ref)
