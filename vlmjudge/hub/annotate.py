"""Collecting human labels for any method: one Gradio app, driven by the protocol a method declares.

A judge is only trusted while it agrees with people, so each method states what its paper asked
annotators for (`AnnotationProtocol`: fields, kinds, ranges; found as `MethodSpec.annotation`).
This module turns that description into a page, lists the items to label from folders or a CSV,
and appends one JSON line per submitted label to a store (`labels.LabelStore`) that resumes each
annotator where they stopped and never takes one item twice from one annotator. The store loads
with `datasets.load_dataset("json", ...)` and feeds `vlmjudge agreement`.
"""
from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..annotation import AnnotationField, AnnotationProtocol, Item, make_label
from ..images import IMAGE_SUFFIXES, is_image_file
from .gradio_setup import import_gradio
from .labels import AlreadyLabelled, AnnotationSetupError, LabelStore

#: Longest side of the image the grid is painted on: large enough to aim at a 16 x 16 cell.
GRID_SIDE = 512


def _image_files(folder: Path) -> list[Path]:
    """The images under a folder, sorted, so item order is the same on every start."""
    return sorted(p for p in folder.rglob("*") if is_image_file(p))


def _sidecar_prompt(path: Path) -> str | None:
    """The prompt in `<stem>.txt` beside an image, as many text-to-image folders keep it."""
    text = path.with_suffix(".txt")
    if not text.is_file():
        return None
    try:
        return text.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise AnnotationSetupError(f"cannot read the prompt {os.fspath(text)!r}: {error}") from None


def _under(root: Path, relative: str, where: str) -> str:
    """`relative` as a POSIX path under `root`, or an error: a label id never leaves --images."""
    path = Path(relative)
    if not relative.strip() or path.is_absolute() or ".." in path.parts:
        raise AnnotationSetupError(f"{where}: {relative!r} is not a path under {os.fspath(root)!r}")
    return path.as_posix()


def items_from_folders(root: str | os.PathLike, views: Sequence[str],
                       folders: Sequence[str] | None = None) -> list[Item]:
    """Items from image folders: with one view, every image under `root`; with several, one
    subfolder of `root` per view (default: named as the views), paired by file stem. A stem found
    in only some folders, or twice in one (x.png and x.jpg), is an error, as is an empty result."""
    root = Path(root)
    if not root.is_dir():
        raise AnnotationSetupError(f"--images {os.fspath(root)!r} is {'a file' if root.exists() else 'missing'}: "
                                   "name the folder of images to label")
    if len(views) == 1:
        items = [Item(p.relative_to(root).as_posix(), {views[0]: p.relative_to(root).as_posix()}, _sidecar_prompt(p))
                 for p in _image_files(root)]
    else:
        folders = [_under(root, f, "--folders") for f in (folders or views)]
        if len(folders) != len(views) or len(set(folders)) != len(folders):
            raise AnnotationSetupError(f"give {len(views)} different folders, one per view {list(views)}, "
                                       f"got {folders}")
        by_stem = []
        for folder in folders:
            if not (root / folder).is_dir():
                raise AnnotationSetupError(f"no folder {folder!r} under {os.fspath(root)!r} "
                                           f"(one per view {list(views)})")
            found: dict[str, Path] = {}
            for path in _image_files(root / folder):
                stem = path.relative_to(root / folder).with_suffix("").as_posix()
                if stem in found:
                    raise AnnotationSetupError(f"two images of one stem in {folder!r}: {found[stem].name!r} and "
                                               f"{path.name!r}; keep one, so each pair is certain")
                found[stem] = path
            by_stem.append(found)
        stems = set().union(*by_stem)
        unpaired = sorted(s for s in stems if not all(s in found for found in by_stem))
        if unpaired:
            raise AnnotationSetupError(f"images without a partner in every folder {folders}: {unpaired[:5]}")
        items = []
        for stem in sorted(stems):
            paths = {view: found[stem].relative_to(root).as_posix() for view, found in zip(views, by_stem)}
            items.append(Item(paths[views[0]], paths, _sidecar_prompt(by_stem[0][stem])))
    if not items:
        raise AnnotationSetupError(f"no images ({', '.join(IMAGE_SUFFIXES)}) under {os.fspath(root)!r}")
    return items


def _csv_rows(table: Path) -> tuple[list[str], list[tuple[int, dict[str, str | None]]]]:
    """A CSV's header and (line number, row) pairs, or one line saying why it cannot be read."""
    shown = os.fspath(table)
    if not table.is_file():
        raise AnnotationSetupError(f"--items {shown!r} is {'a folder' if table.is_dir() else 'missing'}: name a CSV")
    try:
        with open(table, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            rows = [(reader.line_num, row) for row in reader]
            return list(reader.fieldnames or []), rows
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise AnnotationSetupError(f"cannot read --items {shown!r}: {error}") from None


def items_from_csv(root: str | os.PathLike, table: str | os.PathLike, views: Sequence[str]) -> list[Item]:
    """Items from a CSV with one column per view (image paths relative to `root`) and an optional
    `prompt` column; rows keep their order. A missing column, cell or image file, a path that
    leaves `root`, or an item listed twice is an error."""
    root, table = Path(root), Path(table)
    if not root.is_dir():
        raise AnnotationSetupError(f"--images {os.fspath(root)!r} is not a folder: the CSV's paths are under it")
    header, rows = _csv_rows(table)
    missing = [v for v in views if v not in header]
    if missing:
        raise AnnotationSetupError(f"{os.fspath(table)!r} needs a column per view {list(views)}; missing {missing}")
    items, seen = [], {}
    for line, row in rows:
        where = f"{os.fspath(table)}:{line}"
        paths = {view: _under(root, row.get(view) or "", f"{where} ({view})") for view in views}
        absent = [p for p in paths.values() if not (root / p).is_file()]
        if absent:
            raise AnnotationSetupError(f"{where} names images not under {os.fspath(root)!r}: {absent}")
        item_id = paths[views[0]]
        if item_id in seen:
            raise AnnotationSetupError(f"{where} lists {item_id!r} again (first at line {seen[item_id]}): "
                                       "each item once")
        seen[item_id] = line
        items.append(Item(item_id, paths, (row.get("prompt") or "").strip() or None))
    if not items:
        raise AnnotationSetupError(f"--items {os.fspath(table)!r} lists no items")
    return items


def check_images(root: str | os.PathLike, items: Sequence[Item]) -> None:
    """Open every image's header once at start: an item the page could not show is refused now,
    not found by an annotator who then cannot get past it."""
    from PIL import Image

    for item in items:
        for relative in item.images.values():
            try:
                with Image.open(Path(root) / relative):
                    pass
            except (OSError, ValueError, Image.DecompressionBombError) as error:
                raise AnnotationSetupError(f"cannot show {relative!r}: {error}") from None


def next_index(items: Sequence[Item], done: Iterable[str]) -> int:
    """Where an annotator resumes: the first item not yet labelled (len(items) when all are)."""
    done = set(done)
    return next((i for i, item in enumerate(items) if item.id not in done), len(items))


def progress_text(index: int, total: int, annotator: str) -> str:
    """The progress line: which item of how many, or that all are done."""
    if index >= total:
        return f"All {total} items are labelled by **{annotator}**. Thank you!"
    return f"**item {index + 1} of {total}** · annotator **{annotator}**"


def grid_cell(x: float, y: float, width: int, height: int, n: int) -> tuple[int, int]:
    """The 1-based (row, column) of the grid cell under pixel (x, y) of a width x height image.

    Examples:
        >>> grid_cell(0, 0, 512, 512, 16), grid_cell(511, 40, 512, 512, 16), grid_cell(100, 300, 200, 600, 4)
        ((1, 1), (2, 16), (3, 3))
    """
    row = min(int(y * n // height), n - 1) + 1
    col = min(int(x * n // width), n - 1) + 1
    return row, col


def toggle_cell(cells: Iterable[Sequence[int]], cell: tuple[int, int]) -> list[list[int]]:
    """Cells with `cell` painted, or cleared when it was painted (a click toggles)."""
    painted = {tuple(c) for c in cells}
    painted ^= {cell}
    return sorted([r, c] for r, c in painted)


def paint_grid(image, cells: Iterable[Sequence[int]], n: int, side: int = GRID_SIDE):
    """The image scaled to `side` on its longer edge, with the n x n grid drawn and painted cells
    filled in translucent red: what the annotator clicks on."""
    from PIL import Image, ImageDraw

    base = image.convert("RGB")
    scale = side / max(base.size)
    base = base.resize((max(n, round(base.width * scale)), max(n, round(base.height * scale))))
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    w, h = base.size
    for r, c in cells:
        draw.rectangle([(c - 1) * w / n, (r - 1) * h / n, c * w / n, r * h / n], fill=(230, 30, 30, 120))
    for k in range(n + 1):
        draw.line([(k * w / n, 0), (k * w / n, h)], fill=(255, 255, 255, 110))
        draw.line([(0, k * h / n), (w, k * h / n)], fill=(255, 255, 255, 110))
    return Image.alpha_composite(base.convert("RGBA"), overlay).convert("RGB")


def _reset(gr: Any, field: AnnotationField) -> list[Any]:
    """Updates that clear a field's widgets for the next item."""
    if field.kind == "checklist":
        return [gr.update(value=v) for _ in field.options for v in (False, None)]
    if field.kind == "grid":
        return []
    start = {"flag": bool(field.default), "slider": field.low if field.default is None else field.default}
    return [gr.update(value=start.get(field.kind, field.default))]


def _widgets(gr: Any, field: AnnotationField) -> list[Any]:
    """The widgets of one field (none for a grid: it is painted on the image)."""
    key = f"field-{field.name}"
    if field.kind == "flag":
        return [gr.Checkbox(label=field.label, info=field.info or None, value=bool(field.default), elem_id=key)]
    if field.kind in ("rating", "choice"):
        choices = ([(f"{v:g}", v) for v in _steps(field)] if field.kind == "rating"
                   else [(o.label, o.value) for o in field.options])
        return [gr.Radio(choices, label=field.label, info=field.info or None, value=None, elem_id=key)]
    if field.kind == "slider":
        start = field.low if field.default is None else field.default
        return [gr.Slider(field.low, field.high, value=start, step=field.step, label=field.label,
                          info=field.info or None, elem_id=key)]
    if field.kind == "checklist":
        out, group = [], None
        gr.Markdown(f"**{field.label}**" + (f"  \n{field.info}" if field.info else ""))
        for option in field.options:
            if option.group != group:
                group = option.group
                gr.Markdown(f"*{group}*")
            with gr.Row(equal_height=True):
                out.append(gr.Checkbox(label=option.label, info=option.hint or None, value=False, scale=3,
                                       elem_id=f"{key}-{option.value}"))
                out.append(gr.Radio(list(field.levels), show_label=False, value=None, scale=1,
                                    elem_id=f"{key}-{option.value}-level"))
        return out
    return []


def _steps(field: AnnotationField) -> list[float]:
    """A rating's answers, low to high by step (whole numbers shown without a decimal point)."""
    count = int(round((field.high - field.low) / field.step))
    return [int(v) if v == int(v) else v for v in (field.low + k * field.step for k in range(count + 1))]


def _read(field: AnnotationField, values: list[Any], cells: list[list[int]]) -> Any:
    """A field's raw value from its widgets' values (checklist: (option, ticked, level) triples)."""
    if field.kind == "checklist":
        return [(o, values[2 * k], values[2 * k + 1]) for k, o in enumerate(field.options)]
    if field.kind == "grid":
        return cells
    return values[0]


def build_annotation_app(protocol: AnnotationProtocol, items: Sequence[Item], root: str | os.PathLike,
                         store: LabelStore, title: str | None = None):
    """A `gr.Blocks` page that labels `items` (images under `root`) by `protocol` into `store`: the
    annotator enters an id and starts at their first unlabelled item; each submit writes one line."""
    from PIL import Image

    gr = import_gradio()
    root, items = Path(root), list(items)
    if store.method != protocol.method:
        raise ValueError(f"a {store.method} label store cannot hold {protocol.method} labels")
    grid = next((f for f in protocol.fields if f.kind == "grid"), None)
    title = title or f"{protocol.method} annotation"

    def refuse(text: str) -> list[Any]:
        """`text` as the one message under Submit, every other output left as it was. Why not
        `gr.Error`: Gradio then marks each output of the event, some 40 widgets for TerraVis, with
        an "Error" badge, burying the one sentence that says what to do."""
        return [gr.skip(), gr.skip(), text, *[gr.skip() for _ in outputs[3:]]]

    def load(item: Item, view: str):
        """One view's image, read fresh (the app holds no images between events)."""
        with Image.open(root / item.images[view]) as image:
            return image.convert("RGB")

    def show(annotator: str, note: str = "") -> list[Any]:
        """Every output for the annotator's first unlabelled item (from the store, so a reload or a
        second tab resumes), its widgets cleared, `note` above the progress line, the message
        cleared; the panel hidden once all are labelled. A file broken since start is the message."""
        try:
            index = next_index(items, store.labelled(annotator))
        except AnnotationSetupError as exc:
            return refuse(str(exc))
        session = {"annotator": annotator, "index": index}
        progress_line = (f"{note}  \n" if note else "") + progress_text(index, len(items), annotator)
        if index >= len(items):
            return [session, progress_line, "", gr.update(visible=False),
                    gr.update(), *[gr.update() for _ in images], [], *[gr.update() for _ in flat]]
        item, cells = items[index], []
        pictures = [load(item, v) for v in protocol.views]
        if grid is not None:
            pictures[0] = paint_grid(pictures[0], cells, grid.n)
        prompt_text = f"**Prompt:** {item.prompt}" if item.prompt else ""
        return [session, progress_line, "", gr.update(visible=True),
                gr.update(value=prompt_text, visible=bool(prompt_text)), *pictures, cells,
                *[u for f in protocol.fields for u in _reset(gr, f)]]

    def start(annotator: str) -> list[Any]:
        """Start (or resume) under an annotator id."""
        if not annotator.strip():
            return refuse("Enter your annotator id first.")
        return show(annotator.strip())

    def submit(session: dict, cells: list[list[int]], *values: Any) -> list[Any]:
        """Check the answers, write the label line, move on to the next unlabelled item."""
        if not session or session["index"] >= len(items):
            return refuse("Press Start first.")
        raw, at = {}, 0
        for field, count in zip(protocol.fields, counts):
            raw[field.name] = _read(field, list(values[at:at + count]), cells)
            at += count
        try:
            label = make_label(protocol, items[session["index"]], session["annotator"], raw)
        except ValueError as exc:  # a missing or out-of-range answer: said once, nothing saved
            return refuse(f"Not saved: {exc}.")
        try:
            store.add(label)
        except AlreadyLabelled as stale:  # another tab or process labelled it first: that label stays
            note = f"*{stale.item_id} was already labelled by {stale.annotator} (another tab?); moved on.*"
            gr.Warning(f"{stale}, in another tab or session: this answer was not saved. Moved on to the "
                       "next unlabelled item.")
            return show(session["annotator"], note)
        except AnnotationSetupError as exc:  # the file changed under the app into something it cannot append to
            return refuse(f"Not saved: {exc}")
        return show(session["annotator"])

    def paint(session: dict, cells: list[list[int]], evt: gr.SelectData):
        """Toggle the grid cell under a click on the image and show the repainted grid."""
        if not session or session["index"] >= len(items) or not evt.index:
            return gr.update(), cells
        picture = load(items[session["index"]], protocol.views[0])
        shown = paint_grid(picture, [], grid.n)
        cells = toggle_cell(cells, grid_cell(evt.index[0], evt.index[1], shown.width, shown.height, grid.n))
        return paint_grid(picture, cells, grid.n), cells

    paint.__annotations__["evt"] = gr.SelectData  # gradio finds the event by type; `gr` is local here
    with gr.Blocks(title=title) as app:
        gr.Markdown(f"# {title}\n\n{protocol.instructions}", elem_id="title")
        with gr.Row(equal_height=True):
            annotator = gr.Textbox(label="Annotator id", elem_id="annotator", scale=3,
                                   placeholder="your name or initials; labels resume under it")
            start_button = gr.Button("Start", elem_id="start-button", scale=1)
        progress = gr.Markdown("Enter your annotator id and press **Start**.", elem_id="progress")
        session, cell_state = gr.State({}), gr.State([])
        with gr.Column(visible=False, elem_id="panel") as panel:
            prompt = gr.Markdown(visible=False, elem_id="prompt")
            with gr.Row():
                images = [gr.Image(label=protocol.label_of(v) + (" (click cells to mark defects)" if grid and i == 0
                                                                  else ""),
                                   type="pil", format="png", interactive=False, elem_id=f"view-{v}", height=520)
                          for i, v in enumerate(protocol.views)]
            per_field, groups = [], {}
            for field in protocol.fields:
                with gr.Column(visible=field.only_if is None or bool(_default_flag(protocol, field.only_if))) as box:
                    per_field.append(_widgets(gr, field))
                if field.only_if:
                    groups.setdefault(field.only_if, []).append(box)
            submit_button = gr.Button("Submit", variant="primary", elem_id="submit-button")
        message = gr.Markdown("", elem_id="message")
        flat, counts = [w for ws in per_field for w in ws], [len(ws) for ws in per_field]
        for name, boxes in groups.items():
            flag = per_field[[f.name for f in protocol.fields].index(name)][0]
            flag.change(lambda on, _n=len(boxes): [gr.update(visible=on)] * _n, flag, boxes)
        outputs = [session, progress, message, panel, prompt, *images, cell_state, *flat]
        start_button.click(start, annotator, outputs, api_name="start")
        annotator.submit(start, annotator, outputs)
        submit_button.click(submit, [session, cell_state, *flat], outputs, api_name="submit")
        if grid is not None:
            images[0].select(paint, [session, cell_state], [images[0], cell_state])
    return app


def _default_flag(protocol: AnnotationProtocol, name: str) -> bool:
    """A flag's starting state, which decides whether the fields that depend on it start shown."""
    return bool(next(f.default for f in protocol.fields if f.name == name))


def annotation_app(method: str, images: str | os.PathLike, out: str | os.PathLike,
                   items: str | os.PathLike | None = None, folders: Sequence[str] | None = None,
                   title: str | None = None):
    """The app for a registered method: its protocol from `MethodSpec.annotation`, items from a CSV
    (`items`) or from the folders under `images`, labels appended to `out`. Whatever would stop it
    serving (an unknown method, a bad --out, no images, an unreadable image) is an
    `AnnotationSetupError` now, before anything is served."""
    from ..registry import get_method

    try:
        protocol = get_method(method).annotation
    except KeyError as error:
        raise AnnotationSetupError(error.args[0]) from None
    if protocol is None:
        raise AnnotationSetupError(f"method {method!r} declares no annotation protocol (MethodSpec.annotation)")
    store = LabelStore(out, protocol.method)
    listed = (items_from_csv(images, items, protocol.views) if items is not None
              else items_from_folders(images, protocol.views, folders))
    check_images(images, listed)
    return build_annotation_app(protocol, listed, images, store, title=title)


def annotation_space(app_file: str, method: str):
    """The app of a metrics/<name>/annotate.py: images, output file, CSV and folders come from
    VLMJUDGE_ANNOTATE_IMAGES (default: images/ beside the file), VLMJUDGE_ANNOTATE_OUT (default:
    labels.jsonl beside it; on a Space, a file under its persistent storage), VLMJUDGE_ANNOTATE_ITEMS
    (a CSV of items) and VLMJUDGE_ANNOTATE_FOLDERS (comma-separated subfolders). The file's folder
    leaves `sys.path` first: its evaluate script `<method>.py` would shadow the method's package.
    What keeps the app from starting ends the process with one line."""
    from .app import unshadow  # lazily: the scoring app's imports are not the labelling app's

    unshadow(app_file)
    folder = Path(app_file).resolve().parent
    env = os.environ.get
    folders = env("VLMJUDGE_ANNOTATE_FOLDERS")
    try:
        return annotation_app(method, env("VLMJUDGE_ANNOTATE_IMAGES") or folder / "images",
                              env("VLMJUDGE_ANNOTATE_OUT") or folder / "labels.jsonl",
                              items=env("VLMJUDGE_ANNOTATE_ITEMS") or None,
                              folders=folders.split(",") if folders else None)
    except AnnotationSetupError as exc:
        raise SystemExit(f"{method} labelling Space cannot start: {exc}") from None
