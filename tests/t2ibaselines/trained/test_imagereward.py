"""ImageReward cannot run beside transformers 5 (its one release imports helpers transformers 5
removed): the method must fail in one line that names the extra and, when the package is there but
broken, the reason. Both cases are tested; the adapter's calls follow the package's API."""
from __future__ import annotations

import sys
import textwrap

import pytest

from t2ibaselines.trained.base import MissingExtraError
from t2ibaselines.trained.imagereward import SPEC, ImageRewardScorer


def test_without_image_reward_the_method_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ImageReward", None)
    with pytest.raises(MissingExtraError) as error:
        SPEC.build(None, device="cpu")
    assert str(error.value) == ("imagereward needs the 'imagereward' extra: pip install 'vlmjudge[imagereward]' "
                                "(ImageReward is not installed)")


def test_an_installed_image_reward_that_cannot_import_says_why_in_one_line(tmp_path, monkeypatch):
    """What image-reward 1.5 does on transformers 5, reproduced by a package that fails the same way."""
    package = tmp_path / "ImageReward"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent("""\
        raise ImportError("cannot import name 'apply_chunking_to_forward' from 'transformers.modeling_utils'")
        """))
    monkeypatch.delitem(sys.modules, "ImageReward", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingExtraError) as error:
        ImageRewardScorer(device="cpu")
    message = str(error.value)
    assert "\n" not in message and message.startswith("imagereward needs the 'imagereward' extra")
    assert message.endswith("but import ImageReward fails here: ImportError: cannot import name "
                            "'apply_chunking_to_forward' from 'transformers.modeling_utils'")


def test_the_adapter_calls_the_packages_load_and_score(tmp_path, monkeypatch):
    """A stand-in with the package's two entry points (`load`, `model.score`) records how they are
    called, so the adapter's use of the real API is checked without the model itself."""
    package = tmp_path / "ImageReward"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent("""\
        CALLS = []
        class _Model:
            def score(self, prompt, image):
                CALLS.append(("score", prompt, image.size))
                return {"a red cat": 0.5, "a blue car": float("nan")}[prompt]
        def load(name="ImageReward-v1.0", device="cpu", download_root=None, med_config=None):
            CALLS.append(("load", name, device, download_root, med_config))
            return _Model()
        """))
    monkeypatch.delitem(sys.modules, "ImageReward", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    from PIL import Image

    scorer = ImageRewardScorer(model="ImageReward-v1.0", med_config="med.json", device="cpu")
    good, nan = scorer.score_batch({"image": [Image.new("RGB", (20, 10))] * 2, "prompt": ["a red cat", "a blue car"]})
    calls = sys.modules["ImageReward"].CALLS
    assert calls[0] == ("load", "ImageReward-v1.0", "cpu", None, "med.json")
    assert calls[1:] == [("score", "a red cat", (20, 10)), ("score", "a blue car", (20, 10))]
    assert good.score == 0.5 and nan.status == "failed" and "nan" in nan.error
