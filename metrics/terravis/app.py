"""The TerraVis Space: upload an image and see its score, its eligibility, and each detected
violation with its evidence and severity.

The judge comes from the environment (see `vlmjudge.demo.app_from_env`): VLMJUDGE_MODEL,
VLMJUDGE_BACKEND, VLMJUDGE_DEVICE, VLMJUDGE_DTYPE. TERRAVIS_PACK (a shipped pack name or a
JSON file), TERRAVIS_VARIANT, TERRAVIS_LAM and TERRAVIS_ALPHA configure the scorer; a Space
sets them as variables.
"""
import dataclasses
import os
import sys

# `python app.py` puts this folder first on sys.path, where the evaluate script terravis.py
# would shadow the terravis package the method comes from.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

from terravis.spec import SPEC  # noqa: E402
from vlmjudge.demo import app_from_env  # noqa: E402

#: Environment variable -> (TerraVis keyword, conversion).
SCORER_ENV = {"TERRAVIS_PACK": ("pack", str), "TERRAVIS_VARIANT": ("variant", str),
              "TERRAVIS_LAM": ("lam", float), "TERRAVIS_ALPHA": ("alpha", float)}


def scorer_config(env=os.environ):
    """TerraVis keywords from the TERRAVIS_* variables that are set."""
    return {key: convert(env[name]) for name, (key, convert) in SCORER_ENV.items() if env.get(name)}


config = scorer_config()
demo = app_from_env(dataclasses.replace(SPEC, config=config) if config else "terravis")

if __name__ == "__main__":
    demo.launch()
