"""The fager labelling Space: annotators record which of two images (A/B, paired by file name) shows
the prompt's facts more faithfully, one JSON line per label, resuming where each annotator stopped.

The images, the labels file and the item list come from VLMJUDGE_ANNOTATE_* variables: see
vlmjudge.hub.annotate.annotation_space (and docs/annotate.md).
"""
from vlmjudge.hub.annotate import annotation_space

demo = annotation_space(__file__, "fager")

if __name__ == "__main__":
    demo.launch()
