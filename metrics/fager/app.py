"""The FAGER Space: upload an image, type its prompt (and optionally paste a QA set), get the score.

The judge comes from the environment (VLMJUDGE_MODEL, VLMJUDGE_BACKEND, VLMJUDGE_DEVICE, ...;
see vlmjudge.demo.app_from_env). Without a QA set the app builds the rubric with the agents.
"""
import os
import sys

# `python app.py` puts this folder first on sys.path, where the evaluate script fager.py
# would shadow the fager package that the method is imported from.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

from vlmjudge.demo import app_from_env  # noqa: E402

demo = app_from_env("fager")

if __name__ == "__main__":
    demo.launch()
