"""The FAGER agents over a judge: fact proposal, reference-guided extraction, verification,
QA generation, evaluation and feedback.

Every agent asks for JSON under a grammar built from the pydantic models of
`fager.schema` (narrowed for a decoder there), and every output is read back
through the same model: what does not validate is an `AgentOutput` with an error,
counted by the caller, never a guess. Text agents (proposal, verification, QA) run on
`text_judge`; agents that look at images (extraction, evaluation, feedback) on `judge`.
Each stage is one batched `generate` call over all prompts or images, and every request
carries `meta = {"item_id", "question_id", "stage"}` so answers can be replayed by key.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vlmjudge.requests import Answer, Constraint, Decoding, Request

from .schema import model_schema, qa_schema, verification_schema
from .pack import PromptPack, load_pack
from .parsing import AnswerParseError, load_json, strip_fence
from .records import QuestionResult
from .schema import (
    MAX_QA_ITEMS, FactEntry, QAItem, QAItems, QuestionAnswer, ReferenceExtraction, Rubric, Verification,
)

M = TypeVar("M", bound=BaseModel)

#: question_id of each agent's request (extraction adds ":<reference number>").
STAGE_IDS = {"proposal": "proposal", "extraction": "extraction", "verification": "verification",
             "qa": "qa", "regenerate": "feedback", "edit": "feedback"}


class AgentError(ValueError):
    """An agent's output could not be read into its schema."""


class RegenerationConstraint(BaseModel):
    """The regenerate feedback: a short constraint appended to the original prompt."""

    model_config = ConfigDict(extra="forbid")
    constraint: str = Field(min_length=1, max_length=600)


class EditInstruction(BaseModel):
    """The edit feedback: one instruction naming only the factual changes needed."""

    model_config = ConfigDict(extra="forbid")
    instruction: str = Field(min_length=1, max_length=800)


class QuestionList(BaseModel):
    """The QA agent's output: one question per rubric fact, in the rubric's order."""

    model_config = ConfigDict(extra="forbid")
    questions: list[str] = Field(max_length=MAX_QA_ITEMS)


FEEDBACK_MODELS: dict[str, type[BaseModel]] = {"regenerate": RegenerationConstraint, "edit": EditInstruction}


@dataclass
class AgentOutput(Generic[M]):
    """One agent answer: the validated value, or why there is none (with the raw text)."""

    stage: str
    value: M | None
    error: str | None = None
    raw: str = ""
    finish_reason: str = "stop"

    @property
    def ok(self) -> bool:
        return self.value is not None


def read_output(text: str, model: type[M]) -> M:
    """The JSON object in `text` validated as `model`; AgentError when there is none."""
    if not isinstance(text, str) or not text.strip():
        raise AgentError("empty output")
    body = strip_fence(text)
    start, end = body.find("{"), body.rfind("}")
    if start == -1 or end < start:
        raise AgentError(f"no JSON object in {_preview(text)}")
    try:
        data = load_json(body[start:end + 1])
    except AnswerParseError as error:  # bad JSON, nesting deeper than the stack, oversized integers
        raise AgentError(str(error)) from None
    try:
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise AgentError(f"{model.__name__} invalid at {where or '<root>'}: {first['msg']} "
                         f"({error.error_count()} error(s))") from None


def to_output(stage: str, answer: Answer, model: type[M]) -> AgentOutput[M]:
    """An Answer read as `model`; a failed or truncated answer is an error, not a value."""
    if not answer.ok:
        return AgentOutput(stage, None, "the judge failed to answer", answer.text, answer.finish_reason)
    try:
        value = read_output(answer.text, model)
    except AgentError as error:
        reason = str(error)
        if answer.finish_reason == "length":
            reason = f"ran out of tokens: {reason}"
        return AgentOutput(stage, None, reason, answer.text, answer.finish_reason)
    return AgentOutput(stage, value, None, answer.text, answer.finish_reason)


def _preview(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


# ---- what the agents are shown -------------------------------------------------------------

def format_rubric(rubric: Rubric) -> str:
    """A rubric as one line per fact, `level / category / importance: fact`."""
    lines = [f"- {f.level} / {f.category} / {f.importance}: {f.fact}" for f in rubric.facts()]
    return "\n".join(lines) if lines else "(no facts)"


def format_evidence(extractions: Sequence[ReferenceExtraction]) -> str:
    """Reference evidence, one block per usable image; images that show nothing are left out."""
    blocks = []
    for number, extraction in enumerate(extractions, start=1):
        if extraction.status == "none":
            continue
        elements = "; ".join(extraction.visual_elements) or "none listed"
        blocks.append(f"- reference {number} ({extraction.status}, confidence {extraction.confidence:.2f}): "
                      f"{extraction.summary} Visible: {elements}")
    return "\n".join(blocks) if blocks else "(no reference evidence)"


def format_facts(facts: Sequence[FactEntry]) -> str:
    """Facts numbered in order with their place in the rubric, for the QA agent."""
    return "\n".join(f"{i}. [{f.level} / {f.category} / {f.importance}] {f.fact}"
                     for i, f in enumerate(facts, start=1))


def format_failed(questions: Sequence[QuestionResult | QAItem]) -> str:
    """The checks an image did not satisfy, with the evaluator's answer and rationale."""
    lines = []
    for q in questions:
        answer = getattr(q, "answer", None)
        rationale = getattr(q, "rationale", "")
        head = f"- [{answer}] {q.question}" if answer else f"- {q.question}"
        lines.append(f"{head} (fact: {q.source_fact})" + (f" Evaluator: {rationale}" if rationale else ""))
    return "\n".join(lines) if lines else "(none)"


# ---- the agents ------------------------------------------------------------------------------

@dataclass
class FagerAgents:
    """The agents of one pack over an image judge and an (optional, separate) text judge."""

    judge: Any
    text_judge: Any = None
    pack: PromptPack | Any = None
    _constraints: dict[str, Constraint] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.judge is None:
            raise ValueError("FagerAgents needs a judge")
        self.pack = load_pack(self.pack)
        if self.text_judge is None:
            self.text_judge = self.judge

    # -- request building ----------------------------------------------------------------
    def _constraint(self, stage: str) -> Constraint:
        if stage not in self._constraints:
            limits = self.pack.agent(stage).limits
            if stage == "proposal":
                schema = model_schema(Rubric, limits)
            elif stage == "extraction":
                schema = model_schema(ReferenceExtraction, limits)
            elif stage == "verification":
                schema = verification_schema(Verification, limits)
            elif stage == "evaluation":
                schema = model_schema(QuestionAnswer, limits)
            else:
                schema = model_schema(FEEDBACK_MODELS[stage], limits)
            self._constraints[stage] = Constraint.json_schema(schema)
        return self._constraints[stage]

    def request(self, stage: str, text: str, *, images: Sequence[Any] = (), item_id: Any,
                question_id: Any, constraint: Constraint | None = None) -> Request:
        """One agent request with the pack's system prompt, budget and grammar."""
        agent = self.pack.agent(stage)
        return Request(images=list(images), text=text, system=agent.system or None,
                       decoding=Decoding(max_new_tokens=agent.max_new_tokens),
                       constraint=constraint or self._constraint(stage),
                       meta={"item_id": item_id, "question_id": question_id, "stage": stage})

    # -- rubric building (one batched call per stage) -----------------------------------------
    def propose(self, prompts: Sequence[str], ids: Sequence[Any]) -> list[AgentOutput[Rubric]]:
        """Fact proposal, text only: a three-level rubric per prompt from prior knowledge."""
        requests = [self.request("proposal", self.pack.user_text("proposal", prompt=p), item_id=i,
                                 question_id=STAGE_IDS["proposal"]) for p, i in zip(prompts, ids, strict=True)]
        answers = self.text_judge.generate(requests)
        return [to_output("proposal", a, Rubric) for a in answers]

    def extract(self, prompts: Sequence[str], ids: Sequence[Any],
                references: Sequence[Sequence[Any]]) -> list[list[AgentOutput[ReferenceExtraction]]]:
        """Reference-guided extraction: one request per reference image (0..k per prompt),
        visible evidence only."""
        requests, owners = [], []
        for n, (prompt, item_id, images) in enumerate(zip(prompts, ids, references, strict=True)):
            for j, image in enumerate(images):
                requests.append(self.request("extraction", self.pack.user_text("extraction", prompt=prompt),
                                             images=[image], item_id=item_id, question_id=f"extraction:{j}"))
                owners.append(n)
        out: list[list[AgentOutput[ReferenceExtraction]]] = [[] for _ in prompts]
        if requests:
            for owner, answer in zip(owners, self.judge.generate(requests)):
                out[owner].append(to_output("extraction", answer, ReferenceExtraction))
        return out

    def verify(self, prompts: Sequence[str], ids: Sequence[Any], proposals: Sequence[Rubric],
               evidence: Sequence[Sequence[ReferenceExtraction]]) -> list[AgentOutput[Verification]]:
        """Verification: the verified rubric with explicit drop and add decisions and reasons."""
        requests = [self.request("verification",
                                 self.pack.user_text("verification", prompt=p, proposal=format_rubric(r),
                                                     evidence=format_evidence(e)),
                                 item_id=i, question_id=STAGE_IDS["verification"])
                    for p, i, r, e in zip(prompts, ids, proposals, evidence, strict=True)]
        return [to_output("verification", a, Verification) for a in self.text_judge.generate(requests)]

    def write_questions(self, prompts: Sequence[str], ids: Sequence[Any],
                        rubrics: Sequence[Rubric]) -> list[AgentOutput[QAItems]]:
        """QA generation: exactly one yes-question per fact, in fact order (the grammar pins the
        count); the items carry their fact's level, category, importance and text. A rubric
        without facts gets an empty QA list without asking."""
        limits = self.pack.agent("qa").limits
        out: list[AgentOutput[QAItems] | None] = []
        requests, owners = [], []
        for n, (prompt, item_id, rubric) in enumerate(zip(prompts, ids, rubrics, strict=True)):
            facts = rubric.facts()
            if not facts:
                out.append(AgentOutput("qa", QAItems(items=[])))
                continue
            if len(facts) > limits.items:
                out.append(AgentOutput("qa", None, f"{len(facts)} facts exceed the QA limit of {limits.items}"))
                continue
            out.append(None)
            constraint = Constraint.json_schema(qa_schema(len(facts), limits))
            requests.append(self.request("qa", self.pack.user_text("qa", prompt=prompt, facts=format_facts(facts)),
                                         item_id=item_id, question_id=STAGE_IDS["qa"], constraint=constraint))
            owners.append(n)
        if requests:
            for owner, answer in zip(owners, self.text_judge.generate(requests)):
                out[owner] = qa_items(to_output("qa", answer, QuestionList), rubrics[owner].facts())
        return out  # type: ignore[return-value]

    # -- evaluation and feedback ----------------------------------------------------------------
    def evaluation_request(self, image: Any, question: str, item_id: Any, position: int) -> Request:
        """One question about one image; the shared instructions come before the question so
        requests on the same image share a prefix."""
        return self.request("evaluation", self.pack.user_text("evaluation", question=question), images=[image],
                            item_id=item_id, question_id=position)

    def feedback_request(self, decision: str, image: Any, prompt: str,
                         failed: Sequence[QuestionResult], item_id: Any) -> Request:
        """A regeneration constraint (regenerate) or an edit instruction (edit) for one image."""
        if decision not in FEEDBACK_MODELS:
            raise ValueError(f"feedback is generated for regenerate or edit, not {decision!r}")
        text = self.pack.user_text(decision, prompt=prompt, failed=format_failed(failed))
        return self.request(decision, text, images=[image], item_id=item_id, question_id=STAGE_IDS[decision])

    @staticmethod
    def read_feedback(decision: str, answer: Answer) -> AgentOutput[BaseModel]:
        """The feedback answer validated against its decision's model."""
        return to_output(decision, answer, FEEDBACK_MODELS[decision])


def feedback_text(output: AgentOutput[BaseModel]) -> str | None:
    """The feedback string of a valid feedback output."""
    if output.value is None:
        return None
    value = output.value
    return value.constraint if isinstance(value, RegenerationConstraint) else value.instruction


def qa_items(output: AgentOutput[QuestionList], facts: Sequence[FactEntry]) -> AgentOutput[QAItems]:
    """The QA agent's questions paired with their facts and validated as QAItems; a count that
    does not match the facts (possible without a grammar) or a blank question is an error."""
    if output.value is None:
        return AgentOutput("qa", None, output.error, output.raw, output.finish_reason)
    questions = output.value.questions
    if len(questions) != len(facts):
        return AgentOutput("qa", None, f"{len(questions)} questions for {len(facts)} facts", output.raw,
                           output.finish_reason)
    items = []
    for position, (question, fact) in enumerate(zip(questions, facts)):
        try:
            items.append(QAItem(question=question.strip(), level=fact.level, category=fact.category,
                                importance=fact.importance, source_fact=fact.fact))
        except ValidationError as error:
            return AgentOutput("qa", None, f"question {position} invalid: {error.errors()[0]['msg']}", output.raw,
                               output.finish_reason)
    items = QAItems(items=items)
    return AgentOutput("qa", items, None, output.raw, output.finish_reason)


__all__ = [
    "AgentError", "AgentOutput", "EditInstruction", "FEEDBACK_MODELS", "FagerAgents", "QuestionList",
    "RegenerationConstraint", "qa_items",
    "STAGE_IDS", "feedback_text", "format_evidence", "format_facts", "format_failed", "format_rubric",
    "read_output", "to_output",
]
