"""JudgePanel: batches per method, [0, 1] scores from each spec's normalize, N/A handling, pickling."""
import pickle

import numpy as np
import pytest
from PIL import Image

from vlmjudge.integrations import INHERIT, JudgePanel, Method
from vlmjudge.integrations.grid import caption_grid, top_finding
from vlmjudge.integrations.panel import image_input, unit_score
from vlmjudge.registry import get_method


def grey(v, size=(8, 6)):
    return Image.new("RGB", size, (v, v, v))


def test_scores_go_through_each_methods_normalize(toys):
    panel = JudgePanel(["integ_bright", "integ_close"])
    images = [grey(51), grey(0), grey(204)]
    refs = [grey(51), grey(255), grey(0)]
    records = panel.score(images, reference=refs)
    assert [r.score for r in records["integ_bright"]] == [51.0, None, 204.0]
    assert panel.unit_scores("integ_bright", records["integ_bright"]) == [0.2, None, 0.8]
    # generated = the judged images, reference from the column: |51-51|=0, |0-255|=255, |204-0|=204
    assert panel.unit_scores("integ_close", records["integ_close"]) == pytest.approx([1.0, 0.0, 1 - 0.8])
    summary = panel.summarize(records)
    assert summary["integ_bright"] == pytest.approx(0.5)  # mean over the two scored images, not over three
    assert summary["integ_bright_na"] == pytest.approx(1 / 3)
    assert summary["integ_close"] == pytest.approx(0.4) and summary["integ_close_na"] == 0.0


def test_an_all_na_batch_has_no_mean(toys):
    summary = JudgePanel("integ_bright").summarize(JudgePanel("integ_bright").score([grey(0), grey(0)]))
    assert summary == {"integ_bright_na": 1.0}


def test_column_names_map_inputs_to_caller_columns(toys):
    panel = JudgePanel(["integ_close"], column_names={"reference": "ref_image"})
    with pytest.raises(ValueError, match="'ref_image'"):
        panel.score([grey(10)], reference=[grey(10)])
    records = panel.score([grey(10)], ref_image=[grey(10)])
    assert records["integ_close"][0].score == pytest.approx(100.0)


def test_bad_inputs_fail_clearly(toys):
    panel = JudgePanel(["integ_bright"])
    with pytest.raises(ValueError, match="1 images but 2 prompts"):
        panel.score([grey(1)], ["a", "b"])
    with pytest.raises(ValueError, match="empty"):
        panel.score([])
    with pytest.raises(ValueError, match="lies outside"):
        broken = JudgePanel(["integ_broken"])
        broken.unit_scores("integ_broken", broken.score([grey(200)])["integ_broken"])
    with pytest.raises(ValueError, match="distinct labels"):
        JudgePanel(["integ_bright", Method("integ_bright")])
    with pytest.raises(TypeError, match="judge setting"):
        JudgePanel(["integ_bright"], judge=3)
    with pytest.raises(KeyError, match="no method"):
        JudgePanel(["no_such_method"]).score([grey(1)])


def test_images_may_be_a_bchw_tensor(toys):
    import torch

    batch = torch.stack([torch.full((3, 4, 4), 0.2), torch.full((3, 4, 4), 0.6)])
    records = JudgePanel(["integ_bright"]).score(batch)["integ_bright"]
    assert [round(r.score) for r in records] == [51, 153]


def test_labels_let_one_method_run_with_two_configs(toys):
    panel = JudgePanel([Method("integ_bright", label="plain"),
                        Method("integ_bright", config={"offset": 51.0}, label="lifted")])
    records = panel.score([grey(51)])
    assert records["plain"][0].score == 51.0 and records["lifted"][0].score == 102.0


def test_panel_pickles_settings_not_judges(toys, vlm_dir):
    kwargs = {"model": vlm_dir, "device": "cpu"}
    panel = JudgePanel([Method("integ_bright", judge=None), Method("terravis")], judge=kwargs)
    panel._scorers["integ_bright"] = object()  # something built that must not travel
    clone = pickle.loads(pickle.dumps(panel))
    assert clone._scorers == {} and clone.judge == kwargs and clone.methods[1].judge is INHERIT
    from vlmjudge import load_judge

    built = JudgePanel(["terravis"], judge=load_judge(vlm_dir, device="cpu"))
    with pytest.raises(TypeError, match="load_judge arguments"):
        pickle.dumps(built)


def test_the_same_judge_settings_share_one_judge(toys, vlm_dir):
    kwargs = {"model": vlm_dir, "device": "cpu"}
    a = JudgePanel(["terravis"], judge=kwargs)
    b = JudgePanel([Method("terravis", judge=dict(kwargs), label="other")])
    assert a.judge_of("terravis") is b.judge_of("other")
    assert JudgePanel([Method("integ_bright", judge=None)], judge=kwargs).judge_of("integ_bright") is None


UNIT_MAPS = {"terravis": [(0.0, 0.0), (0.37, 0.37), (1.0, 1.0)],
             "viescore2": [(0.0, 0.0), (7.5, 0.75), (10.0, 1.0)],
             "fager": [(0.0, 0.0), (62.5, 0.625), (100.0, 1.0)],
             "regeneration": [(0.0, 0.0), (47.0, 0.47), (100.0, 1.0), (120.0, 1.0)]}


@pytest.mark.parametrize("name", sorted(UNIT_MAPS))
def test_each_registered_method_maps_its_range_onto_unit_interval(name):
    """The maps the faces rely on: TerraVis as is, VIEScore2 / 10, FAGER / 100, Regeneration / 100 clipped."""
    spec = get_method(name)
    for raw, unit in UNIT_MAPS[name]:
        assert unit_score(spec, raw) == pytest.approx(unit), (name, raw)


def test_the_judged_image_goes_to_image_or_generated():
    assert image_input(get_method("regeneration")) == "generated"
    assert image_input(get_method("terravis")) == "image"


def test_grid_and_top_finding():
    assert top_finding("**TerraVis**\n\n- **Floating object** (physical, major): a cup `in air`") == \
        "Floating object (physical, major): a cup in air"
    assert top_finding("no list here") == ""
    images = [Image.fromarray(np.full((20, 30, 3), v, np.uint8)) for v in (0, 100, 200)]
    grid = caption_grid(images, ["a", "b", "c"], cell=64, columns=2)
    assert grid.size == (128, 2 * (64 + 52))
    assert grid.getpixel((32, 32)) == (0, 0, 0) and grid.getpixel((96, 32)) == (100, 100, 100)
    with pytest.raises(ValueError, match="captions"):
        caption_grid(images, ["a"])
