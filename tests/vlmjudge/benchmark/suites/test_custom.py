"""`read_prompts` (`--prompts FILE`): CSV, TSV and JSON Lines, references beside the file, and one
clear line for every way such a file goes wrong."""
from __future__ import annotations

import re

import pytest

from vlmjudge.benchmark.suites import SuiteError, SuiteFormatError, read_prompts


def test_csv_with_categories_and_a_relative_reference(tmp_path, make_image):
    make_image(tmp_path / "refs" / "cat.png")
    path = tmp_path / "mine.csv"
    path.write_text('id,prompt,category,reference\ncat,"a cat, asleep",animals,refs/cat.png\nbus,a red bus,,\n')
    suite = read_prompts(path)
    assert suite.name == "mine" and suite.ids() == ["cat", "bus"] and suite.size == 2
    assert suite.prompts[0].prompt == "a cat, asleep"
    assert suite.prompts[0].categories == {"category": ("animals",)} and suite.prompts[1].categories == {}
    assert suite.prompts[0].reference == str(tmp_path / "refs" / "cat.png") and suite.prompts[1].reference is None


def test_jsonl_takes_whole_number_ids_lists_of_categories_and_blank_lines(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text('{"id": 1, "prompt": "a kite", "category": ["sky", "toys"]}\n\n{"id": "b", "prompt": "a boat"}\n')
    suite = read_prompts(path)
    assert suite.ids() == ["1", "b"] and suite.prompts[0].categories == {"category": ("sky", "toys")}


def test_tsv_is_read_with_tabs(tmp_path):
    path = tmp_path / "mine.tsv"
    path.write_text("id\tprompt\na\ta cat, a dog\n")
    assert read_prompts(path).prompts[0].prompt == "a cat, a dog"


BAD_FILES = [
    ("empty.csv", "", "is empty"),
    ("blank.jsonl", "\n\n  \n", "is empty"),
    ("header.csv", "id,prompt\n", "holds no prompts"),
    ("noprompt.csv", "id,text\na,b\n", "no 'prompt' column"),
    ("typo.csv", "id,prompt,refernce\na,b,c.png\n", "unknown column(s) 'refernce'"),
    ("dup.csv", "id,prompt\na,one\na,two\n", "prompt id 'a' appears twice"),
    ("nan.jsonl", '{"id": "a", "prompt": NaN}\n', "not JSON (NaN is not valid JSON)"),
    ("inf.jsonl", '{"id": "a", "prompt": Infinity}\n', "not JSON (Infinity is not valid JSON)"),
    ("number.jsonl", '{"id": "a", "prompt": 3.5}\n', "prompt must be text, got float 3.5"),
    ("null.jsonl", '{"id": "a", "prompt": null}\n', "prompt must be text, got NoneType"),
    ("nanstring.csv", "id,prompt\na,NaN\n", "prompt reads 'NaN', a missing value"),
    ("emptyprompt.csv", "id,prompt\na,   \n", "prompt is empty"),
    ("floatid.jsonl", '{"id": 1.0, "prompt": "a"}\n', "id must be text or a whole number, got float"),
    ("boolid.jsonl", '{"id": true, "prompt": "a"}\n', "id must be text or a whole number, got bool"),
    ("slashid.csv", "id,prompt\na/b,x\n", "cannot name an image file"),
    ("noid.csv", "id,prompt\n,x\n", "id is missing"),
    ("list.jsonl", '["a", "b"]\n', "expected a JSON object, got list"),
    ("missingkey.jsonl", '{"id": "a"}\n', "no 'prompt'"),
    ("extrakey.jsonl", '{"id": "a", "prompt": "b", "note": "c"}\n', "unknown key(s) 'note'"),
    ("badcategory.jsonl", '{"id": "a", "prompt": "b", "category": 0}\n', "category must be text or a list of text"),
    ("wide.csv", "id,prompt\na,b,c\n", "3 cells under 2 columns"),
    ("missingref.csv", "id,prompt,reference\na,b,nowhere.png\n", "nowhere.png does not exist"),
    ("prompts.txt", "a cat\n", "a prompts file is .csv, .tsv, .jsonl, not .txt"),
]


@pytest.mark.parametrize("name, content, message", BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_a_bad_prompts_file_is_one_clear_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(SuiteFormatError, match=re.escape(message)) as caught:
        read_prompts(path)
    assert "\n" not in str(caught.value) and isinstance(caught.value, ValueError)


def test_a_folder_a_missing_file_and_binary_bytes_are_refused(tmp_path):
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "binary.csv").write_bytes(b"id,prompt\n\xff\xfe\x00a,b\n")
    (tmp_path / "refdir.csv").write_text("id,prompt,reference\na,b,sub\n")
    (tmp_path / "sub").mkdir()
    for name, message in (("folder.csv", "is a folder, not a file"), ("missing.csv", "does not exist"),
                          ("binary.csv", "is not UTF-8 text"), ("refdir.csv", "is a folder, not an image file")):
        with pytest.raises(SuiteError, match=message):
            read_prompts(tmp_path / name)


def test_prompts_are_kept_exactly_and_a_bom_is_dropped(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffid,prompt\na,\"  spaced prompt \"\n".encode())
    assert read_prompts(path).prompts[0].prompt == "  spaced prompt "
