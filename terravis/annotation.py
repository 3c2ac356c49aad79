"""What TerraVis asks human annotators: N/A or eligible, each violation type of the taxonomy seen
(with its severity), and an overall 1-5 rating, as the paper's annotators labelled images. The
labels read back through `terravis.human.Annotation` (id as image_id) and the rating is what the
paper correlates scores with."""
from __future__ import annotations

from vlmjudge.annotation import AnnotationField, AnnotationProtocol, Option

from .taxonomy import TAXONOMY

ANNOTATION = AnnotationProtocol(
    method="terravis",
    instructions="Judge whether the image could be a photo of the real world. Untick *eligible* for abstract "
                 "art, logos, charts and screenshots (N/A). Otherwise tick every violation type you see, say "
                 "whether it is minor or major, and rate the image overall.",
    fields=(
        AnnotationField("eligible", "flag", "Eligible (a depiction of the physical world)", default=True,
                        info="Untick for N/A: abstract art, logos, charts, screenshots."),
        AnnotationField("violations", "checklist", "Violations seen", only_if="eligible", levels=("minor", "major"),
                        info="Tick each type present and choose its severity.",
                        options=tuple(Option(t.id, t.name, t.checks, t.level.capitalize() + " level")
                                      for t in TAXONOMY)),
        AnnotationField("rating", "rating", "Overall rating", low=1, high=5, only_if="eligible",
                        info="1: many severe violations ... 5: fully plausible."),
    ),
)
