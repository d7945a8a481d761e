"""Judge metrics: MCE's stock session ids with our own rubrics, and inline prompt metrics.

Each stock id is registered under its lower_snake_case name with the MCE id as an alias,
so ``GoalSuccessRate`` and ``goal_success_rate`` bind the same metric; ``metrics.json``
always uses the MCE id. Every stock metric is binary: a vote is 1 or 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mas.library.eval.metrics.base import UNITS, Direction, JudgeMetric, UnitName


@dataclass(frozen=True)
class StockJudge:
    """A stock judge metric: MCE id, registry name, rubric and required inputs."""

    mce_id: str
    name: str
    question: str
    description: str
    inputs: tuple[str, ...] = ("conversation",)


STOCK_JUDGES: tuple[StockJudge, ...] = (
    StockJudge(
        "GoalSuccessRate",
        "goal_success_rate",
        "Score 1 if, by the end of the session, the agent accomplished what the user set out "
        "to get done (every goal the user stated, not just the last message); score 0 if any "
        "goal was left unmet, answered wrongly, or only claimed to be done.",
        "did the agent achieve the user's goals by the end of the session",
        ("conversation", "final_answer"),
    ),
    StockJudge(
        "IntentRecognitionAccuracy",
        "intent_recognition_accuracy",
        "Score 1 if the agent understood what the user actually wanted in each turn and acted "
        "on that request; score 0 if it answered a different question, missed part of what "
        "was asked, or misread an ambiguous request without checking.",
        "did the agent correctly understand what the user asked for in each turn",
    ),
    StockJudge(
        "Groundedness",
        "groundedness",
        "Score 1 if every factual claim the agent makes is supported by something in the "
        "material (the user's messages, tool results, or earlier replies); score 0 if the "
        "agent states any fact, number, name or identifier that the material does not support.",
        "are the agent's claims supported by the conversation and tool results",
        ("conversation", "final_answer"),
    ),
    StockJudge(
        "ResponseCompleteness",
        "response_completeness",
        "Score 1 if the agent's final answer addresses every part of the user's last request "
        "with the detail it asked for; score 0 if any part is missing, deferred or vague.",
        "does the final answer cover every part of the user's last request",
        ("conversation", "final_answer"),
    ),
    StockJudge(
        "Consistency",
        "consistency",
        "Score 1 if the agent's replies never contradict one another or facts the agent "
        "itself established earlier in the session; score 0 if any reply contradicts an "
        "earlier one without acknowledging and explaining the change.",
        "are the agent's replies free of contradictions across the session",
    ),
    StockJudge(
        "ContextPreservation",
        "context_preservation",
        "Score 1 if later replies respect the context set earlier in the session "
        "(constraints, preferences, decisions, the subject of references like 'it' or 'that "
        "order'); score 0 if the agent loses or ignores any of it.",
        "does the agent keep earlier constraints, preferences and references in later turns",
    ),
    StockJudge(
        "InformationRetention",
        "information_retention",
        "Score 1 if, whenever a turn depends on information given earlier in the session "
        "(identifiers, amounts, names, dates), the agent recalls it correctly; score 0 if it "
        "forgets, asks for it again, or gets any of it wrong. If no turn depends on earlier "
        "information, score 1.",
        "does the agent recall information given earlier when a later turn needs it",
    ),
    StockJudge(
        "WorkflowCohesionIndex",
        "workflow_cohesion_index",
        "Score 1 if the agent's steps (tool calls, hand-offs, replies) form a coherent path "
        "toward the user's goal, each building on the previous one; score 0 if the session "
        "shows redundant repeated calls, loops, abandoned threads or steps that undo others.",
        "do the agent's steps form a coherent, non-redundant workflow",
    ),
    StockJudge(
        "ComponentConflictRate",
        "component_conflict_rate",
        "Score 1 if no conflict between components is visible: tools, agents and "
        "instructions work together, and the agent never acts on contradictory outputs "
        "without resolving them. Score 0 if any such conflict occurs. (1 means no conflict.)",
        "are components (tools, agents, instructions) free of conflicts (1 = no conflict)",
    ),
)


class StockJudgeParams(BaseModel):
    """Params of a stock judge metric."""

    model_config = ConfigDict(extra="forbid")

    evidence: bool = Field(
        default=True, description="Ask the judge to quote the material its score rests on."
    )


def stock_factory(stock: StockJudge) -> Any:
    """The registry factory for ``stock``: ``factory(params, ctx=None) -> JudgeMetric``."""

    def build(params: StockJudgeParams | None = None, ctx: Any = None) -> JudgeMetric:
        params = params or StockJudgeParams()
        return JudgeMetric(
            id=stock.mce_id,
            question=stock.question,
            unit=UNITS["binary"],
            evidence=params.evidence,
            inputs=stock.inputs,
            description=stock.description,
        )

    build.__doc__ = f"{stock.mce_id}: {stock.description}."
    return build


_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


class PromptMetricParams(BaseModel):
    """An inline metric on ``eval_mce.config.prompt_metrics``: its id, rubric and scale."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Id written to metrics.json; letters, digits, _ . -.")
    prompt: str = Field(description="The rubric: what the judge decides and how to score.")
    unit: UnitName = Field(
        default="binary",
        description="Score scale: binary (0/1, majority), likert (1-5, mean), ratio (0-1, mean).",
    )
    evidence: bool = Field(
        default=True, description="Ask the judge to quote the material its score rests on."
    )
    direction: Direction = Field(
        default="higher",
        description="Which way a score is better: higher, lower (a rubric scoring a fault) "
        "or neither; the lab's table and claims follow it.",
    )

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        if not _ID.match(value):
            raise ValueError("must start with a letter and hold only letters, digits, _ . -")
        return value

    @field_validator("prompt")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


def prompt_metric(params: PromptMetricParams, ctx: Any = None) -> JudgeMetric:
    """An inline judge metric scored over the whole conversation, like the stock ids."""
    return JudgeMetric(
        id=params.id,
        question=params.prompt.strip(),
        unit=UNITS[params.unit],
        evidence=params.evidence,
        inputs=("conversation",),
        description=f"inline prompt metric ({params.unit})",
        direction=params.direction,
    )
