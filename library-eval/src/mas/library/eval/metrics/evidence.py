"""The evidence metric: was what a question needs available when it was asked? No model call.

The lab records, for every probe it asks, where each of the probe's evidence lines was at
that moment (``probes.jsonl``; docs/lab.md, "Long real conversations"): verbatim in the
request, in the summary block, and in what recall returns for the question. A probe
*has its evidence* at a level when every one of its lines is available there; the three
levels are cumulative:

- ``EvidenceVerbatim``: every line verbatim in the request;
- ``EvidenceWithSummary``: every line verbatim or in the summary (the exact line, or at
  least ``summary_words`` of its content words: an abstractive summary that keeps a fact
  in other words is credited only that far; a judge is needed beyond);
- ``EvidenceWithRecall``: every line verbatim, in the summary, or returned by recall.

The value is the session's share; ``detail`` carries the counts (``successes`` of
``trials`` probes, and the same per probe category) that the lab pools over sessions for
a Wilson interval. Probes without evidence lines are not counted; a probe whose file
named lines that do not exist is counted on its resolved lines and reported in
``detail.with_unresolved``; one that names no existing line at all is left out and
reported in ``detail.left_out_unresolved`` and the reasoning.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from mas.library.eval.metrics.base import ComputedMetric, MetricResult
from mas.library.eval.run import SessionRun

LEVELS = ("verbatim", "summary", "recall")
"""The cumulative levels, in order."""


class EvidenceParams(BaseModel):
    """Params of the evidence metrics."""

    model_config = ConfigDict(extra="forbid")

    summary_words: float | None = Field(
        default=0.8, gt=0, le=1,
        description="A line counts as in the summary when this share of its content words "
        "is there (null: only the exact line).")


def line_available(line: dict[str, Any], level: str, summary_words: float | None) -> bool:
    """Whether one located evidence line is available at ``level`` (cumulative)."""
    if line.get("verbatim") is True:
        return True
    if level == "verbatim":
        return False
    words = line.get("summary_words")
    in_summary = line.get("summary") is True or (
        summary_words is not None and isinstance(words, (int, float)) and words >= summary_words)
    return in_summary or (level == "recall" and line.get("recall") is True)


class EvidenceAvailable(ComputedMetric):
    """Share of probes with evidence whose every evidence line was available at ``level``."""

    level: ClassVar[str] = "verbatim"
    inputs = ("probes",)
    skip_errored: ClassVar[bool] = True

    def __init__(self, params: EvidenceParams | None = None, ctx: Any = None) -> None:
        self.params = params or EvidenceParams()

    def compute(self, run: SessionRun) -> MetricResult:
        """Probes with all their evidence available over probes with evidence."""
        probes = [p for p in run.probes if isinstance(p.get("evidence"), list) and p["evidence"]]
        # A question whose every evidence id names no line has no line to look for: it is
        # left out like a question without evidence, but said, so a file's broken ids
        # never shrink the denominator unseen.
        nameless = sum(1 for p in run.probes
                       if not (isinstance(p.get("evidence"), list) and p["evidence"])
                       and int(p.get("evidence_unresolved") or 0) > 0)
        left_out = (f"; {nameless} probe(s) left out: their evidence names no line of the "
                    "conversation") if nameless else ""
        if not probes:
            return MetricResult(None, error="no probe with evidence lines was asked "
                                f"(probes.jsonl){left_out}", applicable=False)
        by_category: dict[str, dict[str, int]] = {}
        successes = 0
        for probe in probes:
            found = all(isinstance(line, dict)
                        and line_available(line, self.level, self.params.summary_words)
                        for line in probe["evidence"])
            successes += found
            counts = by_category.setdefault(str(probe.get("kind") or ""), {"successes": 0,
                                                                          "trials": 0})
            counts["successes"] += found
            counts["trials"] += 1
        unresolved = sum(1 for p in probes if int(p.get("evidence_unresolved") or 0) > 0)
        return MetricResult(
            successes / len(probes),
            f"{successes} of {len(probes)} probe(s) had every evidence line "
            f"{self.level_words}{left_out}",
            detail={"successes": successes, "trials": len(probes), "level": self.level,
                    "by_category": dict(sorted(by_category.items())),
                    "with_unresolved": unresolved, "left_out_unresolved": nameless,
                    "summary_words": self.params.summary_words})

    @property
    def level_words(self) -> str:
        """The level, as the reasoning says it."""
        return {"verbatim": "verbatim in the request",
                "summary": "verbatim or in the summary",
                "recall": "verbatim, in the summary or recalled"}[self.level]


class EvidenceVerbatim(EvidenceAvailable):
    """Evidence verbatim in the request."""

    id = "EvidenceVerbatim"
    description = "probes whose evidence lines were all verbatim in the request (probes.jsonl)"
    level = "verbatim"


class EvidenceWithSummary(EvidenceAvailable):
    """Evidence verbatim or in the summary."""

    id = "EvidenceWithSummary"
    description = "probes whose evidence lines were all verbatim or in the summary"
    level = "summary"


class EvidenceWithRecall(EvidenceAvailable):
    """Evidence verbatim, in the summary, or returned by recall."""

    id = "EvidenceWithRecall"
    description = "probes whose evidence lines were all verbatim, in the summary or recalled"
    level = "recall"


EVIDENCE: tuple[tuple[str, type[ComputedMetric], type[BaseModel], tuple[str, ...]], ...] = (
    ("evidence_verbatim", EvidenceVerbatim, EvidenceParams, ("EvidenceVerbatim",)),
    ("evidence_with_summary", EvidenceWithSummary, EvidenceParams, ("EvidenceWithSummary",)),
    ("evidence_with_recall", EvidenceWithRecall, EvidenceParams, ("EvidenceWithRecall",)),
)
"""Registry name, class, params model and aliases of each evidence metric."""
