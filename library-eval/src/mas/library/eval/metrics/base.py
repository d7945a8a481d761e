"""What every metric is: judge metrics (scored by the jury) and computed ones.

A metric factory registered for kind ``eval_metric`` is called as
``factory(params, ctx)`` and returns one of the two shapes below; both follow the kernel's
:class:`~mas.runtime.protocols.Metric` protocol (re-exported here). Both carry the id
written to ``metrics.json`` (MCE's display id for stock metrics, e.g. ``GoalSuccessRate``),
which may differ from the lower_snake_case registry name (``goal_success_rate``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from mas.runtime.protocols import Metric

if TYPE_CHECKING:
    from mas.library.eval.run import SessionRun

__all__ = ["DIRECTIONS", "UNITS", "ComputedMetric", "Direction", "JudgeMetric", "Metric",
           "MetricResult", "Unit", "UnitName", "direction_of"]

UnitName = Literal["binary", "likert", "ratio"]
"""Score scales a judge metric can use."""

Direction = Literal["higher", "lower", "neither"]
"""Which way a metric's value is better: ``higher`` (a recall, a judge score), ``lower`` (calls,
tokens, dollars, an error rate) or ``neither`` (a count with no better side, e.g. compactions)."""

DIRECTIONS: tuple[Direction, ...] = ("higher", "lower", "neither")


def direction_of(metric: object) -> Direction:
    """The ``direction`` a metric declares; ``higher`` for one that follows only the kernel's
    protocol and declares none (the default of both metric shapes here)."""
    declared = getattr(metric, "direction", "higher")
    if declared not in DIRECTIONS:
        raise ValueError(f"metric {getattr(metric, 'id', metric)!r}: direction must be one of "
                         f"{', '.join(DIRECTIONS)} (got {declared!r})")
    direction: Direction = declared
    return direction


@dataclass(frozen=True)
class Unit:
    """A score scale: its range, whether scores are whole numbers, how votes aggregate.

    :ivar name: ``binary`` (0 or 1, majority vote), ``likert`` (whole numbers 1-5, mean) or
        ``ratio`` (0.0-1.0, mean).
    """

    name: UnitName
    low: float
    high: float
    integer: bool
    aggregation: Literal["majority", "mean"]

    def problem(self, score: float) -> str | None:
        """Why ``score`` is not on this scale, or ``None`` when it is."""
        if not self.low <= score <= self.high:
            return f"score {score:g} is out of range for unit {self.name!r} ({self.scale()})"
        if self.integer and score != int(score):
            return f"score {score:g} must be a whole number for unit {self.name!r}"
        return None

    def scale(self) -> str:
        """The scale in words, as the judge is told."""
        if self.name == "binary":
            return "0 or 1"
        if self.name == "likert":
            return "a whole number from 1 to 5"
        return "a number from 0.0 to 1.0"


UNITS: dict[str, Unit] = {
    "binary": Unit("binary", 0, 1, True, "majority"),
    "likert": Unit("likert", 1, 5, True, "mean"),
    "ratio": Unit("ratio", 0, 1, False, "mean"),
}


@dataclass
class MetricResult:
    """One metric's outcome on one session run, as it lands in ``metrics.json``.

    :ivar value: the score, or ``None`` when unscored (``error`` then says why).
    :ivar reasoning: a short human-readable justification.
    :ivar error: why the metric is unscored, or a problem that did not stop scoring.
    :ivar detail: kind-specific record (votes for judge metrics, counts for computed ones).
    :ivar applicable: ``False`` when the metric does not apply to this run (no tool ran,
        the item has no expected facts): unscored, but not a failure of the run.
    """

    value: float | None
    reasoning: str = ""
    error: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    applicable: bool = True

    @property
    def status(self) -> str:
        """``scored``, ``not_applicable`` or ``unscored``."""
        if self.value is not None:
            return "scored"
        return "unscored" if self.applicable else "not_applicable"


@dataclass
class JudgeMetric:
    """A metric an LLM jury scores from a rubric.

    :ivar id: the id in ``metrics.json``.
    :ivar question: the rubric: what the judge decides, in the judge's terms.
    :ivar unit: the score scale.
    :ivar evidence: ask the judge to quote the material its score rests on.
    :ivar inputs: what must be present in the run (``conversation``, ``final_answer``).
    :ivar description: one line for ``--list-metrics``.
    :ivar direction: which way a score is better (a rubric scores what is wanted: higher).
    """

    kind: ClassVar[str] = "judge"

    id: str
    question: str
    unit: Unit = UNITS["binary"]
    evidence: bool = True
    inputs: tuple[str, ...] = ("conversation",)
    description: str = ""
    direction: Direction = "higher"

    def missing_input(self, run: SessionRun) -> str | None:
        """Why ``run`` cannot be judged: the agent errored or a required input is empty."""
        if run.error:
            return f"agent errored: {run.error}"
        return run.missing(self.inputs)


class ComputedMetric(ABC):
    """A metric computed from a run's events, transcript or dataset item; no model call.

    Subclasses set ``id``, ``description``, ``inputs``, ``direction`` when lower (or
    neither) is better, and implement :meth:`compute`.
    """

    kind: ClassVar[str] = "computed"
    id: str = ""
    description: str = ""
    direction: Direction = "higher"
    """Which way the value is better; the lab's table and claims take it from here."""
    inputs: tuple[str, ...] = ("events",)
    skip_errored: ClassVar[bool] = False
    """Judge quality only on runs whose agent finished (usage counts stay meaningful)."""

    def missing_input(self, run: SessionRun) -> str | None:
        """Why ``run`` cannot be scored, or ``None``."""
        if self.skip_errored and run.error:
            return f"agent errored: {run.error}"
        return run.missing(self.inputs)

    @abstractmethod
    def compute(self, run: SessionRun) -> MetricResult:
        """Score ``run``."""
