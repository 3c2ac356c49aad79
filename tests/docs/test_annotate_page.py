"""Issue 52, item 6: docs/annotate.md names each method's label fields as the app writes them (the
Regeneration rating is `rating`, VIEScore2's cells `grid`): the names a reader uses to load the
labels file are the protocol's, read from `MethodSpec.annotation`."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from vlmjudge.registry import get_method

PAGE = Path(__file__).resolve().parents[2] / "docs" / "annotate.md"
ROW = re.compile(r"^\| `(\w+)` \| [^|]+ \| (.+) \|$", re.M)


def field_cells() -> dict[str, str]:
    """Method -> the "fields" cell of its row in the page's table of what each method asks."""
    return dict(ROW.findall(PAGE.read_text(encoding="utf-8")))


def test_the_table_has_a_row_per_method_with_a_protocol():
    assert sorted(field_cells()) == ["fager", "regeneration", "terravis", "viescore2"]


@pytest.mark.parametrize("method", ["terravis", "viescore2", "fager", "regeneration"])
def test_the_fields_named_are_those_the_app_writes(method):
    protocol = get_method(method).annotation
    names = {field.name for field in protocol.fields}
    values = {option.value for field in protocol.fields for option in field.options}
    values |= {level for field in protocol.fields for level in field.levels}
    named = set(re.findall(r"`([^`]+)`", field_cells()[method]))
    assert names <= named, f"{method}: the page leaves out {sorted(names - named)}"
    assert named <= names | values, f"{method}: the page names {sorted(named - names - values)}, which no label holds"
