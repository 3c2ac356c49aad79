"""`SimilarityScorer()` offline with its Hub defaults missing: one clear OSError at once, naming the
ids, the offline state and the keywords to pass, instead of half a minute of Hub retries."""
import time

import pytest

from regeneration.similarity import DEFAULT_CLIP_MODEL, DEFAULT_DINO_MODEL, SimilarityScorer
from vlmjudge.offline import ModelUnavailableError


@pytest.fixture
def empty_hub(tmp_path, monkeypatch):
    from huggingface_hub import constants
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))


def test_default_encoders_offline_fail_in_one_line(empty_hub):
    started = time.monotonic()
    with pytest.raises(ModelUnavailableError) as caught:
        SimilarityScorer()
    assert time.monotonic() - started < 5
    message = str(caught.value)
    assert isinstance(caught.value, OSError) and "\n" not in message
    assert f"clip encoder {DEFAULT_CLIP_MODEL!r} (the default)" in message
    assert f"dino encoder {DEFAULT_DINO_MODEL!r} (the default)" in message
    assert "HF_HUB_OFFLINE" in message and "clip_model=" in message and "dino_model=" in message


def test_only_the_missing_encoder_is_named(empty_hub, encoder_dirs):
    with pytest.raises(ModelUnavailableError) as caught:
        SimilarityScorer(encoder_dirs["clip"], "org/no-such-dino")
    message = str(caught.value)
    assert "dino encoder 'org/no-such-dino' is" in message and "clip encoder" not in message
    assert "(the default)" not in message


def test_local_encoders_and_switched_off_ones_still_load(empty_hub, encoder_dirs):
    scorer = SimilarityScorer(encoder_dirs["clip"], None, device="cpu")
    assert list(scorer.encoders) == ["clip"]
