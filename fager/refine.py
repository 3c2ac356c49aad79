"""Feedback-driven refinement: keep, edit or regenerate each image, re-evaluate, report before/after.

FAGER's verdicts say what is wrong with an image; this module acts on them, one round at a
time, and shows whether the changes helped. Every generated image is saved as its batch
returns, so a killed run resumes without generating anything twice.

docs/methods/fager.md, "Refinement runs", describes the rounds, the resume rule and the output folder.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from PIL import Image
from pydantic import BaseModel, ConfigDict

from vlmjudge.generators import load_editor, load_generator
from vlmjudge.images import image_bytes_digest, to_pil
from vlmjudge.outputs import iter_jsonl
from vlmjudge.text import format_score

from .core import Fager
from .records import Verdict
from .saved_runs import write_summary, write_verdicts

Action = Literal["keep", "edit", "regenerate", "none"]
ActionStatus = Literal["done", "reused", "unchanged", "no_generator", "no_editor", "no_feedback", "undecided"]


class RoundStep(BaseModel):
    """What one round did to one image, and the scores around it."""

    model_config = ConfigDict(extra="forbid")
    round: int
    decision_before: str | None
    score_before: float | None
    action: Action
    status: ActionStatus
    text: str | None = None  # the generation prompt or the edit instruction used
    image_file: str | None = None
    seed: int | None = None
    decision_after: str | None
    score_after: float | None


class ItemReport(BaseModel):
    """One image's path through the rounds."""

    model_config = ConfigDict(extra="forbid")
    id: str
    prompt: str
    initial_score: float | None
    initial_decision: str | None
    final_score: float | None
    final_decision: str | None
    steps: list[RoundStep]


class RefineReport(BaseModel):
    """Before/after over all images: mean overall scores, decisions per round, each image's steps."""

    model_config = ConfigDict(extra="forbid")
    rounds: int
    images: int
    mean_before: float | None
    mean_after: float | None
    scored_before: int
    scored_after: int
    decisions: list[dict[str, int]]  # decision counts after each evaluation (index 0: before)
    generated: int
    reused: int
    items: list[ItemReport]

    def markdown(self) -> str:
        """The report as a short markdown page for people."""
        fmt = format_score
        lines = ["# FAGER refinement", "",
                 f"{self.images} images, {self.rounds} round(s): mean overall score {fmt(self.mean_before)} -> "
                 f"{fmt(self.mean_after)} ({self.scored_before} -> {self.scored_after} scored); "
                 f"{self.generated} images generated, {self.reused} reused from a previous run.", ""]
        for r, counts in enumerate(self.decisions):
            label = "before" if r == 0 else f"after round {r}"
            lines.append(f"- decisions {label}: " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"))
        lines += ["", "| id | before | action(s) | after |", "|---|---|---|---|"]
        for item in self.items:
            actions = "; ".join(f"r{s.round}: {s.action} ({s.status})" for s in item.steps) or "-"
            lines.append(f"| {item.id} | {fmt(item.initial_score)} {item.initial_decision or ''} | {actions} | "
                         f"{fmt(item.final_score)} {item.final_decision or ''} |")
        return "\n".join(lines) + "\n"


def regeneration_prompt(prompt: str, constraint: str) -> str:
    """The original prompt with the regeneration constraint appended."""
    prompt, constraint = prompt.rstrip(), constraint.strip()
    joiner = " " if prompt.endswith((".", ",", ";", ":", "!", "?")) else ", "
    return f"{prompt}{joiner}{constraint}"


def item_seed(item_id: str, round_number: int, base_seed: int = 0) -> int:
    """A seed that depends only on the item, the round and the base seed (stable across reruns)."""
    digest = hashlib.sha256(f"{base_seed}:{item_id}:{round_number}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def refine_steps(images: int, rounds: int) -> int:
    """Calls of refine's `on_item` in all: one per image for the first scoring and for each round."""
    return images * (rounds + 1)


def refine(fager: Fager, images: Sequence[Any], prompts: Sequence[str], *, out_dir: str | os.PathLike,
           generator: Any = None, editor: Any = None, rounds: int = 1, qa_sets: Any = None,
           ids: Sequence[Any] | None = None, batch_size: int = 1, seed: int = 0,
           score_batch: int | None = None, on_item: Callable[[], None] | None = None) -> RefineReport:
    """Run `rounds` rounds of keep/edit/regenerate with re-evaluation; writes and returns the report.

    Without a generator, images to regenerate stay as they are (status `no_generator`), and
    likewise for edits without an editor; an edit without an instruction is `no_feedback`.
    `score_batch` images are scored per call (default: all at once); `on_item` is called as each
    image is scored, or, in a round, as soon as it is known to stay unchanged (`refine_steps` calls).
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if batch_size < 1 or (score_batch is not None and score_batch < 1):
        raise ValueError(f"batch sizes must be >= 1, got batch_size {batch_size}, score_batch {score_batch}")
    tick = on_item or (lambda: None)
    prompts = list(prompts)
    images = [to_pil(image, index=i) for i, image in enumerate(images)]
    if len(images) != len(prompts):
        raise ValueError(f"{len(images)} images for {len(prompts)} prompts")
    ids = [str(i) for i in (ids if ids is not None else range(len(images)))]
    if len(ids) != len(images) or len(set(ids)) != len(ids):
        raise ValueError("ids must be unique, one per image")
    names = _file_names(ids)
    generator = load_generator(generator) if generator is not None else None
    editor = load_editor(editor) if editor is not None else None
    out = Path(out_dir)
    if qa_sets is None:
        qa_sets = fager.build_qa(prompts, ids=ids)

    verdicts = _score(fager, images, prompts, ids, qa_sets, score_batch, tick)
    _write_round(out / "round_0", verdicts)
    history: list[list[Verdict]] = [verdicts]
    steps: list[list[RoundStep]] = [[] for _ in images]
    generated = reused = 0
    for r in range(1, rounds + 1):
        folder = out / f"round_{r}"
        saved = _read_manifest(folder / "manifest.jsonl")
        plans = [_plan(v, p, i, r, seed, generator, editor) for v, p, i in zip(verdicts, prompts, ids)]
        for _ in range(sum(plan["status"] != "todo" for plan in plans)):  # these keep their image and verdict
            tick()
        new_images: dict[int, Image.Image] = {}
        for action, tool in (("regenerate", generator), ("edit", editor)):
            todo = [n for n, plan in enumerate(plans) if plan["action"] == action and plan["status"] == "todo"]
            for n in todo:  # images a previous run already made with the same inputs
                entry = saved.get(ids[n])
                if entry is not None and entry == _manifest_entry(plans[n], ids[n], names[n], images[n]) \
                        and (folder / entry["file"]).is_file():
                    new_images[n] = to_pil(folder / entry["file"])
                    plans[n]["status"] = "reused"
                    reused += 1
            todo = [n for n in todo if plans[n]["status"] == "todo"]
            for start in range(0, len(todo), batch_size):
                chunk = todo[start:start + batch_size]
                texts, seeds = [plans[n]["text"] for n in chunk], [plans[n]["seed"] for n in chunk]
                made = tool(texts, seeds) if action == "regenerate" else tool([images[n] for n in chunk], texts, seeds)
                for n, image in zip(chunk, made, strict=True):
                    new_images[n] = to_pil(image)
                    _save(folder, new_images[n], _manifest_entry(plans[n], ids[n], names[n], images[n]))
                    plans[n]["status"] = "done"
                    generated += 1
        changed = sorted(new_images)
        after = list(verdicts)
        if changed:
            rescored = _score(fager, [new_images[n] for n in changed], [prompts[n] for n in changed],
                              [ids[n] for n in changed], qa_sets, score_batch, tick)
            for n, verdict in zip(changed, rescored):
                after[n] = verdict.model_copy(update={"image": f"round_{r}/images/{names[n]}.png"})
                images[n] = new_images[n]
        for n, plan in enumerate(plans):
            steps[n].append(RoundStep(
                round=r, decision_before=verdicts[n].decision, score_before=verdicts[n].score,
                action=plan["action"], status=plan["status"], text=plan["text"], seed=plan["seed"],
                image_file=f"round_{r}/images/{names[n]}.png" if n in new_images else None,
                decision_after=after[n].decision, score_after=after[n].score))
        _write_round(folder, after)
        verdicts = after
        history.append(after)

    report = _report(history, steps, ids, prompts, rounds, generated, reused)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(report.model_dump_json(indent=2), encoding="utf-8")
    (out / "report.md").write_text(report.markdown(), encoding="utf-8")
    return report


def _score(fager: Fager, images: list, prompts: list[str], ids: list[str], qa_sets: Any, batch: int | None,
           tick: Callable[[], None]) -> list[Verdict]:
    """The images' Verdicts, scored `batch` at a time (all at once without one); `tick` per image."""
    size = batch or max(len(images), 1)
    verdicts: list[Verdict] = []
    for start in range(0, len(images), size):
        stop = start + size
        verdicts += fager.score(images[start:stop], prompts[start:stop], qa_sets=qa_sets, ids=ids[start:stop])
        for _ in range(len(verdicts) - start):
            tick()
    return verdicts


def _plan(verdict: Verdict, prompt: str, item_id: str, round_number: int, base_seed: int,
          generator: Any, editor: Any) -> dict[str, Any]:
    """The action for one image in one round; status `todo` when something must be made."""
    decision = verdict.decision
    plan: dict[str, Any] = {"action": decision or "none", "status": "unchanged", "text": None, "seed": None}
    if decision is None:
        plan["status"] = "undecided"
    elif decision == "regenerate":
        plan["text"] = regeneration_prompt(prompt, verdict.feedback) if verdict.feedback else prompt
        plan["seed"] = item_seed(item_id, round_number, base_seed)
        plan["status"] = "todo" if generator is not None else "no_generator"
    elif decision == "edit":
        if not verdict.feedback:
            plan["status"] = "no_feedback"
        else:
            plan["text"] = verdict.feedback
            plan["seed"] = item_seed(item_id, round_number, base_seed)
            plan["status"] = "todo" if editor is not None else "no_editor"
    return plan


def _manifest_entry(plan: dict[str, Any], item_id: str, name: str, source: Image.Image) -> dict[str, Any]:
    """What made an image: a saved image is reused only if all of this matches."""
    entry = {"id": item_id, "file": f"images/{name}.png", "action": plan["action"], "text": plan["text"],
             "seed": plan["seed"]}
    if plan["action"] == "edit":
        entry["source"] = image_bytes_digest(source)
    return entry


def _save(folder: Path, image: Image.Image, entry: dict[str, Any]) -> None:
    """Write the image (atomically), then its manifest line: a line always has its file."""
    path = folder / entry["file"]
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    image.save(temp, format="PNG")
    os.replace(temp, path)
    with open(folder / "manifest.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, ensure_ascii=False) + "\n")


def _read_manifest(path: Path) -> dict[str, dict[str, Any]]:
    """The last manifest entry per id (a later line supersedes an earlier one)."""
    entries: dict[str, dict[str, Any]] = {}
    if path.is_file():
        for line_no, entry in iter_jsonl(path):  # a line that is not a JSON object names file and line
            if "id" not in entry:
                raise ValueError(f"{path}:{line_no}: manifest line has no 'id'")
            entries[str(entry["id"])] = entry
    return entries


def _write_round(folder: Path, verdicts: list[Verdict]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    write_verdicts(verdicts, folder / "verdicts.jsonl")
    write_summary(verdicts, folder / "summary.csv")


def _file_names(ids: list[str]) -> list[str]:
    """File-safe names for ids, unique even when two ids clean up to the same text."""
    names = []
    for item_id in ids:
        clean = re.sub(r"[^A-Za-z0-9._-]", "_", item_id).strip(".") or "item"
        if clean != item_id:
            clean = f"{clean}-{hashlib.sha256(item_id.encode()).hexdigest()[:8]}"
        names.append(clean)
    return names


def _mean(verdicts: list[Verdict]) -> tuple[float | None, int]:
    scores = [v.score for v in verdicts if v.score is not None]
    return (sum(scores) / len(scores) if scores else None), len(scores)


def _report(history: list[list[Verdict]], steps: list[list[RoundStep]], ids: list[str], prompts: list[str],
            rounds: int, generated: int, reused: int) -> RefineReport:
    (before, n_before), (after, n_after) = _mean(history[0]), _mean(history[-1])
    items = [ItemReport(id=ids[n], prompt=prompts[n], initial_score=history[0][n].score,
                        initial_decision=history[0][n].decision, final_score=history[-1][n].score,
                        final_decision=history[-1][n].decision, steps=steps[n]) for n in range(len(ids))]
    decisions = [dict(Counter(v.decision or "undecided" for v in verdicts)) for verdicts in history]
    return RefineReport(rounds=rounds, images=len(ids), mean_before=before, mean_after=after,
                        scored_before=n_before, scored_after=n_after, decisions=decisions,
                        generated=generated, reused=reused, items=items)


__all__ = ["ItemReport", "RefineReport", "RoundStep", "item_seed", "refine", "refine_steps", "regeneration_prompt"]
