"""What VIEScore2 asks human annotators: perceptual quality and semantic consistency with the prompt
on 0-10, and the cells of a 16 x 16 grid over the image that hold a defect, the same grid the
judge writes (1-based [row, column] cells, as `viescore2.grid.Grid` counts them)."""
from __future__ import annotations

from vlmjudge.annotation import AnnotationField, AnnotationProtocol

from .grid import DEFAULT_N

ANNOTATION = AnnotationProtocol(
    method="viescore2",
    instructions="Rate the image's perceptual quality (PQ: artifacts, distortions) and its semantic consistency "
                 "with the prompt (SC), each 0-10. Click the grid cells that hold a defect (a visual artifact "
                 "or something that contradicts the prompt); a second click clears a cell.",
    fields=(
        AnnotationField("pq", "slider", "Perceptual quality (PQ)", low=0, high=10, step=1, default=5),
        AnnotationField("sc", "slider", "Semantic consistency with the prompt (SC)", low=0, high=10, step=1,
                        default=5),
        AnnotationField("grid", "grid", "Defect cells", n=DEFAULT_N),
    ),
)
