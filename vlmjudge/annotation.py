"""What a method asks human annotators, as data: the fields of its paper's labelling protocol.

Each method declares an `AnnotationProtocol` (found as `MethodSpec.annotation`) so that one app
(`vlmjudge.hub.annotate`) can collect labels for every method, and so that the label a submit
produces (`make_label`: one JSON object, the fields checked against their kinds and ranges) is
the same whichever face wrote it.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, Mapping

#: What a field asks: a yes/no box, a 1..n rating (radio), a slider, one of several options,
#: a checklist whose ticked options each take a level, or defect cells painted on a grid.
FieldKind = Literal["flag", "rating", "slider", "choice", "checklist", "grid"]


@dataclass(frozen=True)
class Option:
    """One answer of a choice or checklist: the value stored, the label shown, an optional hint
    (shown under a checklist box) and group (checklist options are shown under group headings)."""

    value: str
    label: str
    hint: str = ""
    group: str = ""


@dataclass(frozen=True)
class AnnotationField:
    """One label field. `low`/`high`/`step` bound ratings and sliders (`default`: a slider's start);
    `options` are a choice's answers or a checklist's boxes, `levels` what each ticked box takes
    (stored as `{"type": option, "severity": level}`); `n` is a grid's side (cells stored as
    1-based [row, column]). With `only_if` naming a flag, the field is asked and stored only while
    that flag is ticked (null otherwise)."""

    name: str
    kind: FieldKind
    label: str
    info: str = ""
    low: float = 0
    high: float = 10
    step: float = 1
    default: Any = None
    options: tuple[Option, ...] = ()
    levels: tuple[str, ...] = ()
    n: int = 16
    only_if: str | None = None


@dataclass(frozen=True)
class AnnotationProtocol:
    """What a method asks annotators: the images shown per item (`views`: one folder each, in
    order; `view_labels` their captions), the fields, and instructions shown above them."""

    method: str
    fields: tuple[AnnotationField, ...]
    views: tuple[str, ...] = ("image",)
    view_labels: tuple[str, ...] = ()
    instructions: str = ""

    def __post_init__(self) -> None:
        """Refuse a protocol whose labels could not be stored unambiguously."""
        names = [f.name for f in self.fields]
        flags = {f.name for f in self.fields if f.kind == "flag"}
        reserved = {"id", "annotator", "method", "timestamp", "images", "prompt"} & set(names)
        if reserved or len(set(names)) != len(names):
            raise ValueError(f"{self.method}: field names must be unique and not {sorted(reserved)}: {names}")
        for f in self.fields:
            if f.only_if is not None and f.only_if not in flags:
                raise ValueError(f"{self.method}: field {f.name!r} depends on {f.only_if!r}, which is no flag")
        if sum(f.kind == "grid" for f in self.fields) > 1:
            raise ValueError(f"{self.method}: one grid per protocol (it is painted on the first view)")

    def label_of(self, view: str) -> str:
        """The caption of a view's image."""
        labels = dict(zip(self.views, self.view_labels))
        return labels.get(view, view.replace("_", " ").capitalize())


def pairwise_protocol(method: str, views: Mapping[str, str], instructions: str,
                      field: AnnotationField) -> AnnotationProtocol:
    """A protocol that shows two images of one item side by side (`views`: folder -> caption, in
    order) and asks one question of the pair, the shape of a paper's A/B or similarity study.

    Examples:
        >>> protocol = pairwise_protocol("toy", {"left": "Left image", "right": "Right image"}, "Pick one.",
        ...                              AnnotationField("choice", "choice", "Better image",
        ...                                              options=(Option("left", "Left"), Option("right", "Right"))))
        >>> protocol.views, protocol.label_of("right"), [f.name for f in protocol.fields]
        (('left', 'right'), 'Right image', ['choice'])
    """
    if len(views) != 2:
        raise ValueError(f"{method}: a pairwise protocol shows two views, got {list(views)}")
    return AnnotationProtocol(method=method, fields=(field,), views=tuple(views), view_labels=tuple(views.values()),
                              instructions=instructions)


@dataclass(frozen=True)
class Item:
    """One thing to label: its id (the first view's path relative to the images root), the image
    path of each view (relative to the root) and the prompt, when one is known."""

    id: str
    images: Mapping[str, str]
    prompt: str | None = None


def check_value(field: AnnotationField, value: Any) -> Any:
    """A widget's value as stored, or ValueError saying what to fix (the page shows it)."""
    if field.kind == "flag":
        return bool(value)
    if field.kind in ("rating", "slider"):
        if value is None or value == "":
            raise ValueError(f"please give {field.label.lower()}")
        number = float(value)
        if not field.low <= number <= field.high:
            raise ValueError(f"{field.label} lies in {field.low:g}..{field.high:g}, got {number:g}")
        return int(number) if number == int(number) else number
    if field.kind == "choice":
        if value not in {o.value for o in field.options}:
            raise ValueError(f"please choose {field.label.lower()}")
        return value
    if field.kind == "checklist":  # value: [(option, ticked, level), ...]
        chosen = []
        for option, ticked, level in value:
            if not ticked:
                continue
            if level not in field.levels:
                raise ValueError(f"choose {' or '.join(field.levels)} for {option.label!r}")
            chosen.append({"type": option.value, "severity": level})
        return chosen
    if field.kind == "grid":
        cells = sorted({(int(r), int(c)) for r, c in value})
        if any(not (1 <= r <= field.n and 1 <= c <= field.n) for r, c in cells):
            raise ValueError(f"{field.label}: cells lie in 1..{field.n}, got {cells}")
        return [list(cell) for cell in cells]
    raise ValueError(f"unknown field kind {field.kind!r}")


def make_label(protocol: AnnotationProtocol, item: Item, annotator: str,
               values: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON line of one submit: id, annotator, method, every field (null where its `only_if`
    flag is off), the views' paths when there are several, the prompt when known, a UTC timestamp."""
    annotator = annotator.strip()
    if not annotator:
        raise ValueError("enter an annotator id first")
    label: dict[str, Any] = {"id": item.id, "annotator": annotator, "method": protocol.method}
    flags = {f.name: bool(values.get(f.name)) for f in protocol.fields if f.kind == "flag"}
    for f in protocol.fields:
        asked = f.only_if is None or flags[f.only_if]
        label[f.name] = check_value(f, values.get(f.name)) if asked else None
    if len(protocol.views) > 1:
        label["images"] = dict(item.images)
    if item.prompt is not None:
        label["prompt"] = item.prompt
    label["timestamp"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return label
