"""Evaluation instructions: one builder for every field configuration, and packs that override the text.

An instruction tells the judge which fields to write (paper, Sec. 3.1): an overall score or
PQ + SC; no grid, one defect grid or separate ``artifact``/``misalign`` grids; with or without
``!`` coverage marks; on an N x N grid. Conditioning images come first in the request and
the generated image last; the text says so.

A fine-tuned VIEScore2 checkpoint expects the exact instruction it was trained with: give it
as ``pack=`` (one template, a template per configuration, a JSON file, or a callable).
Templates name the per-item values ``{prompt}``, ``{n}``, ``{num_conditioning}`` and
``{images}`` (a sentence on the image order); every other brace is kept as written.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any, Callable, Mapping, Union

from .grid import DEFAULT_N, MAX_N

SCORE_MODES = ("none", "overall", "pq_sc")
GRID_MODES = ("none", "single", "split")
_SCORE_TOKENS = {"overall": "overall", "score": "overall", "pq_sc": "pq_sc", "pq+sc": "pq_sc"}
_GRID_TOKENS = {"grid": "single", "single": "single", "split": "split", "categories": "split"}
PLACEHOLDERS = ("prompt", "n", "num_conditioning", "images")
_PLACEHOLDER_RE = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


@dataclass(frozen=True)
class Fields:
    """Which output fields a judge is asked for: score mode, grid mode, coverage marks.

    Examples:
        >>> fields = Fields.parse("pq_sc+split+marks")
        >>> fields, fields.score_keys
        (Fields(scores='pq_sc', grid='split', marks=True), ('pq', 'sc'))
        >>> Fields.parse({"scores": "overall", "grid": "single"}).key
        'overall+grid'
        >>> Fields.parse("overall+marks")
        Traceback (most recent call last):
        ...
        ValueError: coverage marks need a grid
    """

    scores: str = "pq_sc"
    grid: str = "split"
    marks: bool = False

    def __post_init__(self) -> None:
        if self.scores not in SCORE_MODES:
            raise ValueError(f"scores must be one of {SCORE_MODES}, got {self.scores!r}")
        if self.grid not in GRID_MODES:
            raise ValueError(f"grid must be one of {GRID_MODES}, got {self.grid!r}")
        if self.scores == "none" and self.grid == "none":
            raise ValueError("a configuration needs scores, a grid, or both")
        if self.marks and self.grid == "none":
            raise ValueError("coverage marks need a grid")

    @classmethod
    def parse(cls, spec: "FieldsLike") -> "Fields":
        """From a Fields, a mapping of its keywords, or a key like ``"pq_sc+split+marks"``."""
        if isinstance(spec, Fields):
            return spec
        if isinstance(spec, Mapping):
            return cls(**spec)
        if not isinstance(spec, str) or not spec.strip():
            raise TypeError(f"fields must be a Fields, a mapping or a key such as 'pq_sc+split', got {spec!r}")
        scores, grid, marks = "none", "none", False
        for token in (t.strip().lower() for t in spec.split("+")):
            if token in _SCORE_TOKENS and scores == "none":
                scores = _SCORE_TOKENS[token]
            elif token in _GRID_TOKENS and grid == "none":
                grid = _GRID_TOKENS[token]
            elif token == "marks" and not marks:
                marks = True
            else:
                raise ValueError(f"bad fields key {spec!r}: unexpected or repeated {token!r}; use one of "
                                 "overall|pq_sc, one of grid|split, and optionally marks, joined by '+'")
        return cls(scores, grid, marks)

    @property
    def key(self) -> str:
        """Canonical name, e.g. ``pq_sc+split+marks`` (the inverse of `parse`)."""
        parts = [] if self.scores == "none" else [self.scores]
        parts += [] if self.grid == "none" else ["grid" if self.grid == "single" else "split"]
        return "+".join(parts + (["marks"] if self.marks else []))

    @property
    def score_keys(self) -> tuple[str, ...]:
        """The score lines requested, in output order."""
        return {"none": (), "overall": ("score",), "pq_sc": ("pq", "sc")}[self.scores]


FieldsLike = Union[Fields, str, Mapping[str, Any]]


def all_fields() -> list[Fields]:
    """Every valid configuration (14): scores x grid x marks.

    Examples:
        >>> [f.key for f in all_fields()][:4], len(all_fields())
        (['grid', 'grid+marks', 'split', 'split+marks'], 14)
    """
    out = []
    for scores, grid, marks in product(SCORE_MODES, GRID_MODES, (False, True)):
        try:
            out.append(Fields(scores, grid, marks))
        except ValueError:
            continue  # an impossible combination (nothing requested, or marks without a grid)
    return out


# -- the default text ---------------------------------------------------------------------

_INTRO = ("You are an expert evaluator of AI-generated images. {images}\n"
          "Prompt: \"{prompt}\"\n")
_SCORE_TEXT = {
    "overall": ("Rate the generated image from 0 (worst) to 10 (best), judging together how well it follows "
                "the prompt and any conditioning images and how free it is of visual flaws."),
    "pq_sc": ("Give two ratings from 0 (worst) to 10 (best). PQ, perceptual quality: how natural and free of "
              "visual flaws the image is (distorted anatomy or objects, broken structure, smeared texture, "
              "garbled text), whatever the prompt asks. SC, semantic consistency: how faithfully the image "
              "follows the prompt and any conditioning images."),
}
_SCORE_FORMAT = {"overall": "score: <0-10>/10", "pq_sc": "pq: <0-10>/10\nsc: <0-10>/10"}
_GRID_TEXT = ("Lay a {n} x {n} grid over the generated image: rows 1 to {n} run from top to bottom, columns "
              "1 to {n} from left to right. A defect cell is a cell that contains part of a defect.")
_SINGLE_TEXT = ("List the defect cells, one line per row that has any, as r<row>: <column>,<column>,... "
                "with rows in increasing order, columns in increasing order within a row, and rows without "
                "defects left out. A defect is a visual artifact or a place where the image contradicts the "
                "prompt. If the image has no defect, write the single line none.")
_SPLIT_TEXT = ("Report two kinds of defect separately. Under a line artifact:, list the cells with visual "
               "artifacts; under a line misalign:, list the cells where the image contradicts the prompt or "
               "the conditioning images (wrong, missing or extra content). In each section write one line per "
               "row that has any such cell, as r<row>: <column>,<column>,... with rows in increasing order, "
               "columns in increasing order within a row, and other rows left out; write none when the "
               "section has no cell. Always write both sections.")
_MARKS_TEXT = "Put ! right after a column when the defect covers nearly all of that cell."
_NO_MARKS_TEXT = "Write column numbers only, without any other marks."


def _format_block(fields: Fields) -> str:
    lines = [_SCORE_FORMAT[fields.scores]] if fields.scores != "none" else []
    row = "r<row>: <column>,<column>,..."
    if fields.grid == "single":
        lines.append(f"{row}   (or: none)")
    elif fields.grid == "split":
        lines += ["artifact:", f"{row}   (or: none)", "misalign:", f"{row}   (or: none)"]
    return "\n".join(lines)


def _example(fields: Fields) -> str:
    lines = {"none": [], "overall": ["score: 6/10"], "pq_sc": ["pq: 7/10", "sc: 4/10"]}[fields.scores]
    mark = "!" if fields.marks else ""
    if fields.grid == "single":
        lines += [f"r3: 5,6{mark}", "r4: 6"]
    elif fields.grid == "split":
        lines += ["artifact:", f"r3: 5,6{mark}", "r4: 6", "misalign:", "none"]
    return "\n".join(lines)


def default_template(fields: FieldsLike) -> str:
    """The built-in instruction template for one configuration (placeholders unfilled).

    Examples:
        >>> template = default_template("overall")
        >>> "{prompt}" in template and "{images}" in template
        True
    """
    fields = Fields.parse(fields)
    parts = [_INTRO]
    if fields.scores != "none":
        parts.append(_SCORE_TEXT[fields.scores])
    if fields.grid != "none":
        parts.append(_GRID_TEXT)
        parts.append(_SINGLE_TEXT if fields.grid == "single" else _SPLIT_TEXT)
        parts.append(_MARKS_TEXT if fields.marks else _NO_MARKS_TEXT)
    parts.append("Answer in exactly this format and write nothing else:\n" + _format_block(fields))
    parts.append("For example:\n" + _example(fields))
    return "\n\n".join(p.strip() for p in parts)


def images_sentence(num_conditioning: int) -> str:
    """How the request's images are ordered: conditioning images first, the generated image last.

    Examples:
        >>> images_sentence(0)
        'The image is the generated image to evaluate.'
        >>> images_sentence(2).startswith("The first 2 images are conditioning inputs")
        True
    """
    if num_conditioning < 0:
        raise ValueError(f"num_conditioning must be >= 0, got {num_conditioning}")
    if num_conditioning == 0:
        return "The image is the generated image to evaluate."
    first = "The first image is a conditioning input" if num_conditioning == 1 else \
        f"The first {num_conditioning} images are conditioning inputs"
    return (f"{first} (a source image to edit or a reference given to the generator); the last image is the "
            "generated image to evaluate.")


# -- packs ------------------------------------------------------------------------------------

TemplateFn = Callable[..., str]


@dataclass(frozen=True)
class InstructionPack:
    """Instruction templates by configuration key (``"*"`` for any), plus an optional system text.

    ``templates=None`` means the built-in text. A callable template is called with
    ``fields=, prompt=, n=, num_conditioning=`` and returns the whole instruction.

    Examples:
        A pack holds templates by configuration key ("*" for any):

        >>> pack = InstructionPack(version="mine-1", templates={"overall": "Rate this image of {prompt} from 0 to 10."})
        >>> pack.render("overall", "a red cup")
        'Rate this image of a red cup from 0 to 10.'
        >>> pack.render("pq_sc", "a red cup")
        Traceback (most recent call last):
        ...
        KeyError: "instruction pack 'mine-1' has no template for 'pq_sc'; it has ['overall']"
    """

    # -2: the release's reading, ground-truth rasterisation and evaluation rules became the defaults (issue 18)
    version: str = "viescore2-default-2"
    templates: Mapping[str, str] | TemplateFn | None = None
    system: str | None = None
    _sha: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.templates, Mapping):
            normal = {}
            for key, text in self.templates.items():
                name = key if key == "*" else Fields.parse(key).key
                if not isinstance(text, str) or "{prompt}" not in text:
                    raise ValueError(f"instruction template for {key!r} must be a string containing '{{prompt}}'")
                normal[name] = text
            object.__setattr__(self, "templates", normal)
        elif self.templates is not None and not callable(self.templates):
            raise TypeError("templates must be a mapping of templates, a callable, or None")
        body = (self.templates if isinstance(self.templates, Mapping) else
                "builtin" if self.templates is None else getattr(self.templates, "__qualname__", "callable"))
        blob = json.dumps({"version": self.version, "templates": body, "system": self.system}, sort_keys=True)
        object.__setattr__(self, "_sha", hashlib.sha256(blob.encode()).hexdigest())

    @property
    def sha256(self) -> str:
        """Digest of the pack's text (a callable counts by its name only), for run manifests."""
        return self._sha

    def template(self, fields: FieldsLike) -> str:
        """The template for a configuration; a clear error when the pack has none for it."""
        fields = Fields.parse(fields)
        if self.templates is None:
            return default_template(fields)
        if not isinstance(self.templates, Mapping):
            raise TypeError("a callable pack has no templates; call render()")
        if fields.key in self.templates:
            return self.templates[fields.key]
        if "*" in self.templates:
            return self.templates["*"]
        raise KeyError(f"instruction pack {self.version!r} has no template for {fields.key!r}; "
                       f"it has {sorted(self.templates)}")

    def render(self, fields: FieldsLike, prompt: str, n: int = DEFAULT_N, num_conditioning: int = 0) -> str:
        """The instruction for one item."""
        fields = Fields.parse(fields)
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a string, got {type(prompt).__name__}")
        if not isinstance(n, int) or not 1 <= n <= MAX_N:
            raise ValueError(f"grid size n must be an integer in 1..{MAX_N}, got {n!r}")
        if callable(self.templates) and not isinstance(self.templates, Mapping):
            text = self.templates(fields=fields, prompt=prompt, n=n, num_conditioning=num_conditioning)
        else:
            values = {"prompt": prompt, "n": str(n), "num_conditioning": str(num_conditioning),
                      "images": images_sentence(num_conditioning)}
            # one pass, so a prompt that itself contains "{n}" is never substituted again
            text = _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], self.template(fields))
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"instruction pack {self.version!r} gave an empty instruction for {fields.key!r}")
        return text


PackLike = Union[InstructionPack, str, os.PathLike, Mapping[str, Any], TemplateFn, None]


def load_pack(pack: PackLike = None) -> InstructionPack:
    """An InstructionPack from: None (built-in), a pack, a template string (any configuration),
    a JSON file ``{"version", "templates": {key: text}, "system"}``, such a mapping, or a callable.

    Examples:
        >>> load_pack().version, load_pack("Judge {prompt} on a {n} x {n} grid.").render("grid", "a cup", n=8)
        ('viescore2-default-2', 'Judge a cup on a 8 x 8 grid.')
    """
    if pack is None:
        return InstructionPack()
    if isinstance(pack, InstructionPack):
        return pack
    if isinstance(pack, os.PathLike) or (isinstance(pack, str) and pack.endswith(".json") and "{prompt}" not in pack):
        path = Path(pack)
        if not path.is_file():
            raise FileNotFoundError(f"instruction pack file not found: {path}")
        return load_pack(json.loads(path.read_text(encoding="utf-8")))
    if isinstance(pack, str):
        return InstructionPack(version="custom", templates={"*": pack})
    if isinstance(pack, Mapping):
        unknown = set(pack) - {"version", "templates", "system"}
        if unknown:
            raise ValueError(f"instruction pack mapping has unknown keys {sorted(unknown)}; "
                             "expected version, templates, system")
        if "templates" not in pack:
            raise ValueError("instruction pack mapping needs 'templates'")
        templates = pack["templates"]
        if isinstance(templates, str):
            templates = {"*": templates}
        return InstructionPack(version=str(pack.get("version", "custom")), templates=templates,
                               system=pack.get("system"))
    if callable(pack):
        return InstructionPack(version=getattr(pack, "__qualname__", "callable"), templates=pack)
    raise TypeError(f"pack must be None, an InstructionPack, a template string, a JSON path, a mapping or a "
                    f"callable, got {type(pack).__name__}")


def build_instruction(prompt: str, fields: FieldsLike = "pq_sc+split", n: int = DEFAULT_N,
                      num_conditioning: int = 0, pack: PackLike = None) -> str:
    """The instruction text for one item (the one entry point every face uses).

    Examples:
        >>> text = build_instruction("a red cup", "overall", n=8)
        >>> 'Prompt: "a red cup"' in text, text.startswith("You are an expert evaluator")
        (True, True)
    """
    return load_pack(pack).render(fields, prompt, n, num_conditioning)


def fields_for_supervision(scores: Mapping[str, Any], localization: Any, marks: bool = True) -> Fields:
    """The configuration matching an example's supervision: training requests only what it has.

    Examples:
        Training asks only for what an example supervises:

        >>> from viescore2.grid import Grid
        >>> fields_for_supervision({"pq": 7, "sc": 5}, None).key, fields_for_supervision({"score": 7}, Grid(n=4)).key
        ('pq_sc', 'overall+grid+marks')
    """
    from .grid import CategoryGrids, Grid
    keys = {k for k, v in scores.items() if v is not None}
    if keys == {"score"}:
        score_mode = "overall"
    elif keys == {"pq", "sc"}:
        score_mode = "pq_sc"
    elif not keys:
        score_mode = "none"
    else:
        raise ValueError(f"scores {sorted(keys)} match no configuration: give 'score', or 'pq' and 'sc'")
    grid_mode = ("split" if isinstance(localization, CategoryGrids) else
                 "single" if isinstance(localization, Grid) else "none")
    return Fields(score_mode, grid_mode, bool(marks) and grid_mode != "none")


def training_instruction(n: int = DEFAULT_N, pack: PackLike = None, marks: bool = True) -> Callable[[Any], str]:
    """An ``instruction`` for `viescore2.data.build_sft`/`build_grpo`: each annotation gets the
    instruction for exactly its supervision; pass the same ``marks`` to the builder.

    Examples:
        >>> from types import SimpleNamespace
        >>> from viescore2.grid import Grid
        >>> annotation = SimpleNamespace(scores={"score": 6.0}, localization=Grid(n=8), prompt="a red cup",
        ...                              conditioning=[])
        >>> 'Prompt: "a red cup"' in training_instruction(n=8)(annotation)
        True
    """
    resolved = load_pack(pack)

    def instruction(annotation: Any) -> str:
        fields = fields_for_supervision(annotation.scores, annotation.localization, marks)
        return resolved.render(fields, annotation.prompt, n, len(annotation.conditioning))

    return instruction


def pack_from_file(path: str | None) -> Any:
    """An instruction pack argument: a JSON pack file, or a text file holding one template."""
    if path is None:
        return None
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"instruction pack file not found: {path}")
    return file if file.suffix == ".json" else file.read_text(encoding="utf-8")
