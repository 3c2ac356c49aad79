"""The VIEScore2 Space: upload a generated image (and optionally a conditioning image), type its
prompt, and see the score, the explanation and the predicted defect cells drawn on the image.

The judge comes from the environment (see `vlmjudge.demo.app_from_env`): VLMJUDGE_MODEL,
VLMJUDGE_BACKEND, VLMJUDGE_DEVICE, VLMJUDGE_DTYPE. VIESCORE2_FIELDS (e.g. "pq_sc+split+marks"),
VIESCORE2_GRID_SIZE and VIESCORE2_PACK (an instruction pack JSON file: what a fine-tuned
checkpoint was trained with) configure the scorer; a Space sets them as variables.
"""
import dataclasses
import os

from vlmjudge.demo import app_from_env, unshadow

unshadow(__file__)  # this folder's viescore2.py (the evaluate script) would shadow the package

from viescore2.spec import SPEC  # noqa: E402

#: Environment variable -> (VIEScore2 keyword, conversion).
SCORER_ENV = {"VIESCORE2_FIELDS": ("fields", str), "VIESCORE2_GRID_SIZE": ("grid_size", int),
              "VIESCORE2_PACK": ("pack", str)}


def scorer_config(env=os.environ):
    """VIEScore2 keywords from the VIESCORE2_* variables that are set."""
    return {key: convert(env[name]) for name, (key, convert) in SCORER_ENV.items() if env.get(name)}


config = scorer_config()
demo = app_from_env(dataclasses.replace(SPEC, config=config) if config else "viescore2")

if __name__ == "__main__":
    demo.launch()
