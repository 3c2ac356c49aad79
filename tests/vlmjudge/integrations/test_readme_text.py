"""README's "Use in training" section carries exactly the examples that test_readme.py runs
(from use_in_training.md); no optional package is needed, so this check never skips."""
import pytest
from integ_helpers import USE_IN_TRAINING, python_blocks, readme_section


def test_readme_carries_the_same_examples():
    blocks = python_blocks(USE_IN_TRAINING)
    assert blocks, "use_in_training.md has no python blocks"
    in_readme = python_blocks(readme_section("Use in training"))
    assert in_readme == blocks, "README's 'Use in training' examples differ from use_in_training.md; keep them equal"


def test_a_section_ends_at_the_next_heading_and_a_missing_one_is_an_error():
    text = "## A\n```python\nx = 1\n```\n## B\n```python\ny = 2\n```\n"
    assert python_blocks(readme_section("A", text)) == ["x = 1\n"]
    assert python_blocks(readme_section("B", text)) == ["y = 2\n"]
    with pytest.raises(AssertionError, match="no '## C' section"):
        readme_section("C", text)
