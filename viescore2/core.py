"""`VIEScore2`: score generated images with any judge, in one batched call, into explained records.

    judge = vlmjudge.load_judge("Qwen/Qwen3-VL-8B-Instruct")
    vs = VIEScore2(judge, fields="pq_sc+split", grid_size=16)
    records = vs.score(images, prompts, conditioning=None)   # one record per image
    records[0].overall, records[0].localization, records[0].explanation

Each request holds the conditioning images first and the generated image last, the
instruction of the configuration, and the output grammar as an EBNF constraint (backends
that enforce grammars decode only parseable text; the rest are read by the tolerant parser).
A record keeps what was asked for and read: the scores, the grids, the raw text, the finish
reason, a status and the requested fields that could not be read (each one a counted parse
failure), and a parameter-free explanation. The overall score is the native ``score``, or
sqrt(PQ * SC) when PQ and SC are predicted; a configuration without scores has none.
"""
from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from vlmjudge.judge import Judge
from vlmjudge.requests import Answer, Decoding, Request

from .asking import Item, item_request, make_items, read_answer
from .grid import DEFAULT_N
from .pack import Fields, FieldsLike, PackLike, load_pack
from .records import VIEScore2Record
from .schema import GridBounds, output_constraint, token_budget


@dataclass
class RunResult:
    """A run's records, its manifest, and its counts (finish reasons, statuses, parse failures)."""

    records: list[VIEScore2Record]
    manifest: dict[str, Any]
    counts: dict[str, int]


class VIEScore2:
    """VIEScore2 over any `vlmjudge` judge: one constrained request per image, read into records.

    Args:
        judge: a `vlmjudge` Judge.
        fields: the configuration, e.g. "pq_sc+split" (default), "overall", "grid+marks" (see `Fields`).
        grid_size: N of the N x N grid (16 in the paper).
        pack: instruction override (see `viescore2.pack.load_pack`): give a fine-tuned
            checkpoint the instruction it was trained with.
        constrain: attach the output grammar (backends that cannot enforce it ignore it).
        max_rows, max_cols: optional grammar bounds on rows per grid and columns per row.
        decoding: decoding parameters; default greedy with the grammar's token budget.

    Examples:
        A replay judge keyed by image id stands in for a VLM. The first answer reads as PQ 9 and
        SC 4 (overall sqrt(9 x 4) = 6) with two artifact cells; the second is unreadable, so it
        has no score and counts its three missing fields as parse failures:

        >>> from PIL import Image
        >>> from vlmjudge.backends.replay import ReplayJudge
        >>> judge = ReplayJudge({"cat": "pq: 9/10\\nsc: 4/10\\nartifact:\\nr2: 3,4\\nmisalign:\\nnone",
        ...                      "dog": "I cannot tell."}, key_fields=["id"])
        >>> cat, dog = VIEScore2(judge, grid_size=4).score([Image.new("RGB", (64, 64))] * 2, ["a cat", "a dog"],
        ...                                                ids=["cat", "dog"])
        >>> cat.score, cat.scores, cat.grid.lines(), cat.status
        (6.0, {'pq': 9.0, 'sc': 4.0}, ['r2: 3,4'], 'scored')
        >>> dog.score, dog.status, dog.parse_failures
        (None, 'failed', 3)
    """

    def __init__(self, judge: Judge, fields: FieldsLike = "pq_sc+split", grid_size: int = DEFAULT_N,
                 pack: PackLike = None, *, constrain: bool = True, max_rows: int | None = None,
                 max_cols: int | None = None, decoding: Decoding | None = None) -> None:
        if not isinstance(judge, Judge):
            raise TypeError(f"VIEScore2 needs a vlmjudge Judge (see vlmjudge.load_judge), got {type(judge).__name__}")
        self.judge = judge
        self.fields = Fields.parse(fields)
        self.bounds = GridBounds(grid_size, max_rows, max_cols)
        self.pack = load_pack(pack)
        self.pack.render(self.fields, "", grid_size)  # a pack lacking this configuration fails now, not mid-run
        self.constraint = output_constraint(self.fields, grid_size, max_rows, max_cols) if constrain else None
        if decoding is not None and not isinstance(decoding, Decoding):
            raise TypeError(f"decoding must be a vlmjudge Decoding, got {type(decoding).__name__}")
        self.decoding = decoding or Decoding(max_new_tokens=token_budget(self.fields, grid_size, max_rows, max_cols))
        self.last_counts: dict[str, int] = {}

    @property
    def grid_size(self) -> int:
        return self.bounds.n

    def instruction(self, prompt: str, num_conditioning: int = 0) -> str:
        """The instruction text this scorer sends for one item."""
        return self.pack.render(self.fields, prompt, self.grid_size, num_conditioning)

    def requests(self, items: Sequence[Item]) -> list[Request]:
        """One request per item: conditioning images first, the generated image last."""
        return [item_request(item, self.instruction(item.prompt, len(item.conditioning)), self.pack.system,
                             self.fields, self.grid_size, self.decoding, self.constraint)
                for item in items]

    def run(self, images: Sequence[Any], prompts: Sequence[str], conditioning: Sequence[Any] | None = None,
            ids: Sequence[Any] | None = None) -> RunResult:
        """Judge every image in one batched call; records in order, manifest and counts."""
        items = make_items(images, prompts, conditioning, ids)
        answers = self.judge.generate(self.requests(items))
        records = [self._record(item, answer) for item, answer in zip(items, answers, strict=True)]
        counts = Counter({"images": len(records)})
        counts.update(f"finish_{a.finish_reason}" for a in answers)
        counts.update(f"status_{r.status}" for r in records)
        counts["parse_failures"] = sum(r.parse_failures for r in records)
        counts["scored"] = sum(r.valid for r in records)
        self.last_counts = dict(counts)
        return RunResult(records, self.manifest(), dict(counts))

    def score(self, images: Sequence[Any], prompts: Sequence[str], conditioning: Sequence[Any] | None = None,
              ids: Sequence[Any] | None = None) -> list[VIEScore2Record]:
        """One record per image, in order (`record.score` is None when no overall score was read)."""
        return self.run(images, prompts, conditioning, ids).records

    def score_batch(self, batch: Mapping[str, Sequence[Any]]) -> list[VIEScore2Record]:
        """The registry's Scorer interface: columns "image" and "prompt"; "conditioning" and "id" optional."""
        for column in ("image", "prompt"):
            if column not in batch:
                raise ValueError(f"viescore2: batch lacks the {column!r} column (has {sorted(batch)})")
        ids = batch.get("id")
        return self.score(list(batch["image"]), list(batch["prompt"]), batch.get("conditioning"),
                          list(ids) if ids is not None else None)

    def _record(self, item: Item, answer: Answer) -> VIEScore2Record:
        read = read_answer(answer, self.fields, self.grid_size)
        return VIEScore2Record(id=item.id, prompt=item.prompt, fields=self.fields.key, grid_size=self.grid_size,
                               text=answer.text, finish_reason=answer.finish_reason, num_tokens=answer.num_tokens,
                               num_conditioning=len(item.conditioning), image=item.image, **read)

    def manifest(self) -> dict[str, Any]:
        """What produced the records: judge, configuration, instructions, grammar, decoding, version."""
        from vlmjudge import __version__
        grammar = self.constraint.spec if self.constraint else None
        return {"method": "viescore2", **self.judge.manifest(), "fields": self.fields.key,
                "grid_size": self.grid_size, "max_rows": self.bounds.max_rows, "max_cols": self.bounds.max_cols,
                "pack_version": self.pack.version, "pack_sha256": self.pack.sha256,
                "constraint": "ebnf" if grammar else None,
                "grammar_sha256": hashlib.sha256(grammar.encode()).hexdigest() if grammar else None,
                "decoding": self.decoding.to_json(), "overall": "score, else sqrt(pq * sc)",
                "library_version": __version__}
