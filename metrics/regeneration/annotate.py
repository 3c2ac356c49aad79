"""The regeneration labelling Space: annotators record a 1-5 similarity of each regenerated image to
its reference (paired by file stem), one JSON line per label, resuming where each annotator stopped.

The images, the labels file and the item list come from VLMJUDGE_ANNOTATE_* variables: see
vlmjudge.hub.annotate.annotation_space (and docs/annotate.md).
"""
from vlmjudge.hub.annotate import annotation_space

demo = annotation_space(__file__, "regeneration")

if __name__ == "__main__":
    demo.launch()
