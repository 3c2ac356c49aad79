"""The TerraVis Space: upload an image and see its score, its eligibility, and each detected
violation with its evidence and severity. Title and description come from README.md (the card).

The judge comes from the environment (see `vlmjudge.hub.app.app_from_env`): VLMJUDGE_MODEL,
VLMJUDGE_BACKEND, VLMJUDGE_DEVICE, VLMJUDGE_DTYPE. TERRAVIS_PACK (a shipped pack name or a
JSON file), TERRAVIS_VARIANT, TERRAVIS_LAM and TERRAVIS_ALPHA configure the scorer; a Space
sets them as variables. TerraVis has no spatial output, so the app has no image panel.
"""
import dataclasses
import os

from vlmjudge.hub.app import space, unshadow

unshadow(__file__)  # this folder's terravis.py (the evaluate script) would shadow the package

from terravis.spec import SPEC  # noqa: E402

#: Environment variable -> (TerraVis keyword, conversion).
SCORER_ENV = {"TERRAVIS_PACK": ("pack", str), "TERRAVIS_VARIANT": ("variant", str),
              "TERRAVIS_LAM": ("lam", float), "TERRAVIS_ALPHA": ("alpha", float)}

INPUTS_HELP = {"image": ("Image to judge", "Any generated image; no prompt is needed. Abstract art, logos, "
                                           "charts and screenshots are not applicable (N/A).")}

#: Bundled examples (drawn by metrics/make_examples.py): a plausible scene, and one with a
#: floating house under two suns.
EXAMPLES = [["examples/cottage.png"], ["examples/floating_house.png"]]


def scorer_config(env=os.environ):
    """TerraVis keywords from the TERRAVIS_* variables that are set."""
    return {key: convert(env[name]) for name, (key, convert) in SCORER_ENV.items() if env.get(name)}


config = scorer_config()
demo = space(__file__, dataclasses.replace(SPEC, config=config) if config else SPEC, examples=EXAMPLES,
             inputs_help=INPUTS_HELP)

if __name__ == "__main__":
    demo.launch()
