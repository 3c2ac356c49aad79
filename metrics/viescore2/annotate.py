"""The viescore2 labelling Space: annotators record PQ and SC on 0-10 and the defect cells of a 16 x 16
grid, clicked on the image, one JSON line per label, resuming where each annotator stopped.

The images, the labels file and the item list come from VLMJUDGE_ANNOTATE_* variables: see
vlmjudge.hub.annotate.annotation_space (and docs/annotate.md).
"""
from vlmjudge.hub.annotate import annotation_space

demo = annotation_space(__file__, "viescore2")

if __name__ == "__main__":
    demo.launch()
