"""Image generators: checked callables, diffusers text-to-image and image-edit adapters over tiny
random pipelines built offline and loaded with `DiffusionPipeline.from_pretrained`."""
from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from PIL import Image

from vlmjudge.generators import (
    CallableEditor,
    CallableGenerator,
    DiffusersImageEdit,
    DiffusersTextToImage,
    GeneratorError,
    ImageEdit,
    TextToImage,
    generator_name,
    is_module_spec,
    load_editor,
    load_generator,
)

pytest.importorskip("diffusers")


@pytest.fixture(scope="module")
def pipelines(tmp_path_factory):
    from vlmjudge.testing.tiny_diffusers import (
        build_tiny_image_edit,
        build_tiny_text_to_image,
    )

    root = tmp_path_factory.mktemp("tiny_diffusers")
    return {"t2i": build_tiny_text_to_image(root / "t2i"), "edit": build_tiny_image_edit(root / "edit")}


def solid(prompts, seeds):
    return [Image.new("RGB", (8, 8), (seed % 256, len(p) % 256, 0)) for p, seed in zip(prompts, seeds)]


def test_callable_generator_checks_its_contract():
    gen = CallableGenerator(solid, name="solid")
    out = gen(["a", "bb"], [1, 2])
    assert [im.getpixel((0, 0)) for im in out] == [(1, 1, 0), (2, 2, 0)]
    assert isinstance(gen, TextToImage) and gen.name == "solid"
    with pytest.raises(GeneratorError, match="returned 1 images for 2"):
        CallableGenerator(lambda p, s: solid(p, s)[:1])(["a", "b"], [1, 2])
    with pytest.raises(GeneratorError, match="unusable image"):
        CallableGenerator(lambda p, s: ["not an image"] * len(p))(["a"], [1])
    with pytest.raises(ValueError, match="2 prompts but 1 seeds"):
        gen(["a", "b"], [1])
    with pytest.raises(ValueError, match="empty"):
        gen(["  "], [1])
    with pytest.raises(TypeError, match="seed 0"):
        gen(["a"], [1.5])
    assert generator_name(solid).endswith("solid")


def test_callable_editor_checks_its_contract():
    edit = CallableEditor(lambda imgs, ins, seeds: [im.transpose(Image.FLIP_LEFT_RIGHT) for im in imgs], name="flip")
    src = Image.new("RGB", (4, 2), (0, 0, 0))
    src.putpixel((0, 0), (255, 0, 0))
    (out,) = edit([src], ["flip it"], [0])
    assert out.getpixel((3, 0)) == (255, 0, 0) and isinstance(edit, ImageEdit)
    with pytest.raises(ValueError, match="1 images but 2 instructions"):
        edit([src], ["a", "b"], [0, 1])


def test_diffusers_text_to_image_is_seeded_and_batch_invariant(pipelines):
    gen = load_generator(pipelines["t2i"], device="cpu", num_inference_steps=2, guidance_scale=1.0, batch_size=3)
    assert isinstance(gen, DiffusersTextToImage) and type(gen.pipeline).__name__ == "StableDiffusionPipeline"
    prompts = ["a red cat", "a blue dog", "a green house"]
    batched = gen(prompts, [0, 1, 2])
    assert all(im.size == (32, 32) and im.mode == "RGB" for im in batched)
    single = [gen([p], [s])[0] for p, s in zip(prompts, [0, 1, 2])]
    for a, b in zip(batched, single):
        assert np.abs(np.asarray(a, dtype=int) - np.asarray(b, dtype=int)).max() <= 2
    again = gen(prompts[:1], [0])[0]
    assert np.array_equal(np.asarray(again), np.asarray(single[0]))
    other = gen(prompts[:1], [7])[0]
    assert not np.array_equal(np.asarray(other), np.asarray(single[0]))
    assert gen.manifest()["pipeline"] == "StableDiffusionPipeline"


def test_diffusers_image_edit(pipelines):
    edit = load_editor(pipelines["edit"], device="cpu", num_inference_steps=2)
    assert isinstance(edit, DiffusersImageEdit)
    assert type(edit.pipeline).__name__ == "StableDiffusionInstructPix2PixPipeline"
    src = [Image.new("RGB", (32, 32), (200, 40, 40)), Image.new("RGB", (32, 32), (40, 40, 200))]
    out = edit(src, ["make it blue", "make it red"], [0, 0])
    assert len(out) == 2 and all(im.size == (32, 32) for im in out)
    assert np.array_equal(np.asarray(edit(src[:1], ["make it blue"], [0])[0]), np.asarray(out[0]))


def test_load_generator_from_module_spec(monkeypatch):
    module = types.ModuleType("toy_generators_for_test")
    module.solid = solid
    module.make = lambda: solid
    monkeypatch.setitem(sys.modules, "toy_generators_for_test", module)
    assert is_module_spec("toy_generators_for_test:solid") and not is_module_spec("org/model")
    gen = load_generator("toy_generators_for_test:solid")
    assert gen.name == "toy_generators_for_test:solid" and len(gen(["a"], [3])) == 1
    assert load_generator("toy_generators_for_test:make", factory=True)(["a"], [3])[0].getpixel((0, 0)) == (3, 1, 0)
    with pytest.raises(GeneratorError, match="no attribute"):
        load_generator("toy_generators_for_test:missing")
    with pytest.raises(GeneratorError, match="cannot import"):
        load_generator("no_such_module_xyz:fn")
    with pytest.raises(TypeError):
        load_generator(42)
