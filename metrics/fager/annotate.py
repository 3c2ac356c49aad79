"""The fager labelling Space: annotators record which of two images (A/B, paired by file name) shows
the prompt's facts more faithfully, one JSON line per label, resuming where each annotator stopped.

Set VLMJUDGE_ANNOTATE_IMAGES (default: images/ beside this file), VLMJUDGE_ANNOTATE_OUT (default:
labels.jsonl beside it; on a Space, a file under its persistent storage), and optionally
VLMJUDGE_ANNOTATE_ITEMS (a CSV of items) or VLMJUDGE_ANNOTATE_FOLDERS (comma-separated subfolders).
See vlmjudge.hub.annotate.annotation_space.
"""
from vlmjudge.hub.app import unshadow

unshadow(__file__)  # this folder's fager.py (the evaluate script) would shadow the package

from vlmjudge.hub.annotate import annotation_space  # noqa: E402

demo = annotation_space(__file__, "fager")

if __name__ == "__main__":
    demo.launch()
