"""The FAGER pipeline: build QA sets once per prompt, then score many images against them.

    fager = Fager(judge, text_judge=None, store="qa_store/")
    qa_sets = fager.build_qa(prompts, references="refs/")     # stored, reused on the next call
    verdicts = fager.score(images, prompts)                    # builds or reuses QA sets itself

Building runs each agent as one batched call over all prompts that are not in the store
yet: proposal -> extraction (per reference image) -> verification -> QA generation.
Scoring puts the questions of all images in one ordered list (image by image, so
requests on one image are adjacent and share a prefix) and hands them to the judge in
chunks of `chunk_size`: level 1 first, then levels 2-3 only for images whose level-1
score passes the gate, then feedback only where the decision needs it (a regeneration
constraint for regenerate, an edit instruction for edit; nothing for keep).
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlmjudge.images import digests_held, to_pil
from vlmjudge.requests import Answer, Request

from .asking import FagerAgents, feedback_text
from .pack import PromptPack
from .parsing import AnswerParseError, parse_answer
from .qa_store import AgentModels, QARecord, QASetKey, QAStore
from .records import Verdict
from .references import as_provider, digest, load_references
from .schema import QAItem, QASet, QuestionAnswer, ReferenceExtraction
from .scoring import (
    DEFAULT_POLICY, SCORING_VERSION, GatingPolicy, mean_score, score_answers, should_regenerate,
)

DEFAULT_CHUNK = 512
#: What each verdict records about the judge that answered (from `judge.manifest()`).
PROVENANCE_KEYS = ("backend", "model", "revision", "dtype", "device", "vlmjudge")


class QABuildError(RuntimeError):
    """One or more QA sets could not be built (the errors name the prompts and stages)."""


@dataclass
class QABuild:
    """What building one prompt's QA set gave: the record, whether it was reused, what failed."""

    prompt: str
    index: str | None
    key: QASetKey
    record: QARecord | None = None
    reused: bool = False
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def qa(self) -> QASet | None:
        return self.record.qa if self.record is not None else None


class MemoryStore:
    """A QA store that lives only as long as the pipeline (the default when no folder is given)."""

    def __init__(self) -> None:
        self._records: dict[QASetKey, QARecord] = {}

    def __contains__(self, key: QASetKey) -> bool:
        return key in self._records

    def get(self, key: QASetKey) -> QARecord | None:
        return self._records.get(key)

    def put(self, record: QARecord) -> None:
        self._records[record.key] = record


def model_name(judge: Any) -> str:
    """How a judge is named in QA-store keys: backend, model id and revision."""
    identity = judge.identity() if hasattr(judge, "identity") else {}
    name = f"{identity.get('backend', type(judge).__name__)}:{identity.get('model') or 'unnamed'}"
    return f"{name}@{identity['revision']}" if identity.get("revision") else name


class Fager:
    """Factuality of images against verified, stored QA sets, with keep/edit/regenerate feedback.

    Args:
        judge: the `vlmjudge` Judge that answers the questions about each image (the evaluation
            agent), and reads reference images.
        text_judge: the judge of the text agents (fact proposal, verification, QA generation);
            None: `judge`.
        pack: the prompt pack (`fager.load_pack`): None for the default, a shipped name, a JSON
            path or a dict.
        store: where QA sets are kept and reused: a folder (`QAStore`), a store, or None (in
            memory, for this object's life).
        references: reference images per prompt, read while building the rubric: None, a folder,
            a mapping, a callable or a provider (`fager.references.as_provider`).
        policy: the keep / edit / regenerate thresholds (`fager.scoring.DEFAULT_POLICY`).
        max_references: reference images read per prompt at most (None: all).
        chunk_size: questions per judge call.
        feedback: ask for a regeneration constraint or an edit instruction where the decision
            needs one.

    Examples:
        A stored QA set and a replay judge keyed by (image id, question position): level 1 passes,
        the colour question fails, and the overall score, 2/3 x 100 over all answers, means edit:

        >>> from PIL import Image
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> from fager.schema import QAItem, QASet
        >>> qa = QASet(prompt="a red cup", index="cup", items=[QAItem(question=q, level=lv, category="existence",
        ...     importance="high", source_fact=q) for q, lv in [("Is there a cup?", "level_1"),
        ...     ("Is it on a table?", "level_1"), ("Is the cup red?", "level_2")]])
        >>> judge = ReplayJudge({("cup", i): f'{{"answer": "{a}", "rationale": "Seen."}}' for i, a in enumerate(
        ...     ["yes", "yes", "no"])}, key_fields=("item_id", "question_id"))
        >>> [verdict] = Fager(judge, feedback=False).score([Image.new("RGB", (64, 64))], ["a red cup"], [qa],
        ...                                                ids=["cup"])
        >>> scores = verdict.level_scores
        >>> scores.level_1, scores.level_2, round(verdict.score, 2), verdict.decision
        (100.0, 0.0, 66.67, 'edit')
    """

    def __init__(self, judge: Any, text_judge: Any = None, *, pack: PromptPack | Mapping | str | None = None,
                 store: QAStore | MemoryStore | str | os.PathLike | None = None, references: Any = None,
                 policy: GatingPolicy = DEFAULT_POLICY, max_references: int | None = 3,
                 chunk_size: int = DEFAULT_CHUNK, feedback: bool = True) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        if not isinstance(policy, GatingPolicy):
            raise TypeError(f"policy must be a GatingPolicy, got {type(policy).__name__}")
        self.agents = FagerAgents(judge, text_judge, pack)
        self.judge, self.text_judge, self.pack = judge, self.agents.text_judge, self.agents.pack
        self.store = store if isinstance(store, (QAStore, MemoryStore)) else \
            MemoryStore() if store is None else QAStore(store)
        self.references = as_provider(references)
        self.policy = policy
        self.max_references = max_references
        self.chunk_size = chunk_size
        self.feedback = feedback
        self.models = AgentModels(proposal=model_name(self.text_judge), extraction=model_name(judge),
                                  verification=model_name(self.text_judge), qa=model_name(self.text_judge))

    # ---- QA sets --------------------------------------------------------------------------
    def key_for(self, prompt: str, reference_images: Sequence[Any]) -> QASetKey:
        """The store key: the prompt, the agents' models, the pack and the reference images."""
        return QASetKey(prompt=prompt, models=self.models,
                        prompt_pack=f"{self.pack.key}+refs:{digest(reference_images)}")

    def build(self, prompts: Sequence[str], references: Any = None, ids: Sequence[Any] | None = None,
              rebuild: bool = False) -> list[QABuild]:
        """Build (or reuse from the store) one QA set per prompt; failures are reported per prompt.

        `ids` name the prompts for the reference provider and become the QA sets' index;
        without them a prompt is looked up by its position and the QA set has no index.
        """
        prompts = _strings(prompts, "prompts")
        given = _ids(ids, len(prompts))
        provider = self.references if references is None else as_provider(references)
        builds: list[QABuild] = []
        unique: dict[tuple[str | None, str], tuple[QABuild, list]] = {}
        for position, prompt in enumerate(prompts):
            index = given[position] if given is not None else None
            if (index, prompt) not in unique:
                lookup = index if index is not None else str(position)
                images = load_references(provider, [lookup], [prompt], self.max_references)[0]
                build = QABuild(prompt=prompt, index=index, key=self.key_for(prompt, images))
                stored = None if rebuild else self.store.get(build.key)
                if stored is not None:
                    build.record, build.reused = _with_index(stored, index), True
                unique[(index, prompt)] = (build, images)
            builds.append(unique[(index, prompt)][0])
        todo = [(b, images) for b, images in unique.values() if b.record is None]
        if todo:
            self._run_agents([b for b, _ in todo], [images for _, images in todo])
        return builds

    def build_qa(self, prompts: Sequence[str], references: Any = None, ids: Sequence[Any] | None = None,
                 rebuild: bool = False) -> list[QASet]:
        """QA sets for the prompts, in order, built once and then reused from the store.

        Raises QABuildError naming every prompt whose QA set could not be built (the others
        are stored, so a rerun only redoes the failures).
        """
        builds = self.build(prompts, references, ids, rebuild)
        failed = [b for b in builds if b.record is None]
        if failed:
            lines = "; ".join(f"{b.prompt!r}: {', '.join(b.errors)}" for b in failed[:5])
            raise QABuildError(f"{len(failed)} of {len(builds)} QA sets could not be built: {lines}")
        return [b.qa for b in builds]  # type: ignore[misc]

    def _run_agents(self, todo: list[QABuild], references: list[list]) -> None:
        prompts = [b.prompt for b in todo]
        item_ids = [b.index if b.index is not None else b.key.digest() for b in todo]
        proposals = self.agents.propose(prompts, item_ids)
        alive = []
        for n, (build, output) in enumerate(zip(todo, proposals)):
            if output.ok:
                alive.append(n)
            else:
                build.errors.append(f"proposal: {output.error}")
        extractions = self.agents.extract([prompts[n] for n in alive], [item_ids[n] for n in alive],
                                          [references[n] for n in alive])
        evidence: dict[int, list[ReferenceExtraction]] = {}
        for n, outputs in zip(alive, extractions):
            evidence[n] = [o.value for o in outputs if o.value is not None]
            todo[n].errors.extend(f"extraction {j}: {o.error}" for j, o in enumerate(outputs) if not o.ok)
        verifications = self.agents.verify([prompts[n] for n in alive], [item_ids[n] for n in alive],
                                           [proposals[n].value for n in alive], [evidence[n] for n in alive])
        verified = []
        for n, output in zip(alive, verifications):
            if output.ok:
                verified.append((n, output.value))
            else:
                todo[n].errors.append(f"verification: {output.error}")
        questions = self.agents.write_questions([prompts[n] for n, _ in verified], [item_ids[n] for n, _ in verified],
                                                [v.verified_rubric for _, v in verified])
        for (n, verification), output in zip(verified, questions):
            build = todo[n]
            if not output.ok:
                build.errors.append(f"qa: {output.error}")
                continue
            items, repeated = _unique_questions(output.value.items)
            if repeated:
                build.notes.append(f"qa: left out {repeated} repeated question(s) (same level and wording)")
            try:
                qa = QASet(prompt=build.prompt, index=build.index, items=items)
                record = QARecord(key=build.key, qa=qa, rubric=verification.verified_rubric,
                                  verification=verification, proposal=proposals[n].value,
                                  references=evidence[n])
            except ValueError as error:
                build.errors.append(f"qa: {error}")
                continue
            self.store.put(record)
            build.record = record

    def _qa_for_items(self, prompts: list[str], ids: list[str] | None, qa_sets: Any,
                      references: Any) -> tuple[list, list]:
        """A QA set (or the reason there is none) and its source for each item."""
        if qa_sets is None:
            builds = self.build(prompts, references=references, ids=ids)
            return ([b.qa for b in builds],
                    [("reused" if b.reused else "built") if b.qa else "qa_error: " + "; ".join(b.errors)
                     for b in builds])
        sets = _as_qa_sets(qa_sets)
        found = [_match_qa(sets, prompt, ids[i] if ids else None) for i, prompt in enumerate(prompts)]
        return found, ["given"] * len(prompts)

    # ---- scoring ------------------------------------------------------------------------------
    def score(self, images: Sequence[Any], prompts: Sequence[str], qa_sets: Any = None,
              ids: Sequence[Any] | None = None, references: Any = None) -> list[Verdict]:
        """One Verdict per image: level and overall scores, the decision and its feedback.

        `qa_sets` (QASet objects, dicts or QA.csv-read sets) are matched to images by id and
        prompt; without them the QA sets are built or reused from the store. An image whose
        QA set could not be built gets a Verdict without a score, its reason in provenance.
        `references` overrides the pipeline's reference provider for building.
        """
        prompts = _strings(prompts, "prompts")
        images = list(images)
        if len(images) != len(prompts):
            raise ValueError(f"{len(images)} images for {len(prompts)} prompts")
        if not images:
            raise ValueError("nothing to score: no images")
        given_ids = _ids(ids, len(prompts))
        item_ids = given_ids or [str(i) for i in range(len(images))]
        qas, sources = self._qa_for_items(prompts, given_ids, qa_sets, references)
        pils = [to_pil(image, index=i) for i, image in enumerate(images)]

        answers: list[dict[int, QuestionAnswer | str | None]] = [{} for _ in images]
        with digests_held():  # both rounds ask about the same images: hash each once
            self._ask(pils, item_ids, qas, answers, levels=("level_1",), only=range(len(images)))
            passing = [i for i, qa in enumerate(qas) if qa is not None and not _fails_gate(qa.items, answers[i],
                                                                                             self.policy)]
            self._ask(pils, item_ids, qas, answers, levels=("level_2", "level_3"), only=passing)

        verdicts = []
        for i, (qa, source) in enumerate(zip(qas, sources)):
            provenance = {**self._provenance(), "qa_source": source.split(":")[0]}
            if qa is None:
                provenance["qa_error"] = source.partition(": ")[2] or source
                items: list[QAItem] = []
            else:
                items = qa.items
            verdicts.append(score_answers(items, answers[i], self.policy, prompt=prompts[i],
                                          index=given_ids[i] if given_ids else (qa.index if qa else None),
                                          image=_image_name(images[i]), provenance=provenance))
        if self.feedback:
            verdicts = self._add_feedback(pils, item_ids, verdicts)
        return verdicts

    def _ask(self, pils: list, item_ids: list[str], qas: list[QASet | None],
             answers: list[dict[int, Any]], levels: tuple[str, ...], only: Sequence[int]) -> None:
        """Ask every question of `levels` for the images in `only`, in chunks, image by image."""
        requests: list[Request] = []
        where: list[tuple[int, int]] = []
        for i in only:
            qa = qas[i]
            if qa is None:
                continue
            for position, item in enumerate(qa.items):
                if item.level in levels:
                    requests.append(self.agents.evaluation_request(pils[i], item.question, item_ids[i], position))
                    where.append((i, position))
        for (i, position), answer in zip(where, self._generate(self.judge, requests), strict=True):
            answers[i][position] = _answer_value(answer)

    def _generate(self, judge: Any, requests: list[Request]) -> list[Answer]:
        out: list[Answer] = []
        for start in range(0, len(requests), self.chunk_size):
            chunk = requests[start:start + self.chunk_size]
            got = judge.generate(chunk)
            if len(got) != len(chunk):
                raise RuntimeError(f"judge returned {len(got)} answers for {len(chunk)} requests")
            out.extend(got)
        return out

    def _add_feedback(self, pils: list, item_ids: list[str], verdicts: list[Verdict]) -> list[Verdict]:
        """Feedback only for regenerate (from the failed level-1 checks) and edit (from every
        failed check); a feedback answer that cannot be read is noted, never invented."""
        requests, owners = [], []
        for i, verdict in enumerate(verdicts):
            if verdict.decision not in ("regenerate", "edit"):
                continue
            failed = [q for q in verdict.questions if q.status == "answered" and q.answer != "yes"
                      and (verdict.decision == "edit" or q.level == "level_1")]
            requests.append(self.agents.feedback_request(verdict.decision, pils[i], verdict.prompt or "", failed,
                                                         item_ids[i]))
            owners.append(i)
        out = list(verdicts)
        for i, answer in zip(owners, self._generate(self.judge, requests), strict=True):
            output = self.agents.read_feedback(verdicts[i].decision, answer)
            if output.ok:
                out[i] = verdicts[i].model_copy(update={"feedback": feedback_text(output)})
            else:
                provenance = {**verdicts[i].provenance, "feedback_error": output.error or "unreadable"}
                out[i] = verdicts[i].model_copy(update={"provenance": provenance})
        return out

    def _provenance(self) -> dict[str, str]:
        manifest = self.judge.manifest() if hasattr(self.judge, "manifest") else {}
        out = {k: str(manifest[k]) for k in PROVENANCE_KEYS if manifest.get(k) is not None}
        out["pack"] = self.pack.key
        out["scoring"] = SCORING_VERSION
        if self.text_judge is not self.judge:
            out["text_model"] = model_name(self.text_judge)
        return out


# ---- helpers ---------------------------------------------------------------------------------

def _strings(values: Sequence[str], what: str) -> list[str]:
    if isinstance(values, str):
        raise TypeError(f"{what} must be a list of strings, not one string")
    values = list(values)
    for i, value in enumerate(values):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{what}[{i}] must be a non-empty string, got {value!r}")
    return values


def _ids(ids: Sequence[Any] | None, n: int) -> list[str] | None:
    if ids is None:
        return None
    ids = [str(i) for i in ids]
    if len(ids) != n:
        raise ValueError(f"{len(ids)} ids for {n} items")
    return ids


def _with_index(record: QARecord, index: str | None) -> QARecord:
    if record.qa.index == index:
        return record
    return record.model_copy(update={"qa": record.qa.model_copy(update={"index": index})})


def _as_qa_sets(qa_sets: Any) -> list[QASet]:
    if isinstance(qa_sets, (QASet, QARecord, Mapping)):
        qa_sets = [qa_sets]
    out = []
    for n, qa in enumerate(qa_sets):
        if isinstance(qa, QARecord):
            qa = qa.qa
        elif isinstance(qa, Mapping):
            qa = QASet.model_validate(qa)
        elif isinstance(qa, str):
            qa = QASet.model_validate_json(qa)
        if not isinstance(qa, QASet):
            raise TypeError(f"qa_sets[{n}] must be a QASet, a dict or JSON, got {type(qa).__name__}")
        out.append(qa)
    return out


def _match_qa(sets: list[QASet], prompt: str, item_id: str | None) -> QASet:
    """The QA set for one item: same id and prompt if ids are given, else the prompt's only set."""
    if item_id is not None:
        exact = [q for q in sets if q.index == item_id and q.prompt == prompt]
        if exact:
            return exact[0]
    candidates = [q for q in sets if q.prompt == prompt]
    distinct = {tuple(i.model_dump_json() for i in q.items) for q in candidates}
    if not candidates:
        raise ValueError(f"no QA set for prompt {prompt!r}" + (f" (id {item_id!r})" if item_id else ""))
    if len(distinct) > 1:
        raise ValueError(f"{len(candidates)} different QA sets for prompt {prompt!r}; pass ids matching their index")
    return candidates[0]


def _unique_questions(items: Sequence[QAItem]) -> tuple[list[QAItem], int]:
    """Items without a second copy of a (level, question) pair: asking the same question twice
    would count one answer twice. Returns the kept items and how many were left out."""
    seen: set[tuple[str, str]] = set()
    kept = []
    for item in items:
        key = (item.level, item.question)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept, len(items) - len(kept)


def _answer_value(answer: Answer) -> QuestionAnswer | str | None:
    """A parsed answer, the raw text when it cannot be read (a counted failure), None if absent."""
    if not answer.ok:
        return None
    try:
        return parse_answer(answer.text)
    except AnswerParseError:
        return answer.text


def _fails_gate(items: Sequence[QAItem], answers: Mapping[int, Any], policy: GatingPolicy) -> bool:
    """Whether the level-1 answers send the image to regenerate (levels 2-3 are then not asked)."""
    level_1 = [answers.get(p) for p, item in enumerate(items) if item.level == "level_1"]
    scored = [a.answer for a in level_1 if isinstance(a, QuestionAnswer)]
    score = mean_score(scored)
    return score is not None and should_regenerate(score, policy)


def _image_name(image: Any) -> str | None:
    if isinstance(image, (str, os.PathLike)):
        return Path(image).name
    return None


__all__ = ["DEFAULT_CHUNK", "Fager", "MemoryStore", "QABuild", "QABuildError", "model_name"]
