"""The terravis labelling Space: annotators record the violation types they see with their severity,
and an overall 1-5 rating (or N/A), one JSON line per label, resuming where each annotator stopped.

Set VLMJUDGE_ANNOTATE_IMAGES (default: images/ beside this file), VLMJUDGE_ANNOTATE_OUT (default:
labels.jsonl beside it; on a Space, a file under its persistent storage), and optionally
VLMJUDGE_ANNOTATE_ITEMS (a CSV of items) or VLMJUDGE_ANNOTATE_FOLDERS (comma-separated subfolders).
See vlmjudge.hub.annotate.annotation_space.
"""
from vlmjudge.hub.app import unshadow

unshadow(__file__)  # this folder's terravis.py (the evaluate script) would shadow the package

from vlmjudge.hub.annotate import annotation_space  # noqa: E402

demo = annotation_space(__file__, "terravis")

if __name__ == "__main__":
    demo.launch()
