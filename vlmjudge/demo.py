"""The Gradio app every metrics/<name>/app.py uses, driven by a method's `MethodSpec`.

The stock evaluate widget takes text only; judges need image uploads. The app builds one
input per column the method needs (images for image-like columns, text boxes for the
rest), scores the single item through `build(judge).score_batch`, and shows what the
method's `render` returns.
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

from .registry import MethodSpec, get_method

#: Columns shown as image uploads; every other input column is a text box.
IMAGE_COLUMNS = {"image", "images", "reference", "references", "conditioning", "generated"}


def _inputs_of(spec: MethodSpec) -> list[str]:
    return [*spec.inputs, *spec.optional_inputs]


def make_scorer_fn(spec: MethodSpec, scorer: Any) -> Callable[..., tuple]:
    """A function of the app's input values -> (score text, markdown, image or None)."""
    columns = _inputs_of(spec)

    def score(*values: Any) -> tuple:
        batch = {}
        for column, value in zip(columns, values):
            if value is None or value == "":
                if column in spec.inputs:
                    raise ValueError(f"please provide the {column}")
                continue
            batch[column] = [value]
        record = scorer.score_batch(batch)[0]
        shown = spec.render(record)
        return shown.get("score_text", ""), shown.get("markdown", ""), shown.get("image")

    return score


def unshadow(app_file: str) -> None:
    """Drop an app's own folder from `sys.path`.

    `python metrics/<name>/app.py` (and a Space) puts that folder first on the path, where the
    evaluate script `<name>.py` would shadow the `<name>` package the app scores with.
    """
    here = os.path.dirname(os.path.abspath(app_file))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]


def app_from_env(method: str | MethodSpec, **judge_kwargs: Any):
    """The app a metrics/<name>/app.py serves: the judge comes from the environment.

    VLMJUDGE_MODEL (a Hub id or local dir; default: the method's default model),
    VLMJUDGE_BACKEND (default transformers), VLMJUDGE_DEVICE, VLMJUDGE_DTYPE and
    VLMJUDGE_KEY_FIELDS (comma-separated, for replay) configure it; a Space sets them
    as variables.
    """
    env = {"device": os.environ.get("VLMJUDGE_DEVICE"), "dtype": os.environ.get("VLMJUDGE_DTYPE")}
    if os.environ.get("VLMJUDGE_KEY_FIELDS"):
        env["key_fields"] = tuple(os.environ["VLMJUDGE_KEY_FIELDS"].split(","))
    kwargs = {k: v for k, v in env.items() if v is not None}
    kwargs.update(judge_kwargs)
    return build_app(method, model=os.environ.get("VLMJUDGE_MODEL"),
                     backend=os.environ.get("VLMJUDGE_BACKEND", "transformers"), **kwargs)


def build_app(method: str | MethodSpec, judge: Any = None, *, model: str | None = None,
              backend: str = "transformers", title: str | None = None, **judge_kwargs: Any):
    """A `gr.Blocks` app for one method: upload, score, show the rendered record."""
    import gradio as gr

    spec = get_method(method) if isinstance(method, str) else method
    if judge is None:
        from .judge import load_judge
        judge = load_judge(model or spec.default_model, backend=backend, **judge_kwargs)
    scorer = spec.build(judge, **dict(spec.config))
    score = make_scorer_fn(spec, scorer)
    with gr.Blocks(title=title or spec.name) as app:
        gr.Markdown(f"# {title or spec.name}\n\n{spec.description}")
        with gr.Row():
            with gr.Column():
                widgets = [gr.Image(type="pil", label=c, elem_id=f"input-{c}") if c in IMAGE_COLUMNS
                           else gr.Textbox(label=c, elem_id=f"input-{c}") for c in _inputs_of(spec)]
                button = gr.Button("Score", elem_id="score-button", variant="primary")
            with gr.Column():
                score_box = gr.Textbox(label="Score", elem_id="score", interactive=False)
                details = gr.Markdown(elem_id="details")
                picture = gr.Image(label="Overlay", elem_id="overlay", interactive=False)
        button.click(score, inputs=widgets, outputs=[score_box, details, picture])
    return app
