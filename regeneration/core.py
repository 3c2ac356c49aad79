"""The ImageRepainter loop: understand the reference, then T rounds of prompt variants, generation by
the model under test, selection, feedback and one-aspect revision, over many references at once.

The loop is what turns "can this model regenerate the reference?" into a score: it searches for
the prompt that best reproduces each reference, one aspect per round. Every stage runs over all
references in one batched call, and everything is saved in a `RunFolder` as it comes, so a
rerun skips saved prompts, images and scores.

docs/methods/regeneration.md describes the rounds, the selection presets, the prompt modes and the
run folder.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vlmjudge.generators import generator_name, load_generator
from vlmjudge.images import to_pil

from .asking import json_request, run_stage
from .baselines import direct_prompts, interrogator_prompts
from .config import LOOP_VERSION, LoopConfig
from .asking.iut import InitialPrompt, IUTResult, build_iuts, initial_prompts
from .asking.judging import MLLMScores, judge_pairs
from .pack import PromptPack, load_pack
from .parsing import ParseFailure
from .records import ItemResult
from .saved_runs import RunFolder, check_item_id
from .schema import Feedback, PromptList, prompt_list_schema
from .scoring import combined_score, final_pick, select
from .similarity import SimilarityScorer

log = logging.getLogger(__name__)

#: Settings a resumed run must share with the saved one (rounds may grow; final scoring may change).
_RESUME_KEYS = ("loop_version", "variants", "aspects", "weights", "prompt_mode", "interrogator", "json_reading",
                "seed", "max_objects", "pack", "generator")


def candidate_count(config: LoopConfig, references: int) -> int:
    """Candidate images a run over `references` makes in all (the unit of its progress callback)."""
    return references * config.effective_rounds * (1 if config.single_shot else config.variants)


class RegenerationLoop:
    """Runs ImageRepainter over references with a judge (MLLM), an optional text judge, the generator
    under test and the similarity encoders, saving everything in `run_dir`.

    Args:
        judge: the `vlmjudge` Judge (an MLLM) that describes each reference, writes and revises the
            prompts and rates the final regeneration.
        generator: the text-to-image model under test: a diffusers pipeline, a folder or Hub id
            of one, or a callable (`vlmjudge.generators.load_generator`).
        similarity: the CLIP and DINOv2 encoders that compare candidates with the reference.
        run_dir: the run folder: every stage is saved there, and a rerun resumes from it.
        text_judge: a separate text-only judge for writing and revising prompts; None: `judge`.
        config: how the run searches (`LoopConfig`); None: the defaults.
        pack: the prompt pack (`regeneration.load_pack`): None for the default, a shipped name,
            a JSON path or a dict.
        interrogator_clip: the CLIP encoder of the interrogator prompt mode; None: the similarity's.
    """

    def __init__(self, judge: Any, generator: Any, similarity: SimilarityScorer, run_dir: str, *,
                 text_judge: Any = None, config: LoopConfig | None = None,
                 pack: PromptPack | Mapping | str | None = None, interrogator_clip: Any = None) -> None:
        self.judge = judge
        self.text_judge = text_judge if text_judge is not None else judge
        self.generator = load_generator(generator)
        self.similarity = similarity
        self.config = config or LoopConfig()
        self.pack = load_pack(pack)
        for aspect in self.config.aspects:
            self.pack.aspect(aspect)
        if self.config.weight_map.get("clip", 0) > 0 and "clip" not in similarity.encoders:
            raise ValueError("a CLIP selection weight needs a CLIP encoder")
        if self.config.weight_map.get("dino", 0) > 0 and "dino" not in similarity.encoders:
            raise ValueError("a DINOv2 selection weight needs a DINOv2 encoder")
        if judge is None:
            raise ValueError("the loop needs a judge (an MLLM): it writes, varies and revises the prompts")
        self.interrogator_clip = interrogator_clip or similarity.encoders.get("clip")
        self.folder = RunFolder(run_dir)

    # -- settings ----------------------------------------------------------------------
    def _settings(self) -> dict[str, Any]:
        return {**self.config.to_json(), "loop_version": LOOP_VERSION,
                "pack": {"version": self.pack.version, "hash": self.pack.fingerprint()},
                "generator": generator_name(self.generator), "similarity": self.similarity.manifest(),
                "judge": _manifest(self.judge), "text_judge": _manifest(self.text_judge)}

    def _check_resume(self) -> None:
        path = self.folder.root / "config.json"
        saved, now = RunFolder.read_json(path), self._settings()
        if saved is not None:
            changed = [k for k in _RESUME_KEYS if saved.get(k) != now.get(k)]
            if changed:
                raise ValueError(f"{self.folder.root} was made with different settings ({', '.join(changed)}); "
                                 "use a new run folder or the same settings")
        RunFolder.write_json(path, now)

    # -- the run -----------------------------------------------------------------------
    def run(self, references: Mapping[str, Any] | Sequence[Any], *, shared_dir: str | None = None,
            user_prompts: Mapping[str, str] | None = None,
            on_image: Callable[[], None] | None = None) -> list[ItemResult]:
        """Regenerate every reference; returns one ItemResult per reference, in order.

        `shared_dir` holds the understanding (IUT, initial prompt) when several generators share it;
        `user_prompts` (item -> prompt) replaces understanding with the user's own initial prompts.
        `on_image` is called once per candidate image, made or found saved, and for each image a
        reference whose understanding failed will never get: `candidate_count` calls in all.
        """
        tick = on_image or (lambda: None)
        refs = _as_items(references)
        self._check_resume()
        for item, image in refs.items():
            path = self.folder.item(item) / "reference.png"
            if not path.is_file():
                RunFolder.save_image(path, image)
        self._store = RunFolder(shared_dir) if shared_dir else self.folder
        initial = self._understand(refs, self._store, user_prompts)
        alive = [i for i in refs if initial[i].prompt]
        rounds = self.config.effective_rounds
        for _ in range(candidate_count(self.config, len(refs) - len(alive))):
            tick()
        if self.config.prompt_mode == "direct" and rounds > 1 and alive:
            self._iuts(alive, refs, self._store)  # "Direct" changes only the initial prompt: feedback sees the IUT
        ref_features = self.similarity.embed([refs[i] for i in alive]) if alive else {}
        ref_index = {item: n for n, item in enumerate(alive)}
        for t in range(1, rounds + 1):
            self._prompts(t, alive, initial)
            self._generate(t, alive, tick)
            self._score(t, alive, refs, ref_features, ref_index)
            if t < rounds:
                self._feedback(t, alive, refs, initial)
        return self._finish(refs, alive)

    def _understand(self, refs: dict[str, Any], store: RunFolder,
                    user_prompts: Mapping[str, str] | None) -> dict[str, InitialPrompt]:
        mode = self.config.prompt_mode
        paths = {i: store.item(i) / f"initial_{mode}.json" for i in refs}
        initial = {i: InitialPrompt.from_json(RunFolder.read_json(p)) for i, p in paths.items() if p.is_file()}
        todo = [i for i in refs if i not in initial]
        if todo:
            images = [refs[i] for i in todo]
            if mode == "user":
                missing = [i for i in todo if not (user_prompts or {}).get(i)]
                if missing:
                    raise ValueError(f"prompt_mode 'user' needs a prompt for {missing}")
                fresh = [InitialPrompt(i, str(user_prompts[i]), "user") for i in todo]
            elif mode == "direct":
                fresh = direct_prompts(self.judge, images, todo, pack=self.pack, reading=self.config.json_reading)
            elif mode == "interrogator":
                if self.interrogator_clip is None:
                    raise ValueError("the interrogator baseline needs a CLIP encoder")
                fresh = interrogator_prompts(self.judge, self.interrogator_clip, images, todo, pack=self.pack,
                                             reading=self.config.json_reading)
            else:
                fresh = initial_prompts(self._iuts(todo, refs, store), self.text_judge, pack=self.pack,
                                        reading=self.config.json_reading)
            for p in fresh:
                RunFolder.write_json(paths[p.item], p.to_json())
                self.folder.log("initial", item=p.item, prompt=p.prompt, source=p.source,
                                failures=[f.to_json() for f in p.failures])
                initial[p.item] = p
        return initial

    def _iuts(self, todo: list[str], refs: dict[str, Any], store: RunFolder) -> list[IUTResult]:
        saved = {i: IUTResult.from_json(d) for i in todo
                 if (d := RunFolder.read_json(store.item(i) / "iut.json")) is not None}
        missing = [i for i in todo if i not in saved]
        if missing:
            for r in build_iuts(self.judge, [refs[i] for i in missing], missing, pack=self.pack,
                                max_objects=self.config.max_objects, reading=self.config.json_reading):
                RunFolder.write_json(store.item(r.item) / "iut.json", r.to_json())
                store.log("iut", item=r.item, valid=r.valid, failures=len(r.failures))
                saved[r.item] = r
        return [saved[i] for i in todo]

    def _iut_text(self, item: str) -> str:
        data = RunFolder.read_json(self._store.item(item) / "iut.json")
        if data and data.get("iut"):
            return IUTResult.from_json(data).iut.to_text()
        return "(not available)"

    def _prompts(self, t: int, alive: list[str], initial: dict[str, InitialPrompt]) -> None:
        n, aspect = self.config.variants, self.config.aspect(t)
        todo = [i for i in alive if not (self.folder.round_dir(i, t) / "prompts.json").is_file()]
        if not todo:
            return
        if self.config.single_shot:  # the baseline's prompt as written: one image, no rewording
            for i in todo:
                RunFolder.write_json(self.folder.round_dir(i, t) / "prompts.json",
                                     {"round": t, "aspect": aspect, "base": initial[i].prompt,
                                      "prompts": [initial[i].prompt], "seeds": [self.config.seed_for(t, 0)],
                                      "source": "as_written", "failures": []})
                self.folder.log("prompts", item=i, round=t, aspect=aspect, prompts=[initial[i].prompt],
                                source="as_written")
            return
        bases, asks = {}, []
        words = self.pack.limits["max_words"]
        for i in todo:
            if t == 1:
                bases[i] = initial[i].prompt
                text = self.pack.render("variants", prompt=bases[i], n=n, aspect=self.pack.aspect(aspect),
                                        max_words=words)
                stage = "variants"
            else:
                prev = RunFolder.read_json(self.folder.round_dir(i, t - 1) / "scores.json")
                bases[i] = prev["candidates"][prev["best"]]["prompt"]
                fb = RunFolder.read_json(self.folder.round_dir(i, t - 1) / "feedback.json") or {}
                text = self.pack.render("revision", prompt=bases[i], feedback=fb.get("text") or "(no feedback)",
                                        iut=self._iut_text(i), aspect=self.pack.aspect(aspect), n=n, max_words=words)
                stage = "revision"
            asks.append(json_request(stage=stage, item=i, round=t, text=text, system=self.pack.system,
                                     schema=prompt_list_schema(n)))
        for i, got in zip(todo, run_stage(self.text_judge, asks, PromptList, reading=self.config.json_reading)):
            failures: list[dict] = []
            if isinstance(got, ParseFailure):
                prompts, source = [bases[i]] * n, "repeat_base"
                failures.append(got.to_json())
            else:
                prompts, source = [p.strip() for p in got.prompts][:n], "judge"
                if len(prompts) < n:
                    failures.append(ParseFailure(asks[0].meta["stage"], f"{len(prompts)} prompts for {n}",
                                                 got.model_dump_json()).to_json())
                    prompts += [bases[i]] * (n - len(prompts))
            seeds = [self.config.seed_for(t, k) for k in range(n)]
            RunFolder.write_json(self.folder.round_dir(i, t) / "prompts.json",
                                 {"round": t, "aspect": aspect, "base": bases[i], "prompts": prompts, "seeds": seeds,
                                  "source": source, "failures": failures})
            self.folder.log("prompts", item=i, round=t, aspect=aspect, prompts=prompts, source=source)

    def _generate(self, t: int, alive: list[str], tick: Callable[[], None]) -> None:
        """Make round t's missing candidates in generator batches; `tick` once per candidate."""
        jobs = []
        for i in alive:
            spec = RunFolder.read_json(self.folder.round_dir(i, t) / "prompts.json")
            for k, (prompt, seed) in enumerate(zip(spec["prompts"], spec["seeds"])):
                if self.folder.candidate(i, t, k).is_file():
                    tick()
                else:
                    jobs.append((i, k, prompt, seed))
        size = self.config.generator_batch
        for start in range(0, len(jobs), size):
            chunk = jobs[start:start + size]
            images = self.generator([j[2] for j in chunk], [j[3] for j in chunk])
            for (i, k, prompt, seed), image in zip(chunk, images):
                path = self.folder.candidate(i, t, k)
                RunFolder.save_image(path, image)
                self.folder.log("image", item=i, round=t, index=k, prompt=prompt, seed=seed,
                                image=str(path.relative_to(self.folder.root)))
                tick()

    def _score(self, t: int, alive: list[str], refs: dict[str, Any], ref_features: dict[str, Any],
               ref_index: dict[str, int]) -> None:
        import torch

        todo = [i for i in alive if not (self.folder.round_dir(i, t) / "scores.json").is_file()]
        if not todo:
            return
        specs = {i: RunFolder.read_json(self.folder.round_dir(i, t) / "prompts.json") for i in todo}
        pairs = [(i, k) for i in todo for k in range(len(specs[i]["prompts"]))]
        images = [RunFolder.load_image(self.folder.candidate(i, t, k)) for i, k in pairs]
        gen_features = self.similarity.embed(images)
        rows = torch.tensor([ref_index[i] for i, _ in pairs])
        sims = self.similarity.compare({name: f[rows] for name, f in ref_features.items()}, gen_features)
        weights = self.config.weight_map
        mllm: list[MLLMScores | None] = [None] * len(pairs)
        if weights.get("mllm", 0) > 0:
            mllm = judge_pairs(self.judge, [refs[i] for i, _ in pairs], images, items=[i for i, _ in pairs],
                               indices=[k for _, k in pairs], round=t, pack=self.pack, perceptual=False,
                               reading=self.config.json_reading)
        for i in todo:
            cands = []
            for n_pair, (item, k) in enumerate(pairs):
                if item != i:
                    continue
                m = mllm[n_pair]
                cands.append({"index": k, "prompt": specs[i]["prompts"][k], "seed": specs[i]["seeds"][k],
                              "image": str(self.folder.candidate(i, t, k).relative_to(self.folder.root)),
                              "clip": sims[n_pair].get("clip"), "dino": sims[n_pair].get("dino"),
                              "mllm": None if m is None or m.content_norm is None else 100.0 * m.content_norm,
                              "mllm_failures": [] if m is None else [f.to_json() for f in m.failures]})
            best, combined = select(cands, weights)
            for c, value in zip(cands, combined):
                c["combined"] = value
                self.folder.log("candidate", item=i, round=t, index=c["index"], prompt=c["prompt"], seed=c["seed"],
                                image=c["image"], clip=c["clip"], dino=c["dino"], mllm=c["mllm"],
                                combined=value, selected=c["index"] == best)
            RunFolder.write_json(self.folder.round_dir(i, t) / "scores.json",
                                 {"round": t, "aspect": specs[i]["aspect"], "best": best, "candidates": cands})

    def _feedback(self, t: int, alive: list[str], refs: dict[str, Any], initial: dict[str, InitialPrompt]) -> None:
        todo = [i for i in alive if not (self.folder.round_dir(i, t) / "feedback.json").is_file()]
        if not todo:
            return
        aspect = self.config.aspect(t + 1)
        asks, bests = [], {}
        for i in todo:
            scores = RunFolder.read_json(self.folder.round_dir(i, t) / "scores.json")
            bests[i] = scores["candidates"][scores["best"]]
            image = RunFolder.load_image(self.folder.root / bests[i]["image"])
            asks.append(json_request(stage="feedback", item=i, round=t, images=[refs[i], image], system=self.pack.system,
                                     text=self.pack.render("feedback", prompt=bests[i]["prompt"], iut=self._iut_text(i),
                                                           aspect=self.pack.aspect(aspect)), schema=Feedback))
        for i, got in zip(todo, run_stage(self.judge, asks, Feedback, reading=self.config.json_reading)):
            if isinstance(got, ParseFailure):
                data = {"round": t, "aspect": aspect, "text": None, "failures": [got.to_json()]}
            else:
                diffs = "; ".join(d.strip() for d in got.differences if d.strip())
                text = f"Differences: {diffs}. Instruction: {got.instruction.strip()}" if diffs else got.instruction
                data = {"round": t, "aspect": aspect, "text": text, "differences": got.differences,
                        "instruction": got.instruction, "failures": []}
            RunFolder.write_json(self.folder.round_dir(i, t) / "feedback.json", data)
            self.folder.log("feedback", item=i, round=t, aspect=aspect, text=data["text"])

    def _finish(self, refs: dict[str, Any], alive: list[str]) -> list[ItemResult]:
        results: dict[str, ItemResult] = {}
        pending = []
        for i in refs:
            saved = RunFolder.read_json(self.folder.item(i) / "result.json")
            if saved is not None and saved.get("rounds") and len(saved["rounds"]) == self.config.effective_rounds:
                results[i] = ItemResult.from_json(saved)
            elif i not in alive:
                results[i] = ItemResult(i, "failed", None, parse_failures=self._failures(i),
                                        reason="no initial prompt (the understanding stage failed)")
            else:
                pending.append(i)
        chosen = {i: self._choose(i) for i in pending}
        judged: dict[str, MLLMScores] = {}
        if pending and self.config.final_mllm and self.judge is not None:
            images = [RunFolder.load_image(self.folder.root / chosen[i][1]["image"]) for i in pending]
            for i, m in zip(pending, judge_pairs(self.judge, [refs[i] for i in pending], images, items=pending,
                                                 round=self.config.effective_rounds + 1, pack=self.pack,
                                                 reading=self.config.json_reading)):
                judged[i] = m
        for i in pending:
            (t, best), progress = chosen[i], self._progress(i)
            m = judged.get(i)
            results[i] = ItemResult(i, "scored", combined_score(best["clip"], best["dino"]), prompt=best["prompt"],
                                    image=best["image"], round=t,
                                    index=best["index"], clip=best["clip"], dino=best["dino"],
                                    combined=best["combined"], mllm=m.to_json() if m else None, rounds=progress,
                                    parse_failures=self._failures(i) + (len(m.failures) if m else 0))
            RunFolder.write_json(self.folder.item(i) / "result.json", results[i].to_json())
            self.folder.log("result", item=i, **{k: v for k, v in results[i].to_json().items() if k != "id"})
        return [results[i] for i in refs]

    def _choose(self, item: str) -> tuple[int, dict[str, Any]]:
        winners = []
        for t in range(1, self.config.effective_rounds + 1):
            scores = RunFolder.read_json(self.folder.round_dir(item, t) / "scores.json")
            winners.append(scores["candidates"][scores["best"]])
        pick = final_pick(winners, self.config.final)
        return pick + 1, winners[pick]

    def _progress(self, item: str) -> list[dict[str, Any]]:
        out = []
        for t in range(1, self.config.effective_rounds + 1):
            scores = RunFolder.read_json(self.folder.round_dir(item, t) / "scores.json")
            best = scores["candidates"][scores["best"]]
            out.append({"round": t, "aspect": scores["aspect"], "index": best["index"], "clip": best["clip"],
                        "dino": best["dino"], "mllm": best["mllm"], "combined": best["combined"]})
        return out

    def _failures(self, item: str) -> int:
        """Parse failures recorded for an item in understanding, prompts, scoring and feedback."""
        count = 0
        folders = {self.folder.item(item), self._store.item(item)}
        for path in (p for base in folders if base.is_dir() for p in base.rglob("*.json")):
            if path.name == "result.json":
                continue
            data = RunFolder.read_json(path)
            count += len(data.get("failures", []) or []) if isinstance(data, dict) else 0
            if isinstance(data, dict) and path.name == "scores.json":
                count += sum(len(c.get("mllm_failures", [])) for c in data["candidates"])
        return count


def _manifest(judge: Any) -> Any:
    return judge.manifest() if hasattr(judge, "manifest") else None


def _as_items(references: Mapping[str, Any] | Sequence[Any]) -> dict[str, Any]:
    """References as {item id: RGB PIL}, ids checked as folder names."""
    pairs = references.items() if isinstance(references, Mapping) else ((f"{n:05d}", r) for n, r in
                                                                         enumerate(references))
    items = {}
    for n, (item, image) in enumerate(pairs):
        item = check_item_id(str(item))
        if item in items:
            raise ValueError(f"duplicate reference id {item!r}")
        items[item] = to_pil(image, index=n)
    if not items:
        raise ValueError("no reference images")
    return items
