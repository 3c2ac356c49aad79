"""`vlmjudge annotate METHOD`: serve the labelling app of a method's human protocol on this machine,
so a user who switches judges can collect the labels that check the new judge against people."""
from __future__ import annotations

import argparse

from ..registry import method_names


def configure_annotate(parser: argparse.ArgumentParser) -> None:
    """The `annotate` command's arguments."""
    parser.add_argument("method", help=f"the method whose protocol to label by ({', '.join(method_names())})")
    parser.add_argument("--images", required=True, metavar="DIR",
                        help="the images root; label ids are image paths relative to it. Two-image methods "
                             "(fager, regeneration) pair files by stem across one subfolder per image")
    parser.add_argument("--out", required=True, metavar="LABELS.jsonl",
                        help="the JSONL to append labels to (read first, so each annotator resumes)")
    parser.add_argument("--items", default=None, metavar="CSV",
                        help="list items in a CSV instead: one column per image (paths under --images), "
                             "optional prompt column")
    parser.add_argument("--folders", nargs="+", default=None, metavar="NAME",
                        help="the subfolders of --images, one per image of a pair (default: the view names, "
                             "A B for fager, reference regenerated for regeneration)")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (default: Gradio's, 7860 or the next free)")
    parser.add_argument("--title", default=None, help="page title (default: '<method> annotation')")
    parser.set_defaults(func=run_annotate)


def run_annotate(args: argparse.Namespace) -> int:
    """Build the app and serve it until interrupted."""
    from ..hub.annotate import annotation_app

    app = annotation_app(args.method, args.images, args.out, items=args.items, folders=args.folders,
                         title=args.title)
    print(f"labels go to {args.out}")
    app.launch(server_name=args.host, server_port=args.port)
    return 0
