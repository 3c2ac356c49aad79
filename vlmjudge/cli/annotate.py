"""`vlmjudge annotate METHOD`: serve the labelling app of a method's human protocol on this machine,
so a user who switches judges can collect the labels that check the new judge against people.

Everything that would stop the app (a bad method, --images, --items, --out, --host or --port, no
gradio) is one line and exit status 2 before anything is served. The app never opens a share link
(nor prints Gradio's hint to open one) and, unless GRADIO_ANALYTICS_ENABLED is set, sends Gradio
no analytics (`vlmjudge.hub.gradio_setup`).
"""
from __future__ import annotations

import argparse

from ..registry import method_names
from .errors import CommandError


def configure_annotate(parser: argparse.ArgumentParser) -> None:
    """The `annotate` command's arguments."""
    parser.add_argument("method", help=f"the method whose protocol to label by ({', '.join(method_names())})")
    parser.add_argument("--images", required=True, metavar="DIR",
                        help="the images root; label ids are image paths relative to it. Two-image methods "
                             "(fager, regeneration) pair files by stem across one subfolder per image")
    parser.add_argument("--out", required=True, metavar="LABELS.jsonl",
                        help="the JSONL to append labels to (this method's labels only; read first, so each "
                             "annotator resumes)")
    parser.add_argument("--items", default=None, metavar="CSV",
                        help="list items in a CSV instead: one column per image (paths under --images), "
                             "optional prompt column")
    parser.add_argument("--folders", nargs="+", default=None, metavar="NAME",
                        help="the subfolders of --images, one per image of a pair (default: the view names, "
                             "A B for fager, reference regenerated for regeneration)")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1)")
    parser.add_argument("--port", default=None, help="port, 1-65535 (default: Gradio's, 7860 or the next free)")
    parser.add_argument("--title", default=None, help="page title (default: '<method> annotation')")
    parser.set_defaults(func=run_annotate)


def port_number(text: str | None) -> int | None:
    """The --port value as a TCP port, or a CommandError saying what a port is.

    Examples:
        >>> port_number("7860"), port_number(None)
        (7860, None)
        >>> port_number("99999")
        Traceback (most recent call last):
        ...
        vlmjudge.cli.errors.CommandError: --port must be a whole number in 1..65535, got '99999'
    """
    if text is None:
        return None
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise CommandError(f"--port must be a whole number in 1..65535, got {text!r}")
    return port


def run_annotate(args: argparse.Namespace) -> int:
    """Check everything, build the app and serve it until interrupted."""
    from ..hub.annotate import annotation_app
    from ..hub.labels import AnnotationSetupError

    port = port_number(args.port)
    if not args.host.strip():
        raise CommandError("--host must name an address (127.0.0.1 serves this machine only)")
    try:
        app = annotation_app(args.method, args.images, args.out, items=args.items, folders=args.folders,
                             title=args.title)
    except (AnnotationSetupError, ImportError) as error:  # ImportError: no gradio
        raise CommandError(str(error)) from None
    try:  # quiet: Gradio's own lines end by suggesting share=True, a link this command never opens
        app.launch(server_name=args.host, server_port=port, share=False, quiet=True, prevent_thread_lock=True)
    except OSError as error:  # the port is taken, or the host is no address of this machine
        raise CommandError(f"cannot serve on {args.host}:{port or 'the default port'}: {error}") from None
    print(f"labelling {args.method} at {app.local_url} until Ctrl-C; labels go to {args.out}", flush=True)
    app.block_thread()
    return 0
