"""What Image Regeneration asks human annotators: how similar each regenerated image is to its
reference (paired by file stem), on the 1-5 scale the paper's MLLM ratings use."""
from __future__ import annotations

from vlmjudge.annotation import AnnotationField, pairwise_protocol

ANNOTATION = pairwise_protocol(
    "regeneration", {"reference": "Reference image", "regenerated": "Regenerated image"},
    "Compare the regenerated image with its reference: content, objects and their attributes, layout, style "
    "and colours.",
    AnnotationField("rating", "rating", "Similarity to the reference", low=1, high=5,
                    info="1: unrelated ... 5: the same picture in every respect that matters."),
)
