"""`regeneration compare`'s result: two folders paired by file stem, one row per pair, a summary.

Names say what they hold. Per pair, `mllm_content_rating` and `mllm_perceptual_rating` are the
MLLM's 1-5 ratings as answered, and `mllm_content` / `mllm_perceptual` the same ratings on 0..1,
(r - 1) / 4; the summary's `mllm_content` / `mllm_perceptual` are means of the 0..1 values, so a
name means one thing wherever it appears. Files without a partner of the same stem are not
dropped silently: they are listed by name (`unpaired_files`) and counted (`summary.unpaired`).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from vlmjudge.cli.intake import is_listed_image
from vlmjudge.cli.resume import done_in_records
from vlmjudge.outputs import with_resolution_note
from vlmjudge.stats.interval import interval_text, mean_with_interval
from vlmjudge.text import format_score

from ..scoring import summarize_ratings

#: Per-pair columns, in the order of the CSV and of the JSON rows.
SIMILARITY_COLUMNS = ("score", "clip", "dino")
RATING_COLUMNS = ("mllm_content_rating", "mllm_perceptual_rating", "mllm_content", "mllm_perceptual")


@dataclass
class Pairing:
    """The pairs two folders share by file stem, and the files of each folder with no partner."""

    pairs: list[tuple[str, Path, Path]]
    references_only: list[Path] = field(default_factory=list)
    generated_only: list[Path] = field(default_factory=list)

    @property
    def unpaired(self) -> int:
        return len(self.references_only) + len(self.generated_only)

    def unpaired_files(self) -> dict[str, list[str]]:
        """The unpaired file names of each side (names, not paths: the folders are given)."""
        return {"references_only": [p.name for p in self.references_only],
                "generated_only": [p.name for p in self.generated_only]}

    def describe_unpaired(self) -> str:
        """One line naming every unpaired file, e.g. for standard error."""
        parts = []
        if self.references_only:
            parts.append("no generated image for " + ", ".join(p.name for p in self.references_only))
        if self.generated_only:
            parts.append("no reference for " + ", ".join(p.name for p in self.generated_only))
        return f"unpaired: {self.unpaired} file(s) left out ({'; '.join(parts)})"


def _images_by_stem(folder: Path) -> dict[str, Path]:
    """The image files directly in `folder`, by stem; a file or a missing path names what compare
    takes, and two images of one stem (`x.jpg` beside `x.png`) are refused, naming them: pairing
    by stem would keep one and drop the other without a word."""
    if folder.is_file():
        raise ValueError(f"{folder} is a file; compare takes two folders of images paired by file name")
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder {folder}")
    by_stem: dict[str, list[Path]] = {}
    for path in sorted(folder.iterdir()):
        if is_listed_image(path):
            by_stem.setdefault(path.stem, []).append(path)
    shared = [paths for paths in by_stem.values() if len(paths) > 1]
    if shared:
        shown = "; ".join(" and ".join(p.name for p in paths) for paths in shared[:3])
        more = f" (and {len(shared) - 3} more stems)" if len(shared) > 3 else ""
        raise ValueError(f"{folder} holds images that share a file stem: {shown}{more}; compare pairs images by "
                         "stem, so rename or remove one of each")
    return {stem: paths[0] for stem, paths in by_stem.items()}


def pair_folders(refs: Path, gens: Path) -> Pairing:
    """Pair the image files of two folders by stem; ValueError when they share none."""
    r, g = _images_by_stem(Path(refs)), _images_by_stem(Path(gens))
    common = sorted(set(r) & set(g))
    if not common:
        raise ValueError(f"no file stems shared by {refs} and {gens}")
    return Pairing(pairs=[(stem, r[stem], g[stem]) for stem in common],
                   references_only=[r[s] for s in sorted(set(r) - set(g))],
                   generated_only=[g[s] for s in sorted(set(g) - set(r))])


def pair_row(name: str, record: Any, resolution_note: str | None = None) -> dict[str, Any]:
    """One pair's row in the shared layout: its id (the reference's file name), status and score, then
    CLIP and DINO and the MLLM ratings raw (1-5) and on 0..1 (None without a judge)."""
    m = record.mllm
    row = {"id": name, "status": record.status, **{k: getattr(record, k) for k in SIMILARITY_COLUMNS},
           "mllm_content_rating": m.content if m else None, "mllm_perceptual_rating": m.perceptual if m else None,
           "mllm_content": m.content_norm if m else None, "mllm_perceptual": m.perceptual_norm if m else None}
    return with_resolution_note(row, resolution_note)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def summarize(rows: Sequence[dict[str, Any]], records: Sequence[Any], pairing: Pairing, skipped: int,
              judged: bool) -> dict[str, Any]:
    """Means over the scored pairs, what was left out (unreadable pairs, unpaired files), the
    MLLM means (0..1) and parse failures when a judge rated the pairs."""
    summary: dict[str, Any] = {"pairs": len(rows), **{k: _mean([r[k] for r in rows]) for k in SIMILARITY_COLUMNS},
                               "skipped": skipped, "unpaired": pairing.unpaired}
    if judged:
        summary.update(summarize_ratings([rec.mllm for rec in records]))
    return summary


def result_json(summary: dict[str, Any], rows: Sequence[dict[str, Any]], pairing: Pairing) -> dict[str, Any]:
    """What --json prints: the summary, every pair row and the unpaired files."""
    return {"summary": summary, "pairs": list(rows), "unpaired_files": pairing.unpaired_files()}


def plain_lines(rows: Sequence[dict[str, Any]], summary: dict[str, Any], judged: bool) -> list[str]:
    """The plain output: one line per pair and a mean line, every metric (MLLM ratings with a judge)
    with its 95% interval and n (pairs without a value are left out, as the summary's means leave them)."""
    lines = []
    for r in rows:
        line = f"{r['id']}\tscore {format_score(r['score'])}\tCLIP {format_score(r['clip'])}\tDINO {format_score(r['dino'])}"
        if judged:
            line += "".join(f"\t{label} {_rating(r[f'mllm_{name}_rating'], r[f'mllm_{name}'])}"
                            for label, name in (("MLLM content", "content"), ("MLLM perceptual", "perceptual")))
        lines.append(line)
    mean = (f"mean over {summary['pairs']} pairs: score {_with_interval(rows, 'score')} "
            f"CLIP {_with_interval(rows, 'clip')} DINO {_with_interval(rows, 'dino')}")
    if judged:
        mean += (f" MLLM (0..1) content {_with_interval(rows, 'mllm_content')} perceptual "
                 f"{_with_interval(rows, 'mllm_perceptual')}, "
                 f"{summary['mllm_parse_failures']} MLLM parse failures")
    left_out = [f"{summary[k]} {what}" for k, what in (("skipped", "unreadable pair(s)"),
                                                        ("unpaired", "unpaired file(s)")) if summary[k]]
    if left_out:
        mean += f"; left out: {', '.join(left_out)}"
    return [*lines, mean]


def _with_interval(rows: Sequence[dict[str, Any]], key: str) -> str:
    """A column's mean over the rows that hold a value, with its 95% interval and n."""
    return interval_text(mean_with_interval(r[key] for r in rows))


def _rating(raw: int | None, normalised: float | None) -> str:
    return "unreadable" if raw is None else f"{raw}/5 ({format_score(normalised)})"


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Per-pair rows; the resolution_note column only when some pair was flagged."""
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, restval="")
        writer.writeheader()
        writer.writerows(rows)


def rated_earlier(csv_path: Path | None, stems: Sequence[str]) -> int:
    """How many of these pairs an earlier run's --csv holds with both MLLM ratings (a run without
    --out): a rerun with the same --cache finds their answers there."""
    rows: list[dict[str, Any]] = []
    if csv_path is not None and Path(csv_path).is_file():
        with open(csv_path, newline="", encoding="utf-8") as fh:
            rows = [{k: (v if v != "" else None) for k, v in row.items()} for row in csv.DictReader(fh)]
    return done_in_records(rows, stems, "id",
                           lambda r: r.get("mllm_content") is not None and r.get("mllm_perceptual") is not None)


#: Why an MLLM rating is missing when the judge itself failed (regeneration.parsing.parse_answer's words).
_BACKEND_ERROR = "backend error"


def judge_failed(record: Any) -> bool:
    """True when a pair asked for MLLM ratings got no answer at all: the judge failed, not the parse."""
    mllm = record.mllm
    return (mllm is not None and mllm.content is None and mllm.perceptual is None and bool(mllm.failures)
            and all(_BACKEND_ERROR in f.reason for f in mllm.failures))
