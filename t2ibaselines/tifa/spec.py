"""TIFA as a registered method (`vlmjudge.methods` entry point `tifa = t2ibaselines.tifa.spec:SPEC`):
the faces, `vlmjudge compare` and `agreement` find it by name.

A batch has `image` and `prompt` columns and optionally `id` and `questions` (an image's own
questions in TIFA's layout); the score is the share of questions answered as expected, in [0, 1].
"""
from __future__ import annotations

from typing import Any

from vlmjudge.registry import DEFAULT_JUDGE_MODEL, MethodSpec, renders
from vlmjudge.stats.human_sets.protocol import HumanProtocol
from vlmjudge.text import format_score

from .core import Tifa
from .records import TifaRecord
from .statistics import STATISTICS

#: People rate how faithful an image is to its prompt (TIFA v1.0's 1-5 ratings); the judge's number is the score.
PROTOCOL = HumanProtocol(human_axis="human faithfulness rating", judge_axis="TIFA score")


def build(judge: Any, pack: Any = None, qa: Any = None, generate: bool = True, verify: bool = True) -> Tifa:
    """A scorer over `judge`; `qa`: the QA file (TIFA's released one, or one in its layout);
    `generate`/`verify`: write and check questions for prompts the QA file lacks."""
    return Tifa(judge, pack=pack, qa=qa, generate=generate, verify=verify)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


@renders("tifa", TifaRecord)
def render(record: TifaRecord) -> dict[str, Any]:
    """The score and a table of every question, its expected answer and the judge's.

    Examples:
        >>> from t2ibaselines.tifa.records import QuestionResult
        >>> q = QuestionResult("is there a dog?", ["yes", "no"], "yes", "animal/human", answer="yes")
        >>> shown = render(TifaRecord(id="a", prompt="a dog", source="qa_file", questions=[q]))
        >>> shown["score_text"], shown["markdown"].splitlines()[-1]
        ('1.000 (1/1)', '| is there a dog? | animal/human | yes | yes | yes |')
    """
    lines = []
    if record.score is None:
        score_text = "n/a"
        lines.append(f"**TIFA**: no score ({'; '.join(record.errors) or 'no questions'}).")
    else:
        n_correct = sum(bool(q.correct) for q in record.questions)
        score_text = f"{format_score(record.score)} ({n_correct}/{len(record.questions)})"
    if record.questions:
        lines += ["| question | element type | expected | answer | correct |", "|---|---|---|---|---|"]
        for q in record.questions:
            mark = "-" if q.correct is None else ("yes" if q.correct else "no")
            lines.append(f"| {_cell(q.question)} | {q.element_type} | {_cell(q.expected)} | "
                         f"{_cell(q.answer if q.answer is not None else q.error)} | {mark} |")
    return {"score_text": score_text, "markdown": "\n".join(lines)}


#: TIFA as a registered method (`vlmjudge.get_method("tifa")`): every face reads it.
SPEC = MethodSpec(
    name="tifa", inputs=Tifa.inputs, optional_inputs=("id", "questions"), build=build, render=render,
    score_range=(0.0, 1.0), default_model=DEFAULT_JUDGE_MODEL,
    config={"pack": None, "qa": None, "generate": True, "verify": True},
    statistics=STATISTICS, human=PROTOCOL,
    description="TIFA: the share of an image's multiple-choice questions (TIFA v1.0's, or written by the judge "
                "in its format) the judge answers as expected, with accuracy per element type, in [0, 1].",
)

__all__ = ["PROTOCOL", "SPEC", "build", "render"]
