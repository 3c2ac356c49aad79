"""What Image Regeneration asks human annotators: how similar each regenerated image is to its
reference (paired by file stem), on the 1-5 scale the paper's MLLM ratings use."""
from __future__ import annotations

from vlmjudge.annotation import AnnotationField, AnnotationProtocol

ANNOTATION = AnnotationProtocol(
    method="regeneration",
    views=("reference", "regenerated"),
    view_labels=("Reference image", "Regenerated image"),
    instructions="Compare the regenerated image with its reference: content, objects and their attributes, "
                 "layout, style and colours.",
    fields=(
        AnnotationField("rating", "rating", "Similarity to the reference", low=1, high=5,
                        info="1: unrelated ... 5: the same picture in every respect that matters."),
    ),
)
