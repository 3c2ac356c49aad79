"""VQAScore as a registered method (`vlmjudge.methods` entry point `vqascore =
t2ibaselines.vqascore.spec:SPEC`): the faces, `vlmjudge compare` and `agreement` find it by name.

A batch has `image` and `prompt` columns and optionally `id`; the score is P("Yes") in [0, 1].
Importing this module loads no model library: `build` imports the scorer when called.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from vlmjudge.registry import DEFAULT_JUDGE_MODEL, MethodSpec, renders
from vlmjudge.stats.human_sets.protocol import HumanProtocol
from vlmjudge.stats.statistic import ColumnMean, Statistic
from vlmjudge.text import format_score

from .core import VQAScore, VQAScoreRecord


def score_row(record: Mapping) -> Any:
    """An image's P(Yes); NaN for a failed image (the paired statistics count it as missing)."""
    return math.nan if record.get("score") is None else [float(record["score"])]


def mass_row(record: Mapping) -> Any:
    """P(Yes) + P(No) of an image, where both were seen: how much the judge answered yes or no."""
    mass = record.get("option_mass")
    return None if mass is None or record.get("truncated") else [float(mass)]


STATISTICS: dict[str, Statistic] = {
    "mean_score": Statistic("mean VQAScore", score_row, ColumnMean(0), id_key="id",
                            description="mean full-vocabulary P(Yes) over scored images"),
    "mean_option_mass": Statistic("mean P(Yes) + P(No)", mass_row, ColumnMean(0), id_key="id",
                                  higher_is_better=None, group="diagnostics",
                                  description="how much of the first answer token went to Yes or No"),
}

#: People rate how well an image matches its prompt; the judge's number is the record's score.
PROTOCOL = HumanProtocol(human_axis="human alignment rating", judge_axis="VQAScore P(Yes)")


def build(judge: Any, pack: Any = None) -> VQAScore:
    """A scorer over `judge`; `pack`: a shipped pack name, a JSON file or a dict over the default."""
    return VQAScore(judge, pack=pack)


@renders("vqascore", VQAScoreRecord)
def render(record: VQAScoreRecord) -> dict[str, Any]:
    """The score and a table of the two options' probabilities, or why there is no score.

    Examples:
        >>> render(VQAScoreRecord(id="a", prompt="a cat", score=0.75, p_yes=0.75, p_no=0.125, option_mass=0.875))
        {'score_text': '0.7500', 'markdown': '| P(Yes) | P(No) | P(Yes) + P(No) |\\n|---|---|---|\\n| 0.7500 | 0.1250 | 0.8750 |'}
    """
    if record.score is None:
        return {"score_text": "n/a", "markdown": f"**VQAScore**: no score ({record.error})."}
    shown = [("-" if v is None else format_score(v)) for v in (record.p_yes, record.p_no, record.option_mass)]
    return {"score_text": format_score(record.score),
            "markdown": "| P(Yes) | P(No) | P(Yes) + P(No) |\n|---|---|---|\n| " + " | ".join(shown) + " |"}


#: VQAScore as a registered method (`vlmjudge.get_method("vqascore")`): every face reads it.
SPEC = MethodSpec(
    name="vqascore", inputs=VQAScore.inputs, optional_inputs=("id",), build=build, render=render,
    score_range=(0.0, 1.0), default_model=DEFAULT_JUDGE_MODEL, config={"pack": None},
    statistics=STATISTICS, human=PROTOCOL,
    description="VQAScore: the judge's full-vocabulary probability of answering Yes to 'Does this figure show "
                "\"<prompt>\"? Please answer yes or no.', in [0, 1].",
)

__all__ = ["PROTOCOL", "SPEC", "STATISTICS", "build", "render"]
