"""What FAGER asks human annotators: for one prompt, which of two images (A or B, paired by file name)
shows the prompt's facts more faithfully, the human side of the paper's factual A/B test."""
from __future__ import annotations

from vlmjudge.annotation import AnnotationField, Option, pairwise_protocol

ANNOTATION = pairwise_protocol(
    "fager", {"A": "Image A", "B": "Image B"},
    "Read the prompt, then pick the image that depicts its facts (objects, counts, colours, shapes, relations, "
    "scene) more faithfully.",
    AnnotationField("choice", "choice", "More factual image", options=(Option("A", "Image A"), Option("B", "Image B"))),
)
