"""The FAGER Space: upload an image, type its prompt (and optionally paste a QA set), get the score.

The judge comes from the environment (VLMJUDGE_MODEL, VLMJUDGE_BACKEND, VLMJUDGE_DEVICE, ...;
see vlmjudge.demo.app_from_env). Without a QA set the app builds the rubric with the agents.
"""
from vlmjudge.demo import app_from_env, unshadow

unshadow(__file__)  # this folder's evaluate script would shadow the package

demo = app_from_env("fager")

if __name__ == "__main__":
    demo.launch()
