"""The VIEScore2 Space: upload a generated image (and optionally a conditioning image), type its
prompt, and see the score, the explanation and the predicted defect cells drawn on the image.
Title and description come from README.md (the card).

The judge comes from the environment (see `vlmjudge.hub.app.app_from_env`): VLMJUDGE_MODEL,
VLMJUDGE_BACKEND, VLMJUDGE_DEVICE, VLMJUDGE_DTYPE. VIESCORE2_FIELDS (e.g. "pq_sc+split+marks"),
VIESCORE2_GRID_SIZE and VIESCORE2_PACK (an instruction pack JSON file: what a fine-tuned
checkpoint was trained with) configure the scorer; a Space sets them as variables.
"""
import dataclasses
import os

from vlmjudge.hub.app import space, unshadow

unshadow(__file__)  # this folder's viescore2.py (the evaluate script) would shadow the package

from viescore2.spec import SPEC  # noqa: E402

#: Environment variable -> (VIEScore2 keyword, conversion).
SCORER_ENV = {"VIESCORE2_FIELDS": ("fields", str), "VIESCORE2_GRID_SIZE": ("grid_size", int),
              "VIESCORE2_PACK": ("pack", str)}

INPUTS_HELP = {
    "image": ("Generated image", "The text-to-image output (or the edited image) to judge."),
    "prompt": ("Prompt", "The prompt the image was generated from (for an edit: the edit instruction)."),
    "conditioning": ("Conditioning image (optional)", "For an edit: the source image. Leave empty for "
                                                      "text-to-image."),
}

#: A bundled example (drawn by metrics/make_examples.py), one value per input column.
EXAMPLES = [["examples/lighthouse.png", "a red and white striped lighthouse on a rocky shore at dusk", None]]


def scorer_config(env=os.environ):
    """VIEScore2 keywords from the VIESCORE2_* variables that are set."""
    return {key: convert(env[name]) for name, (key, convert) in SCORER_ENV.items() if env.get(name)}


config = scorer_config()
demo = space(__file__, dataclasses.replace(SPEC, config=config) if config else SPEC, examples=EXAMPLES,
             inputs_help=INPUTS_HELP, image_output="Defect cells (grid overlay)")

if __name__ == "__main__":
    demo.launch()
