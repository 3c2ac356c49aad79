"""The transformers backend on tiny random Qwen3-VL and LLaVA checkpoints, offline."""
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from typing import Literal

import pytest
import torch
from pydantic import BaseModel, Field

from vlmjudge import Constraint, Decoding, Request, load_judge

FAMILIES = ["qwen3_vl", "llava"]


def _requests(images, prefix="Answer:", **decoding):
    prompts = ["Is there a cat?", "Does the image show a red car on the street?", "Describe the image."]
    return [Request(images=[img], text=prompts[i % len(prompts)], prefix=prefix,
                    decoding=Decoding(**decoding)) for i, img in enumerate(images)]


# -- loading --------------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_loads_by_hub_id_and_revision_and_records_commit(hub, family, noise):
    cache, commits = hub
    repo, commit = commits[family]
    judge = load_judge(repo, revision="main", hf_cache_dir=str(cache), batch_size=2)
    manifest = judge.manifest()
    assert manifest["model"] == repo
    assert manifest["revision"] == commit and manifest["requested_revision"] == "main"
    assert manifest["dtype"] == "float32" and manifest["device"] == "cpu"
    assert manifest["libraries"]["transformers"] and manifest["libraries"]["xgrammar"]
    assert judge.identity()["checkpoint"] == f"hub:{commit}"  # cache keys follow the commit, not the name
    reqs = _requests(noise(3), max_new_tokens=4)
    probs = judge.choice_probs(reqs, ["Yes", "No"])
    assert all(set(p) == {"Yes", "No"} and math.isclose(sum(p.values()), 1.0, abs_tol=1e-6) for p in probs)
    answers = judge.generate(reqs)
    assert all(a.finish_reason in ("stop", "length") and 0 < a.num_tokens <= 4 for a in answers)


def test_unknown_revision_fails_offline(hub):
    cache, commits = hub
    repo, _ = commits["qwen3_vl"]
    with pytest.raises(OSError):
        load_judge(repo, revision="0" * 40, hf_cache_dir=str(cache))


def test_offline_subprocess_loads_by_plain_hub_id(hub, tmp_path):
    """A fresh process with HF_HUB_OFFLINE=1 and HF_HUB_CACHE set finds the model by id alone."""
    cache, commits = hub
    repo, commit = commits["qwen3_vl"]
    script = textwrap.dedent(f"""
        import json
        from vlmjudge import Request, load_judge
        judge = load_judge({repo!r})
        probs = judge.choice_probs([Request(text="Is it red?", prefix="Answer:")], ["Yes", "No"])
        print(json.dumps({{"revision": judge.manifest()["revision"], "probs": probs[0]}}))
    """)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "HF_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["revision"] == commit
    assert math.isclose(sum(result["probs"].values()), 1.0, abs_tol=1e-6)


def test_built_model_object_needs_processor(loaded):
    from vlmjudge.backends.hf.judge import TransformersJudge
    with pytest.raises(ValueError, match="processor"):
        TransformersJudge(loaded["qwen3_vl"].model)
    with pytest.raises(ValueError, match="multimodal processor"):
        TransformersJudge(loaded["qwen3_vl"].model, loaded["qwen3_vl"].tokenizer)


# -- batching -------------------------------------------------------------------------------
@pytest.mark.parametrize("family", FAMILIES)
def test_batched_equals_one_at_a_time(loaded, family, fresh, noise):
    reqs = _requests(noise(6), max_new_tokens=6)
    batched, single = fresh(loaded[family], batch_size=4), fresh(loaded[family], batch_size=1)
    p_batch = batched.choice_probs(reqs, ["Yes", "No"])
    assert batched.stats.forward_batches == 2  # ceil(6 / 4)
    p_single = single.choice_probs(reqs, ["Yes", "No"])
    assert single.stats.forward_batches == 6
    for a, b in zip(p_batch, p_single):
        assert abs(a["Yes"] - b["Yes"]) < 1e-5
    g_batch, g_single = batched.generate(reqs), single.generate(reqs)
    assert batched.stats.forward_batches == 4 and single.stats.forward_batches == 12
    assert [a.text for a in g_batch] == [a.text for a in g_single]
    assert [a.finish_reason for a in g_batch] == [a.finish_reason for a in g_single]
    # two calls on 6 images: the vision cache (Qwen-VL grids, LLaVA rows) serves the second call
    assert batched.stats.images_encoded == 6
    assert batched.stats.generated_tokens == sum(a.num_tokens for a in g_batch)
    assert batched.stats.prefill_tokens == single.stats.prefill_tokens > 0  # padding is not counted


def test_batches_are_prepared_one_at_a_time_on_the_worker(loaded, fresh, noise):
    """The first batch is prepared on the prefetch worker too, ahead of the second: two
    preparations never compete for the cores while no forward runs, and answers are unchanged.
    The worker's torch ops run on one thread (it must not start OpenMP workers of its own), and
    the thread count is back as it was after each batch."""
    reqs = _requests(noise(5), max_new_tokens=4)
    judge = fresh(loaded["qwen3_vl"], batch_size=2)
    judge.prefetch = True
    spans = []
    prepare = judge._prepare

    def timed(processor, batch):
        start = time.perf_counter()
        threads = torch.get_num_threads()
        try:
            return prepare(processor, batch)
        finally:
            spans.append((threading.current_thread().name, [reqs.index(r) for r in batch], start,
                          time.perf_counter(), threads))

    judge._prepare = timed
    before = torch.get_num_threads()
    got = judge.choice_probs(reqs, ["Yes", "No"])
    assert len(spans) == 3 and sorted(r for _, rows, _, _, _ in spans for r in rows) == [0, 1, 2, 3, 4]
    assert all(name.startswith("vlmjudge-prefetch") for name, _, _, _, _ in spans)
    assert all(a[3] <= b[2] for a, b in zip(spans, spans[1:]))  # one after another, never side by side
    assert [threads for *_, threads in spans] == [1, 1, 1]
    assert torch.get_num_threads() == before
    assert judge._worker()._pool.submit(torch.get_num_threads).result() == before
    want = fresh(loaded["qwen3_vl"], batch_size=2)
    want.prefetch = False
    assert [p["Yes"] for p in got] == pytest.approx([p["Yes"] for p in want.choice_probs(reqs, ["Yes", "No"])],
                                                    abs=1e-6)


def test_prefetch_defaults_to_on_only_where_a_core_is_free_for_it(loaded, monkeypatch):
    """`prefetch=None` (the default) prepares ahead on a CPU only where this process has more
    cores than torch's threads: where torch's threads take them all, the worker would take turns
    with them. An explicit choice is kept either way."""
    from vlmjudge.backends.hf import batching
    from vlmjudge.backends.hf.judge import TransformersJudge
    base = loaded["qwen3_vl"]
    threads = torch.get_num_threads()
    monkeypatch.setattr(batching.os, "sched_getaffinity", lambda pid: set(range(threads)), raising=False)
    assert batching.prefetch_pays(base.model) is False
    assert TransformersJudge(base.model, base.processor).prefetch is False
    assert TransformersJudge(base.model, base.processor, prefetch=True).prefetch is True
    monkeypatch.setattr(batching.os, "sched_getaffinity", lambda pid: set(range(threads + 1)), raising=False)
    assert batching.prefetch_pays(base.model) is True
    assert TransformersJudge(base.model, base.processor).prefetch is True
    assert TransformersJudge(base.model, base.processor, prefetch=False).prefetch is False


def test_the_worker_keeps_torchs_threads_beside_an_accelerator(loaded):
    """`one_thread=False` (a model on an accelerator): the worker prepares with torch's thread
    count, not one."""
    from vlmjudge.backends.hf.batching import Prefetcher
    seen = []
    batch = ["a request"]
    for one_thread in (False, True):
        worker = Prefetcher(lambda processor, b: seen.append(torch.get_num_threads()), loaded["qwen3_vl"].processor,
                            one_thread=one_thread)
        worker.submit(batch)
        worker.take(batch)
    assert seen == [torch.get_num_threads(), 1]


def test_prefix_ends_the_prompt_and_is_not_returned(loaded):
    judge = loaded["qwen3_vl"]
    req = Request(text="Is it red?", prefix="Answer:", decoding=Decoding(max_new_tokens=3))
    assert judge.prompt_text(req).endswith("<|im_start|>assistant\nAnswer:")
    answer = judge.generate([req])[0]
    assert not answer.text.startswith("Answer:")


def test_option_token_follows_the_prompt(loaded):
    """After "Answer:" an option is the token of " Yes"; after a newline, of "Yes"."""
    judge, tok = loaded["qwen3_vl"], loaded["qwen3_vl"].tokenizer
    spaced = judge.option_ids("<|im_start|>assistant\nAnswer:", ["Yes", "No"])
    bare = judge.option_ids("<|im_start|>assistant\n", ["Yes", "No"])
    assert spaced == [tok.encode(" Yes")[0], tok.encode(" No")[0]]
    assert bare == [tok.encode("Yes")[0], tok.encode("No")[0]]
    assert spaced != bare


def test_an_option_that_begins_another_is_refused(loaded, noise):
    """"Yes" is the first token of "Yes!": a model writing "Yes!" would count for both."""
    judge = loaded["qwen3_vl"]
    with pytest.raises(ValueError, match="begins another"):
        judge.choice_probs(_requests(noise(1)), ["Yes", "Yes!"])


# -- decoding -------------------------------------------------------------------------------
def test_budget_gives_length_and_stop_string_gives_stop(loaded, noise):
    judge = loaded["qwen3_vl"]
    long = judge.generate(_requests(noise(3), max_new_tokens=24))
    assert all(a.finish_reason == "length" and a.num_tokens == 24 for a in long)
    # a stop string taken from the greedy text ends it there, excluded from the text
    stops = [a.text[len(a.text) // 2:len(a.text) // 2 + 2] for a in long]
    reqs = [Request(images=r.images, text=r.text, prefix=r.prefix,
                    decoding=Decoding(max_new_tokens=24, stop=(s,))) for r, s in zip(_requests(noise(3)), stops)]
    cut = judge.generate(reqs)
    for full, short, s in zip(long, cut, stops):
        assert short.finish_reason == "stop"
        assert short.text == full.text[:full.text.index(s)]
        assert short.num_tokens < 24


def test_seeded_sampling_is_reproducible_across_batches(loaded, fresh, noise):
    judge = fresh(loaded["qwen3_vl"], batch_size=4)
    imgs = noise(4)
    reqs = [Request(images=[im], text="Describe the image.", decoding=Decoding(max_new_tokens=10, temperature=1.0,
                                                                               top_p=0.9, seed=s))
            for s, im in enumerate(imgs)]
    together = [a.text for a in judge.generate(reqs)]
    alone = [judge.generate([r])[0].text for r in reversed(reqs)][::-1]
    assert together == alone
    reseeded = [Request(images=r.images, text=r.text, decoding=Decoding(max_new_tokens=10, temperature=1.0,
                                                                         top_p=0.9, seed=100 + i))
                for i, r in enumerate(reqs)]
    assert [a.text for a in judge.generate(reseeded)] != together


class Verdict(BaseModel):
    answer: Literal["yes", "no"]
    score: int = Field(ge=0, le=10)
    rationale: str = Field(max_length=24)
    tags: list[str]


def test_json_schema_constraint_50_of_50_parse_strictly(loaded, fresh, noise):
    judge = fresh(loaded["qwen3_vl"], batch_size=25)
    constraint = Constraint.json_schema(Verdict)
    # tags get the default bounds (1000 chars, 64 items): too long for this budget, so bound them
    from vlmjudge.grammar import bounded_schema
    constraint = Constraint.json_schema(bounded_schema(Verdict.model_json_schema(), max_string=8, max_items=2))
    imgs = noise(50, sizes=((32, 32),))
    reqs = [Request(images=[im], text="Judge the image as JSON.", constraint=constraint,
                    decoding=Decoding(max_new_tokens=120, temperature=1.0, seed=i)) for i, im in enumerate(imgs)]
    answers = judge.generate(reqs)
    assert judge.stats.forward_batches == 2
    assert [a.finish_reason for a in answers] == ["stop"] * 50
    parsed = [Verdict.model_validate_json(a.text, strict=True) for a in answers]
    assert len({a.text for a in answers}) >= 45  # sampled with different seeds: they differ
    assert {p.answer for p in parsed} == {"yes", "no"}


def test_json_budget_below_the_shortest_document_is_refused_and_ebnf_reports_length(loaded):
    judge = loaded["qwen3_vl"]
    req = Request(text="JSON please", constraint=Constraint.json_schema(Verdict),
                  decoding=Decoding(max_new_tokens=5))
    with pytest.raises(ValueError, match="shorter than the shortest document"):
        judge.generate([req])
    ebnf = Request(text="words please", constraint=Constraint.ebnf('root ::= [a-z]{20}'),
                   decoding=Decoding(max_new_tokens=5))
    answer = judge.generate([ebnf])[0]
    assert answer.finish_reason == "length" and answer.num_tokens == 5


EBNF = 'root ::= ("Yes" | "No") ", score " [0-9] ", because " [a-z ]{1,12} "."'
EBNF_RE = re.compile(r"(Yes|No), score [0-9], because [a-z ]{1,12}\.")


def test_ebnf_constraint_50_of_50_match(loaded, fresh, noise):
    judge = fresh(loaded["llava"], batch_size=25)
    reqs = [Request(images=[im], text="Answer with a reason.", constraint=Constraint.ebnf(EBNF),
                    decoding=Decoding(max_new_tokens=40, temperature=1.0, seed=i))
            for i, im in enumerate(noise(50, sizes=((32, 32),), seed=1))]
    answers = judge.generate(reqs)
    assert [a.finish_reason for a in answers] == ["stop"] * 50
    assert all(EBNF_RE.fullmatch(a.text) for a in answers), [a.text for a in answers if not EBNF_RE.fullmatch(a.text)]
    assert len({a.text for a in answers}) >= 45


@pytest.mark.parametrize("family", FAMILIES)
def test_first_options_greedy_equals_choice_probs_argmax(loaded, fresh, noise, family):
    judge = fresh(loaded[family], batch_size=25)
    constraint = Constraint.ebnf('root ::= (" Yes" | " No") "."', first_options=["Yes", "No"])
    imgs = noise(50, sizes=((32, 32), (48, 32)), seed=2)
    base = _requests(imgs, prefix="Answer:")
    probs = judge.choice_probs(base, ["Yes", "No"])
    constrained = [Request(images=r.images, text=r.text, prefix="Answer:", constraint=constraint,
                           decoding=Decoding(max_new_tokens=4)) for r in base]
    answers = judge.generate(constrained)
    picked = [a.text.strip().rstrip(".") for a in answers]
    assert picked == [max(p, key=p.get) for p in probs]
    assert 10 <= picked.count("Yes") <= 40  # both answers occur: the comparison is not trivial
    assert all(a.finish_reason == "stop" for a in answers)


def test_first_options_must_be_allowed_by_the_grammar(loaded):
    judge = loaded["qwen3_vl"]
    bad = Constraint.ebnf('root ::= "Yes" "."', first_options=["Yes", "No"])  # no leading space
    with pytest.raises(ValueError, match="forbids first-option"):
        judge.generate([Request(text="Is it red?", prefix="Answer:", constraint=bad)])


def test_bad_grammar_is_a_clear_error(loaded):
    with pytest.raises(ValueError, match="cannot compile"):
        loaded["qwen3_vl"].generate([Request(text="x", constraint=Constraint.ebnf("root ::= (unclosed"))])


# -- out of memory --------------------------------------------------------------------------
@pytest.mark.parametrize("error", [torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB"),
                                   RuntimeError("CUDA error: out of memory")])
@pytest.mark.parametrize("op", ["choice_probs", "generate"])
def test_out_of_memory_halves_the_batch_and_loses_nothing(loaded, fresh, noise, monkeypatch, error, op):
    judge = fresh(loaded["qwen3_vl"], batch_size=8)
    reqs = _requests(noise(8), max_new_tokens=3)
    expected = (fresh(loaded["qwen3_vl"], batch_size=8).choice_probs(reqs, ["Yes", "No"]) if op == "choice_probs"
                else [a.text for a in fresh(loaded["qwen3_vl"], batch_size=8).generate(reqs)])
    real, seen = judge._forward_batch, []

    def flaky(kind, batch, options):
        seen.append([reqs.index(r) for r in batch])
        if len(seen) == 1:
            raise error
        return real(kind, batch, options)

    monkeypatch.setattr(judge, "_forward_batch", flaky)
    got = judge.choice_probs(reqs, ["Yes", "No"]) if op == "choice_probs" else [a.text for a in judge.generate(reqs)]
    if op == "choice_probs":
        assert all(abs(a["Yes"] - b["Yes"]) < 1e-5 for a, b in zip(got, expected))
    else:
        assert got == expected
    assert seen == [list(range(8)), [0, 1, 2, 3], [4, 5, 6, 7]]
    assert sorted(i for batch in seen[1:] for i in batch) == list(range(8))  # each exactly once
    assert judge.stats.forward_batches == 2 and judge.stats.model_calls == 8
    assert judge._max_rows == 4  # later chunks start at the size that fitted


def test_other_errors_are_not_swallowed(loaded, fresh, noise, monkeypatch):
    judge = fresh(loaded["qwen3_vl"])

    def broken(kind, batch, options):
        raise RuntimeError("shape mismatch")

    monkeypatch.setattr(judge, "_forward_batch", broken)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        judge.choice_probs(_requests(noise(2)), ["Yes", "No"])


def test_lone_request_out_of_memory_is_an_error_result(loaded, fresh, noise, monkeypatch):
    judge = fresh(loaded["qwen3_vl"], batch_size=2)

    def oom(kind, batch, options):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(judge, "_forward_batch", oom)
    answers = judge.generate(_requests(noise(2)))
    assert [a.finish_reason for a in answers] == ["error", "error"]
    assert judge.choice_probs(_requests(noise(2)), ["Yes", "No"]) == [{}, {}]


def test_dtype_and_device_map_from_a_local_folder(hub, noise):
    """bfloat16 weights take bfloat16 pixels; a local folder has no Hub commit."""
    cache, commits = hub
    repo, commit = commits["llava"]
    folder = os.path.join(cache, "models--org--tiny-llava", "snapshots", commit)
    judge = load_judge(folder, dtype="bfloat16", device_map="cpu", batch_size=2)
    assert judge.manifest()["dtype"] == "bfloat16" and judge.manifest()["revision"] is None
    probs = judge.choice_probs(_requests(noise(3)), ["Yes", "No"])
    assert all(math.isclose(sum(p.values()), 1.0, abs_tol=1e-5) for p in probs)
    assert judge.generate(_requests(noise(1), max_new_tokens=3))[0].num_tokens == 3
    with pytest.raises(ValueError, match="unknown dtype"):
        load_judge(folder, dtype="float13")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_batched_equals_single(hub, noise):
    from vlmjudge.backends.hf.judge import TransformersJudge
    cache, commits = hub
    repo, commit = commits["qwen3_vl"]
    batched = TransformersJudge(repo, revision=commit, hf_cache_dir=str(cache), device="cuda", batch_size=4)
    single = TransformersJudge(batched.model, batched.processor, batch_size=1)
    reqs = _requests(noise(6), max_new_tokens=6)
    assert batched.manifest()["device"].startswith("cuda")
    for a, b in zip(batched.choice_probs(reqs, ["Yes", "No"]), single.choice_probs(reqs, ["Yes", "No"])):
        assert abs(a["Yes"] - b["Yes"]) < 1e-4
    assert [a.text for a in batched.generate(reqs)] == [a.text for a in single.generate(reqs)]
