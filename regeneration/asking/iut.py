"""Build Image Understanding Trees through a judge, stage by stage over many references at once.

Stages (each one batched `generate` call over all images, constrained JSON):
1. description and global features; 2. objects (name, type); 3. attributes of each object
(fields by type); 4. relationships between named objects (images with two or more objects).
Then the tree renders to an initial text-to-image prompt, written by an optional text judge.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vlmjudge.images import to_pil

from . import json_request, run_stage
from ..parsing import ParseFailure
from ..pack import PromptPack, load_pack
from ..schema import (
    ATTRIBUTE_MODELS,
    IUT,
    MAX_OBJECTS,
    MAX_RELATIONS,
    TYPE_ATTRIBUTES,
    CaptionStage,
    GlobalFeatures,
    IUTObject,
    ObjectsStage,
    PromptAnswer,
    Relationship,
    RelationsStage,
    relationships_model,
)


@dataclass
class IUTResult:
    """One reference's tree (None when stage 1 failed) and every parse failure met on the way."""

    item: str
    iut: IUT | None
    failures: list[ParseFailure] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return self.iut is not None

    def to_json(self) -> dict[str, Any]:
        return {"item": self.item, "iut": self.iut.model_dump() if self.iut else None,
                "failures": [f.to_json() for f in self.failures]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IUTResult:
        return cls(item=data["item"], iut=IUT.model_validate(data["iut"]) if data.get("iut") else None,
                   failures=[ParseFailure(**f) for f in data.get("failures", [])])


def _unique_names(names: list[str]) -> list[str]:
    """Names made distinct ("dog", "dog 2"), since relations refer to objects by name."""
    seen: dict[str, int] = {}
    out = []
    for raw in names:
        name = raw.strip()[:36] or "object"
        count = seen.get(name.lower(), 0) + 1
        seen[name.lower()] = count
        out.append(name if count == 1 else f"{name} {count}")
    return out


def build_iuts(judge: Any, images: Sequence[Any], ids: Sequence[str] | None = None, *,
               pack: PromptPack | dict | str | None = None, max_objects: int = MAX_OBJECTS,
               reading: str = "release") -> list[IUTResult]:
    """IUTs for many reference images, asked in four batched stages (answers read as `reading` says)."""
    pack = load_pack(pack)
    if not 0 <= max_objects <= MAX_OBJECTS:
        raise ValueError(f"max_objects must be in 0..{MAX_OBJECTS}, got {max_objects}")
    pils = [to_pil(img, index=i) for i, img in enumerate(images)]
    ids = [str(i) for i in (ids if ids is not None else range(len(pils)))]
    if len(ids) != len(pils) or len(set(ids)) != len(ids):
        raise ValueError("ids must be unique, one per image")
    system = pack.system

    # Stage 1: description and global features.
    stage1 = run_stage(judge, [json_request(stage="iut_caption", item=i, images=[img], system=system,
                                            text=pack.render("iut_caption"), schema=CaptionStage)
                               for i, img in zip(ids, pils)], CaptionStage, reading=reading)
    results = {i: IUTResult(i, None) for i in ids}
    captions: dict[str, CaptionStage] = {}
    for i, got in zip(ids, stage1):
        if isinstance(got, ParseFailure):
            results[i].failures.append(got)
        else:
            captions[i] = got
    live = [(i, img) for i, img in zip(ids, pils) if i in captions]

    # Stage 2: objects.
    objects: dict[str, list[tuple[str, str]]] = {i: [] for i, _ in live}
    if max_objects > 0:
        stage2 = run_stage(judge, [json_request(stage="iut_objects", item=i, images=[img], system=system,
                                                text=pack.render("iut_objects", description=captions[i].description,
                                                                 max_objects=max_objects),
                                                schema=ObjectsStage) for i, img in live], ObjectsStage,
                           reading=reading)
        for (i, _), got in zip(live, stage2):
            if isinstance(got, ParseFailure):
                results[i].failures.append(got)
                continue
            stubs = got.objects[:max_objects]
            objects[i] = list(zip(_unique_names([s.name for s in stubs]), [s.type for s in stubs]))

    # Stage 3: attributes of every object, grouped by image so requests sharing an image are adjacent.
    asks, where = [], []
    for i, img in live:
        for k, (name, kind) in enumerate(objects[i]):
            fields = ", ".join(TYPE_ATTRIBUTES[kind])
            asks.append(json_request(stage="iut_attributes", item=i, index=k, images=[img], system=system,
                                     text=pack.render("iut_attributes", description=captions[i].description,
                                                      type=kind, name=name, fields=fields),
                                     schema=ATTRIBUTE_MODELS[kind]))
            where.append((i, k))
    kinds = [ATTRIBUTE_MODELS[objects[i][k][1]] for i, k in where]
    answers = run_stage(judge, asks, kinds, reading=reading)
    attributes: dict[tuple[str, int], dict[str, str]] = {}
    for (i, k), got in zip(where, answers):
        if isinstance(got, ParseFailure):
            results[i].failures.append(got)
        else:
            attributes[(i, k)] = got.model_dump()

    # Stage 4: relationships, only between objects of the same image.
    multi = [(i, img) for i, img in live if len(objects[i]) >= 2]
    relations: dict[str, list[Relationship]] = {i: [] for i, _ in live}
    if multi:
        stage4 = run_stage(judge, [json_request(stage="iut_relations", item=i, images=[img], system=system,
                                                text=pack.render("iut_relations", max_relations=MAX_RELATIONS,
                                                                 names=", ".join(n for n, _ in objects[i])),
                                                schema=relationships_model([n for n, _ in objects[i]]))
                                   for i, img in multi], RelationsStage, reading=reading)
        for (i, _), got in zip(multi, stage4):
            if isinstance(got, ParseFailure):
                results[i].failures.append(got)
                continue
            names = {n for n, _ in objects[i]}
            kept = [r for r in got.relationships if r.subject in names and r.object in names]
            if len(kept) < len(got.relationships):
                results[i].failures.append(ParseFailure("iut_relations", "a relation names an unknown object",
                                                        got.model_dump_json()))
            relations[i] = kept

    for i, _ in live:
        cap = captions[i]
        results[i].iut = IUT(
            description=cap.description, global_features=GlobalFeatures(**cap.global_features.model_dump()),
            objects=[IUTObject(name=name, type=kind, attributes=attributes.get((i, k), {}))
                     for k, (name, kind) in enumerate(objects[i])],
            relationships=relations[i])
    return [results[i] for i in ids]


@dataclass
class InitialPrompt:
    """The prompt a regeneration starts from, and how it was written."""

    item: str
    prompt: str | None
    source: str  # "text_judge", "template", "direct", "interrogator" or "user"
    failures: list[ParseFailure] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"item": self.item, "prompt": self.prompt, "source": self.source,
                "failures": [f.to_json() for f in self.failures]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> InitialPrompt:
        return cls(item=data["item"], prompt=data.get("prompt"), source=data["source"],
                   failures=[ParseFailure(**f) for f in data.get("failures", [])])


def initial_prompts(results: Sequence[IUTResult], text_judge: Any = None, *,
                    pack: PromptPack | dict | str | None = None, reading: str = "release") -> list[InitialPrompt]:
    """Render each tree to an initial prompt: written by `text_judge` (text-only requests) when given,
    else by the deterministic `IUT.to_prompt`. A text-judge parse failure falls back to the template
    and is recorded; an item without a tree gets no prompt."""
    pack = load_pack(pack)
    out = {r.item: InitialPrompt(r.item, None, "none") for r in results}
    ready = [r for r in results if r.iut is not None]
    if text_judge is None:
        for r in ready:
            out[r.item] = InitialPrompt(r.item, r.iut.to_prompt(), "template")
        return [out[r.item] for r in results]
    requests = [json_request(stage="initial_prompt", item=r.item, system=pack.system, schema=PromptAnswer,
                             text=pack.render("initial_prompt", iut=r.iut.to_text(),
                                              max_words=pack.limits["max_words"])) for r in ready]
    for r, got in zip(ready, run_stage(text_judge, requests, PromptAnswer, reading=reading)):
        if isinstance(got, ParseFailure):
            out[r.item] = InitialPrompt(r.item, r.iut.to_prompt(), "template", [got])
        else:
            out[r.item] = InitialPrompt(r.item, got.prompt.strip(), "text_judge")
    return [out[r.item] for r in results]
