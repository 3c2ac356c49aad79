"""Reading labelled free-text answers (`Answer: Yes`, `Severity: Minor`) as the TerraVis release reads them.

A judge that is not constrained (a plain server, a replayed run, the release's own saved outputs)
writes its decision after a label; reading it exactly as the release does keeps scores comparable
with the release's (tests/golden replays its outputs). Every function here runs in time linear in
the text and raises nothing on any string.

docs/methods/terravis.md, "Reading the judge's answers", lists the rules.
"""
from __future__ import annotations

import re
from typing import Iterator, Sequence

#: Marks skipped around a label and its colon (besides whitespace): quotes, markdown, bullets.
_MARK_CHARS = ">*_`-•#\"'"
_MARKS = re.escape(_MARK_CHARS)
_GAP = re.compile(rf"[\s{_MARKS}]*")          # before a label, and between a label and its colon
_GAP_RUN = re.compile(rf"[\s{_MARKS}]+")
_INLINE_GAP = re.compile(rf"[ \t{_MARKS}]*")  # after the colon: never crosses a line break
_SPACES = re.compile(r"\s*")
_COLONS = ":："
#: Characters stripped from both ends of a value.
VALUE_STRIP = " \t\r\n.。,:;*_`\"'()[]{}<>"
#: A line that is itself a `Field:` label, which the next-line value never takes.
_LABEL_LINE = re.compile(r"[A-Za-z][\w /()-]*[:：]")
_ECHO = r"(?!\s+(?:or|and)\b)"

#: Accepted words per decision, in the order they are tried on each candidate: (words, meaning).
ELIGIBILITY_WORDS: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("not applicable", "not eligible", "ineligible", "n/a", "na"), False),
    (("eligible",), True), (("yes",), True), (("no",), False))
DETECTION_WORDS: tuple[tuple[tuple[str, ...], bool], ...] = (
    (("yes",), True), (("no", "not", "none", "nope"), False))
SEVERITY_WORDS: tuple[tuple[tuple[str, ...], str], ...] = ((("major",), "major"), (("minor",), "minor"))


class _Finder:
    """Label occurrences and the gap scans over one text, each position scanned a bounded number of
    times (a cached gap end), so that reading is linear however the text repeats its labels."""

    def __init__(self, text: str, label: str) -> None:
        self.text = text
        self.label = re.compile(rf"(?i)(?=({re.escape(label)}))")
        self.free_label = re.compile(rf"(?i)(?<![a-z0-9])(?=({re.escape(label)}))")
        self._gap = (0, -1)

    def gap_end(self, pos: int) -> int:
        start, end = self._gap
        if start <= pos <= end:
            return end
        end = _GAP.match(self.text, pos).end()
        self._gap = (pos, end)
        return end

    def line_starts(self) -> set[int]:
        """Positions reached from the start of a line through marks and spaces only."""
        starts = {0}
        for run in _GAP_RUN.finditer(self.text):
            if run.start() == 0 or "\n" in run.group():
                starts.add(run.end())
        return starts


def _fields(finder: _Finder, at_line_start: bool) -> Iterator[tuple[str, int]]:
    """(raw value, end) of every `label:` field, left to right, none overlapping the one before."""
    text = finder.text
    starts = finder.line_starts() if at_line_start else None
    pattern = finder.label if at_line_start else finder.free_label
    cursor = 0
    for hit in pattern.finditer(text):
        if hit.start() < cursor or (starts is not None and hit.start() not in starts):
            continue
        colon = finder.gap_end(hit.end(1))
        if colon >= len(text) or text[colon] not in _COLONS:
            continue
        begin = _INLINE_GAP.match(text, colon + 1).end()
        line_end = text.find("\n", begin)
        line_end = len(text) if line_end < 0 else line_end
        value = text[begin:line_end].rstrip()
        value_end = begin + len(value)
        blank_end = _SPACES.match(text, value_end).end()
        cursor = len(text) if blank_end == len(text) else text.rfind("\n", value_end, blank_end)
        yield value, cursor


def _next_line(text: str, end: int) -> str:
    """The first non-blank line after `end`, unless it is a `Field:` label line."""
    tail = text[end:].lstrip()
    line = tail.splitlines()[0].strip() if tail else ""
    if not line or _LABEL_LINE.match(line, _GAP.match(line).end()):
        return ""
    return line.strip(VALUE_STRIP).strip()


def field_candidates(text: str | None, label: str) -> Iterator[str]:
    """The candidate values of one labelled field, best first (in the order docs/methods/terravis.md
    gives).

    Examples:
        The last labelled line comes first; an echo of the options is still a candidate here,
        and `read_choice` passes over it:

        >>> text = "Answer: Yes or No\\n**Answer:** No, the cup rests on the table."
        >>> list(field_candidates(text, "Answer"))[:2]
        ['No, the cup rests on the table', 'Yes or No']
    """
    if not isinstance(text, str) or not text or not label:
        return
    finder = _Finder(text, label)
    for at_line_start in (True, False):
        found = list(_fields(finder, at_line_start))
        for raw, _ in reversed(found):
            value = raw.strip(VALUE_STRIP).strip()
            if value:
                yield value
        if found:
            value = _next_line(text, found[-1][1])
            if value:
                yield value


def read_field(text: str | None, label: str) -> str:
    """The best value of a labelled field (e.g. `Reason`, `Evidence`), or "" when it has none.

    Examples:
        >>> read_field("Reason: It is a logo.\\nAnswer: N/A", "Reason")
        'It is a logo'
        >>> read_field("no labels here", "Reason")
        ''
    """
    return next(field_candidates(text, label), "")


def prefix_label(prefix: str | None) -> str:
    """The label an answer prefix ends with ("Answer" for `Answer:` and a line break), or "".

    Examples:
        >>> prefix_label("Answer:"), prefix_label("**Severity:** "), prefix_label("")
        ('Answer', 'Severity', '')
    """
    body = (prefix or "").rstrip().rstrip(_MARK_CHARS + " \t")
    if not body or body[-1] not in _COLONS:
        return ""
    lines = body[:-1].splitlines()
    return lines[-1].strip(" \t" + _MARK_CHARS) if lines else ""


def normalize_value(value: str) -> str:
    """Lowercase, without the quotes and punctuation around it ("n/a" keeps its slash).

    Examples:
        >>> normalize_value(' "N/A". ')
        'n/a'
    """
    return value.strip().strip(VALUE_STRIP).lower().strip(VALUE_STRIP)


def _word_pattern(words: Sequence[str]) -> re.Pattern:
    return re.compile("(?:" + "|".join(re.escape(w) for w in words) + r")\b" + _ECHO)


def read_choice(text: str | None, labels: Sequence[str], vocabulary: Sequence[tuple[Sequence[str], object]]):
    """The meaning of the first candidate (over `labels`, in order) that starts with an accepted word,
    the vocabulary's groups tried in order on each candidate; None when no candidate does.

    Examples:
        >>> read_choice("Severity: Minor, a background sign.", ("Severity",), SEVERITY_WORDS)
        'minor'
        >>> read_choice("Severity: Major or minor", ("Severity",), SEVERITY_WORDS) is None
        True
    """
    groups = [(_word_pattern([w.lower() for w in words]), meaning) for words, meaning in vocabulary if words]
    for label in labels:
        for value in field_candidates(text, label):
            answer = normalize_value(value)
            for pattern, meaning in groups:
                if pattern.match(answer):
                    return meaning
    return None


def read_detection(text: str | None) -> bool | None:
    """A detection answer (`Answer: Yes` / `Answer: No`): True, False, or None when unreadable.

    Examples:
        A bare word without its label is not read (the caller's fallback applies):

        >>> read_detection("Answer: Yes or No\\nAnswer: No, nothing floats."), read_detection("Yes")
        (False, None)
    """
    return read_choice(text, ("Answer",), DETECTION_WORDS)


def read_eligibility(text: str | None) -> bool | None:
    """An eligibility answer (`Answer: Eligible`, `Answer: N/A`, or Yes/No): True, False or None.

    Examples:
        >>> read_eligibility("Answer: not applicable"), read_eligibility("Answer: Eligible")
        (False, True)
    """
    return read_choice(text, ("Answer",), ELIGIBILITY_WORDS)


def read_severity(text: str | None) -> str | None:
    """A severity answer (`Severity: Major`): "major", "minor", or None when unreadable.

    Examples:
        A value may stand on the line after its label:

        >>> read_severity("Severity:\\nMajor, it is the main subject.")
        'major'
    """
    return read_choice(text, ("Severity",), SEVERITY_WORDS)
