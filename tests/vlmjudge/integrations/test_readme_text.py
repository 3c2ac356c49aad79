"""The "Use in training" section of docs/training.md carries exactly the examples that test_readme.py runs
(from use_in_training.md); no optional package is needed, so this check never skips."""
import pytest
from integ_helpers import USE_IN_TRAINING, page_section, python_blocks


def test_the_training_page_carries_the_same_examples():
    blocks = python_blocks(USE_IN_TRAINING)
    assert blocks, "use_in_training.md has no python blocks"
    on_page = python_blocks(page_section("Use in training"))
    assert on_page == blocks, "docs/training.md's 'Use in training' examples differ from use_in_training.md; keep them equal"


def test_a_section_ends_at_the_next_heading_and_a_missing_one_is_an_error():
    text = "## A\n```python\nx = 1\n```\n## B\n```python\ny = 2\n```\n"
    assert python_blocks(page_section("A", text)) == ["x = 1\n"]
    assert python_blocks(page_section("B", text)) == ["y = 2\n"]
    with pytest.raises(AssertionError, match="no '## C' section"):
        page_section("C", text)
