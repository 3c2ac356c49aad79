"""The terravis labelling Space: annotators record the violation types they see with their severity,
and an overall 1-5 rating (or N/A), one JSON line per label, resuming where each annotator stopped.

The images, the labels file and the item list come from VLMJUDGE_ANNOTATE_* variables: see
vlmjudge.hub.annotate.annotation_space (and docs/annotate.md).
"""
from vlmjudge.hub.annotate import annotation_space

demo = annotation_space(__file__, "terravis")

if __name__ == "__main__":
    demo.launch()
