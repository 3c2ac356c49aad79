"""The VIEScore2 Space: upload a generated image (and optionally a conditioning image), type its
prompt, and see the score, the explanation and the predicted defect cells drawn on the image.

The judge comes from the environment (see `vlmjudge.demo.app_from_env`): VLMJUDGE_MODEL,
VLMJUDGE_BACKEND, VLMJUDGE_DEVICE, VLMJUDGE_DTYPE.
"""
from vlmjudge.demo import app_from_env, unshadow

unshadow(__file__)  # this folder's evaluate script would shadow the package

demo = app_from_env("viescore2")

if __name__ == "__main__":
    demo.launch()
