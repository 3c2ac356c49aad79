"""The viescore2 labelling Space: annotators record PQ and SC on 0-10 and the defect cells of a 16 x 16
grid, clicked on the image, one JSON line per label, resuming where each annotator stopped.

Set VLMJUDGE_ANNOTATE_IMAGES (default: images/ beside this file), VLMJUDGE_ANNOTATE_OUT (default:
labels.jsonl beside it; on a Space, a file under its persistent storage), and optionally
VLMJUDGE_ANNOTATE_ITEMS (a CSV of items) or VLMJUDGE_ANNOTATE_FOLDERS (comma-separated subfolders).
See vlmjudge.hub.annotate.annotation_space.
"""
from vlmjudge.hub.app import unshadow

unshadow(__file__)  # this folder's viescore2.py (the evaluate script) would shadow the package

from vlmjudge.hub.annotate import annotation_space  # noqa: E402

demo = annotation_space(__file__, "viescore2")

if __name__ == "__main__":
    demo.launch()
