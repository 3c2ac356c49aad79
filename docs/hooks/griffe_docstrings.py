"""A griffe extension for the API reference: three ways this project documents code that griffe
would not show.

- A doctest in a docstring's text (griffe reads `>>>` lines as code only under `Examples:`) would
  render as a wrapped paragraph, and `[1.0, 0.95]`, its printed list, as a broken link: each such
  block is fenced as `pycon` before the docstring is parsed.
- One "Args" entry for several parameters (`lam, alpha: ...`) would be one unknown parameter with
  no type: it becomes one entry per parameter, so each shows its type and default.
- A constant or field documented by `#:` comment lines above it (the Sphinx convention the
  packages use) has no docstring for griffe: the comment becomes its docstring.

mkdocs.yml loads it (`extensions:`); docs/hooks/ is left out of the pages (`exclude_docs`).
"""
from __future__ import annotations

import re
from typing import Any

import griffe

EXAMPLES_HEADER = re.compile(r"^(?P<indent>\s*)Examples?:\s*$")
ARGS_HEADER = re.compile(
    r"^(?P<indent>\s*)(Args|Arguments|Parameters|Keyword Args|Keyword Arguments|Other Parameters):\s*$")
SHARED_ENTRY = re.compile(r"^(?P<indent>\s+)(?P<names>\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)+)\s*:(?P<text>.*)$")
FENCE = re.compile(r"^\s*(```|~~~)")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def fence_doctests(text: str) -> str:
    r"""`text` with every doctest block outside an `Examples:` section and outside a fence fenced as
    `pycon`; a block runs from its first `>>>` line to the next blank line.

    >>> fence_doctests("The ceiling:\n\n>>> f([1, 2])\n[1.0, 0.95]\n\nThen more.").split("\n")
    ['The ceiling:', '', '```pycon', '>>> f([1, 2])', '[1.0, 0.95]', '```', '', 'Then more.']
    >>> fence_doctests("Examples:\n    >>> 1 + 1\n    2") == "Examples:\n    >>> 1 + 1\n    2"
    True
    """
    lines, out = text.split("\n"), []
    examples_indent: int | None = None  # indentation of the open `Examples:` header, if any
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() and examples_indent is not None and _indent(line) <= examples_indent:
            examples_indent = None
        if FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and (header := EXAMPLES_HEADER.match(line)):
            examples_indent = len(header.group("indent"))
        elif not in_fence and examples_indent is None and line.lstrip().startswith(">>>"):
            end = i
            while end < len(lines) and lines[end].strip():
                end += 1
            pad = line[:_indent(line)]
            out += [f"{pad}```pycon", *lines[i:end], f"{pad}```"]
            i = end
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def split_shared_args(text: str) -> str:
    r"""`text` with each "Args" entry that names several parameters (`a, b: text`) split into one
    entry per parameter, each with the whole description.

    >>> split_shared_args("Args:\n    judge: a judge.\n    lam, alpha: the weights\n        of S.").split("\n")
    ['Args:', '    judge: a judge.', '    lam: the weights', '        of S.', '    alpha: the weights', '        of S.']
    >>> kept = "Args:\n    x: one of\n        a, b: or c.\n\nThe end, b: no."
    >>> split_shared_args(kept) == kept
    True
    """
    lines, out = text.split("\n"), []
    args_indent: int | None = None  # indentation of the open "Args:" header, if any
    entry_indent: int | None = None  # indentation of its entries (continuation lines go deeper)
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() and args_indent is not None and _indent(line) <= args_indent:
            args_indent = None
        if header := ARGS_HEADER.match(line):
            args_indent, entry_indent = len(header.group("indent")), None
        elif args_indent is not None and line.strip() and entry_indent is None:
            entry_indent = _indent(line)
        if args_indent is not None and _indent(line) == entry_indent and (entry := SHARED_ENTRY.match(line)):
            end = i + 1
            while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > _indent(line)):
                end += 1
            while end > i + 1 and not lines[end - 1].strip():
                end -= 1
            for name in entry.group("names").split(","):
                out += [f"{entry.group('indent')}{name.strip()}:{entry.group('text')}", *lines[i + 1:end]]
            i = end
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def comment_docstring(lines: list[str], lineno: int) -> str | None:
    """The `#:` comment lines right above line `lineno` (1-based) of `lines`, as text; None if none.

    >>> comment_docstring(["x = 1", "#: The levels,", "#: best first.", "LEVELS = (1, 2)"], 4)
    'The levels,\\nbest first.'
    >>> comment_docstring(["# not this kind", "LEVELS = (1, 2)"], 2) is None
    True
    """
    comment: list[str] = []
    index = lineno - 2
    while index >= 0 and lines[index].lstrip().startswith("#:"):
        comment.insert(0, lines[index].lstrip()[2:].strip())
        index -= 1
    return "\n".join(comment) or None


class ProjectDocstrings(griffe.Extension):
    """Fence bare doctest blocks, split shared "Args" entries and read `#:` comments as attribute
    docstrings, once the object tree is built."""

    def on_attribute(self, *, attr: griffe.Attribute, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if attr.docstring is not None or attr.lineno is None or attr.filepath not in attr.lines_collection:
            return
        text = comment_docstring(attr.lines_collection[attr.filepath], attr.lineno)
        if text is not None:
            attr.docstring = griffe.Docstring(text, lineno=attr.lineno, parent=attr, parser=loader.docstring_parser,
                                              parser_options=loader.docstring_options)

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = split_shared_args(fence_doctests(obj.docstring.value))
