"""Gradio, imported with its telemetry off unless the user turned it on.

At start Gradio asks its server for the newest version and sends usage analytics (the app's
components, how it was launched), from threads, whenever `GRADIO_ANALYTICS_ENABLED` is unset or
exactly `True`; any other value turns both off (and Gradio then sets `HF_HUB_DISABLE_TELEMETRY`).
Every app of this package imports Gradio through `import_gradio`, which sets the variable to
`False` unless the user set it: a labelling or scoring app talks to its visitors and nobody else.
"""
from __future__ import annotations

import os
from types import ModuleType

#: The switch Gradio reads (in `gradio.analytics.analytics_enabled`) when a `Blocks` is made.
ANALYTICS_VARIABLE = "GRADIO_ANALYTICS_ENABLED"


def import_gradio() -> ModuleType:
    """`gradio`, after switching its analytics and version check off where the user left them unset;
    an ImportError saying which extra to install when it is missing."""
    os.environ.setdefault(ANALYTICS_VARIABLE, "False")
    try:
        import gradio
    except ImportError as error:
        raise ImportError(f"the apps need gradio ({error}): pip install 'vlmjudge[demo]'") from error
    return gradio
