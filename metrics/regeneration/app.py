"""The Image Regeneration Space: upload a reference and a regeneration, get CLIP %, DINO % and the
score. Title and description come from README.md (the card).

Encoders come from REGENERATION_CLIP_MODEL / REGENERATION_DINO_MODEL (defaults: the public
release's CLIP ViT-B/32 and DINOv2-base) and REGENERATION_POOLING; set VLMJUDGE_MODEL (and
VLMJUDGE_BACKEND, ...) to add an MLLM's content and perceptual ratings. The method has no image
output, so the app has no image panel.
"""
import os
from dataclasses import replace

from vlmjudge.hub.app import space, unshadow

unshadow(__file__)  # this folder's evaluate script would shadow the package

from regeneration.spec import NO_JUDGE, SPEC  # noqa: E402

INPUTS_HELP = {
    "reference": ("Reference image", "The original image the text-to-image model was asked to paint again."),
    "generated": ("Regenerated image", "The model's regeneration of the reference, from its own prompt."),
}

#: Bundled example pairs (drawn by metrics/make_examples.py): one regeneration moves the lighthouse,
#: recolours its stripes and drops the rocks; the other only darkens the apples' red.
EXAMPLES = [["examples/lighthouse_reference.png", "examples/lighthouse_regenerated.png"],
            ["examples/apples_reference.png", "examples/apples_regenerated.png"]]

config = {key: os.environ[env] for key, env in (("clip_model", "REGENERATION_CLIP_MODEL"),
                                                ("dino_model", "REGENERATION_DINO_MODEL"),
                                                ("pooling", "REGENERATION_POOLING"),
                                                ("device", "VLMJUDGE_DEVICE")) if os.environ.get(env)}
spec = replace(SPEC, config=config)
demo = space(__file__, spec, examples=EXAMPLES, inputs_help=INPUTS_HELP,
             judge=None if os.environ.get("VLMJUDGE_MODEL") else NO_JUDGE)

if __name__ == "__main__":
    demo.launch()
