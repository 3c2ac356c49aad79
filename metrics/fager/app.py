"""The FAGER Space: upload an image, type its prompt (and optionally paste a QA set), get the score,
the keep / edit / regenerate decision and every question asked. Title and description come from
README.md (the card).

The judge comes from the environment (VLMJUDGE_MODEL, VLMJUDGE_BACKEND, VLMJUDGE_DEVICE, ...;
see vlmjudge.hub.app.app_from_env). Without a QA set the app builds the rubric with the agents.
FAGER has no spatial output, so the app has no image panel.
"""
from vlmjudge.hub.app import space, unshadow

unshadow(__file__)  # this folder's evaluate script would shadow the package

from fager.spec import SPEC  # noqa: E402

INPUTS_HELP = {
    "image": ("Generated image", "The text-to-image output to check against the facts of its prompt."),
    "prompt": ("Prompt", "The prompt the image was generated from."),
    "references": ("Reference image (optional)", "A real photo of the subject; the agents read facts from it."),
    "qa_set": ("QA set (optional)", "A QA set as JSON, or QA.csv text with this prompt's rows. Leave empty "
                                    "to have the agents build the rubric and its questions first (slower)."),
}

#: Bundled examples (drawn by metrics/make_examples.py), one value per input column: the prompt's
#: three red apples, and two green ones that miss its count and colour.
EXAMPLES = [["examples/three_apples.png", "three red apples on a white plate", None, ""],
            ["examples/two_green_apples.png", "three red apples on a white plate", None, ""]]

demo = space(__file__, SPEC, examples=EXAMPLES, inputs_help=INPUTS_HELP)

if __name__ == "__main__":
    demo.launch()
