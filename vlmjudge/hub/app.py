"""The Gradio app every metrics/<name>/app.py uses, driven by a method's `MethodSpec`.

The stock evaluate widget takes text only; judges need image uploads. The app builds one
labelled input per column the method needs (images for image-like columns, text boxes for the
rest), scores the single item through `build(judge).score_batch`, and shows what the
method's `render` returns. Title and description come from the metric card, so the Space
reads as the card does; every output has a label and an elem_id, so the API names what it returns.
"""
from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..faces.loading import DEFAULT_BACKEND, judge_or_load, resolve_model
from ..offline import ModelUnavailableError, unavailable_reason
from ..registry import MethodSpec, get_method
from .gradio_setup import import_gradio

#: Columns shown as image uploads; every other input column is a text box.
IMAGE_COLUMNS = {"image", "images", "reference", "references", "conditioning", "generated"}

#: Columns the app leaves out: an item id only names records within a batch run.
HIDDEN_COLUMNS = {"id"}

#: Column -> (label, what to give), for columns whose app.py says nothing more specific.
INPUT_HELP: dict[str, tuple[str, str]] = {
    "image": ("Image to judge", "The generated image to score (PNG or JPEG)."),
    "prompt": ("Prompt", "The text prompt the image was generated from."),
    "conditioning": ("Conditioning image (optional)", "For an edit: the source image the edit started from."),
    "references": ("Reference image (optional)", "A real photo of the subject, to ground the judge's facts."),
    "reference": ("Reference image", "The original image the model was asked to paint again."),
    "generated": ("Regenerated image", "The model's attempt at painting the reference again."),
}

#: Shown in the details panel before the first score, so no panel starts empty.
WAITING_TEXT = "Upload the inputs and press **Score**."
WAITING_TEXT_WITH_EXAMPLES = "Upload the inputs (or pick an example below) and press **Score**."


def _inputs_of(spec: MethodSpec) -> list[str]:
    return [*spec.inputs, *spec.optional_inputs]


def shown_columns(spec: MethodSpec) -> list[str]:
    """The input columns the app shows, in the spec's order (required first)."""
    return [c for c in _inputs_of(spec) if c not in HIDDEN_COLUMNS]


def make_scorer_fn(spec: MethodSpec, scorer: Any, columns: Sequence[str] | None = None) -> Callable[..., tuple]:
    """A function of the app's input values (one per column of `columns`, default every input
    column) -> (score text, markdown, image or None). Its parameters are named by column, so the
    app's API names its inputs."""
    columns = list(_inputs_of(spec) if columns is None else columns)

    def score(*values: Any) -> tuple:
        batch = {}
        for column, value in zip(columns, values):
            if value is None or value == "":
                if column in spec.inputs:
                    raise ValueError(f"please provide the {INPUT_HELP.get(column, (column,))[0].lower()} ({column})")
                continue
            batch[column] = [value]
        record = scorer.score_batch(batch)[0]
        shown = spec.render(record)
        return shown.get("score_text", ""), shown.get("markdown", ""), shown.get("image")

    score.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(c, inspect.Parameter.POSITIONAL_OR_KEYWORD) for c in columns])
    return score


def unshadow(app_file: str) -> None:
    """Drop an app's own folder from `sys.path`.

    `python metrics/<name>/app.py` (and a Space) puts that folder first on the path, where the
    evaluate script `<name>.py` would shadow the `<name>` package the app scores with.
    """
    here = os.path.dirname(os.path.abspath(app_file))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]


def card_header(card: str | os.PathLike) -> tuple[str, str]:
    """(title, description) of a metric card: its YAML `title` and `description`; a card without a
    description gives the first paragraph of its body instead."""
    from huggingface_hub.repocard import metadata_load

    card = Path(card)
    meta = metadata_load(card) or {}
    title = str(meta.get("title") or card.parent.name)
    description = str(meta.get("description") or "").strip()
    if not description:
        text = card.read_text(encoding="utf-8")
        body = text.split("---", 2)[2] if text.startswith("---") else text
        paragraphs = [p.strip() for p in body.split("\n\n") if p.strip() and not p.lstrip().startswith("#")]
        description = " ".join(paragraphs[0].split()) if paragraphs else ""
    return title, description


def check_model(model: str | None, backend: str) -> None:
    """Raise ModelUnavailableError, in one line, when the app's judge checkpoint cannot load."""
    if backend != "transformers" or not isinstance(model, str):
        return
    reason = unavailable_reason(model)
    if reason is not None:
        raise ModelUnavailableError(
            f"judge model {model!r} is {reason}: set VLMJUDGE_MODEL to a local folder or a cached Hub id "
            "(`python -m vlmjudge.testing qwen3_vl DIR` builds a tiny offline one)")


def app_from_env(method: str | MethodSpec, *, card: str | os.PathLike | None = None,
                 inputs_help: Mapping[str, tuple[str, str]] | None = None, image_output: str | None = None,
                 examples: Sequence[Sequence[Any]] | None = None, **judge_kwargs: Any):
    """The app a metrics/<name>/app.py serves: the judge comes from the environment.

    The judge arguments every face takes come from VLMJUDGE_<NAME>: VLMJUDGE_MODEL (a Hub id or
    local dir; default: the method's default model), VLMJUDGE_BACKEND (default transformers),
    VLMJUDGE_REVISION, VLMJUDGE_DEVICE, VLMJUDGE_DTYPE, VLMJUDGE_CACHE, plus VLMJUDGE_KEY_FIELDS
    (comma-separated, for replay); a Space sets them as variables. A transformers checkpoint
    that cannot load raises ModelUnavailableError at once.
    """
    env = {name: os.environ.get(f"VLMJUDGE_{name.upper()}") for name in ("revision", "device", "dtype", "cache")}
    if os.environ.get("VLMJUDGE_KEY_FIELDS"):
        env["key_fields"] = tuple(os.environ["VLMJUDGE_KEY_FIELDS"].split(","))
    kwargs = {k: v for k, v in env.items() if v is not None}
    kwargs.update(judge_kwargs)
    spec = get_method(method) if isinstance(method, str) else method
    model = resolve_model(os.environ.get("VLMJUDGE_MODEL") or None, spec.default_model, spec.name)
    backend = os.environ.get("VLMJUDGE_BACKEND") or DEFAULT_BACKEND
    check_model(model, backend)
    return build_app(spec, model=model, backend=backend, card=card, inputs_help=inputs_help,
                     image_output=image_output, examples=examples, **kwargs)


def example_rows(folders: Path | Sequence[Path], examples: Sequence[Sequence[Any]]) -> list[list[Any]]:
    """Example rows with each "examples/..." value made a path under the first of `folders` that has
    the file; a row naming a file none has is left out, so the app still starts."""
    bases = [Path(folders)] if isinstance(folders, (str, os.PathLike)) else [Path(f) for f in folders]

    def resolve(value: Any) -> Any:
        if not (isinstance(value, str) and value.startswith("examples/")):
            return value
        return next((str(base / value) for base in bases if (base / value).is_file()), None)

    rows = [[resolve(v) for v in row] for row in examples]
    return [row for row, given in zip(rows, examples) if all(r is not None or g is None for r, g in zip(row, given))]


def _example_folders(folder: Path) -> list[Path]:
    """Where an app's examples/ may be: beside it, then in the installed metric modules (a staged Space
    carries app.py and the vlmjudge wheel, which holds metrics/<name>/examples/)."""
    from .folders import default_metrics_dir

    installed = default_metrics_dir() / folder.name
    return [folder] if installed.resolve() == folder else [folder, installed]


def space(app_file: str, method: str | MethodSpec, *, examples: Sequence[Sequence[Any]] = (),
          judge: Any = None, **app_kwargs: Any):
    """The app of a metrics/<name>/app.py: the card beside it gives title and description, example
    rows name files under its examples/ folder, and a model that cannot load ends the process with
    its one-line reason instead of a traceback."""
    folder = Path(app_file).resolve().parent
    card = folder / "README.md"
    kwargs = {"card": card if card.is_file() else None,
              "examples": example_rows(_example_folders(folder), examples) or None,
              **app_kwargs}
    try:
        if judge is not None:
            return build_app(method, judge, **kwargs)
        return app_from_env(method, **kwargs)
    except ModelUnavailableError as exc:
        raise SystemExit(f"{folder.name} Space cannot start: {exc}") from None


def _input_widget(gr: Any, column: str, label: str, info: str) -> Any:
    if column in IMAGE_COLUMNS:
        return gr.Image(type="pil", label=label, elem_id=f"input-{column}", placeholder=info or None, height=280)
    lines = (1, 2) if column == "prompt" else (2, 6)  # a pasted QA set scrolls instead of growing the page
    return gr.Textbox(label=label, info=info or None, elem_id=f"input-{column}", lines=lines[0], max_lines=lines[1])


def build_app(method: str | MethodSpec, judge: Any = None, *, model: str | None = None,
              backend: str | None = None, title: str | None = None, description: str | None = None,
              card: str | os.PathLike | None = None, inputs_help: Mapping[str, tuple[str, str]] | None = None,
              image_output: str | None = None, examples: Sequence[Sequence[Any]] | None = None,
              **judge_kwargs: Any):
    """A `gr.Blocks` app for one method: upload, score, show the rendered record.

    `card` (a metric card) gives the title and description unless they are passed; `inputs_help`
    overrides the (label, info) of input columns; `image_output` labels the image panel, which only
    a method with an image output has (None: no image panel); `examples` are rows of input values,
    one per shown column. Without a judge, one is loaded from `model` (default: the method's default
    model), `backend` and `judge_kwargs` (revision, device, dtype, cache, backend options), as every
    face loads it (`vlmjudge.faces.judge_or_load`).
    """
    gr = import_gradio()
    spec = get_method(method) if isinstance(method, str) else method
    judge = judge_or_load(judge, spec.default_model, model=model, backend=backend,
                          judge_kwargs=judge_kwargs, where=spec.name)
    card_title, card_text = card_header(card) if card else (spec.name, spec.description)
    title, description = title or card_title, description or card_text
    scorer = spec.build(judge, **dict(spec.config))
    columns = shown_columns(spec)
    score = make_scorer_fn(spec, scorer, columns)
    helps = {**INPUT_HELP, **(inputs_help or {})}

    def run(*values: Any) -> tuple:
        try:
            score_text, markdown, picture = score(*values)
        except ValueError as exc:  # a missing or unreadable input: said in the page, not as a stack
            raise gr.Error(str(exc)) from exc
        if image_output is None:
            return score_text, markdown
        return score_text, markdown, gr.update(value=picture, visible=picture is not None)

    run.__signature__ = score.__signature__  # type: ignore[attr-defined]
    with gr.Blocks(title=title) as app:
        gr.Markdown(f"# {title}\n\n{description}", elem_id="title")
        with gr.Row():
            with gr.Column():
                widgets = [_input_widget(gr, c, *helps.get(c, (c.replace("_", " ").capitalize(), "")))
                           for c in columns]
                button = gr.Button("Score", elem_id="score-button", variant="primary")
            with gr.Column():
                waiting = WAITING_TEXT_WITH_EXAMPLES if examples else WAITING_TEXT
                outputs = [gr.Textbox(label="Score", elem_id="score", interactive=False),
                           gr.Markdown(waiting, label="Details", elem_id="details", line_breaks=True,
                                       container=True, padding=True)]
                if image_output is not None:
                    outputs.append(gr.Image(label=image_output, elem_id="overlay", interactive=False, visible=False,
                                            height=320))
        if examples:
            gr.Examples(examples=[list(row) for row in examples], inputs=widgets, label="Examples",
                        elem_id="examples", cache_examples=False)
        button.click(run, inputs=widgets, outputs=outputs, api_name="score")
    return app
