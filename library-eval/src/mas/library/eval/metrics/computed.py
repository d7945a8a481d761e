"""Metrics computed from a run's events, transcript and dataset item — no model call.

Usage counters (LLM calls, tokens, cost, compactions, cache hits) are scored even when the
agent errored, because that spend really happened; ``FactRecall`` and ``ToolErrorRate``
judge quality and skip errored runs like the judge metrics do.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from mas.library.eval.metrics.base import ComputedMetric, MetricResult
from mas.library.eval.run import SessionRun
from mas.runtime.registry import NoParams


def _usage(event: dict[str, Any]) -> dict[str, int]:
    # The engine may flatten usage into the event or nest it under "usage".
    nested = event.get("usage")
    source: dict[str, Any] = nested if isinstance(nested, dict) else event
    return {
        key: int(source.get(key) or 0)
        for key in ("prompt_tokens", "completion_tokens", "cached_tokens")
    }


class LlmCalls(ComputedMetric):
    """Number of model calls the session made (``llm.call`` events), by purpose."""

    id = "LLMCalls"
    direction = "lower"
    description = "model calls made by the session (llm.call events)"

    def __init__(self, params: BaseModel | None = None, ctx: Any = None) -> None:
        self.params = params

    def compute(self, run: SessionRun) -> MetricResult:
        """Count ``llm.call`` events."""
        calls = run.events_named("llm.call")
        by_purpose: dict[str, int] = {}
        for call in calls:
            purpose = str(call.get("purpose") or "turn")
            by_purpose[purpose] = by_purpose.get(purpose, 0) + 1
        return MetricResult(
            float(len(calls)), f"{len(calls)} model call(s)", detail={"by_purpose": by_purpose}
        )


class TokensParams(BaseModel):
    """Params of ``Tokens``."""

    model_config = ConfigDict(extra="forbid")

    count: Literal["total", "prompt", "completion"] = Field(
        default="total", description="Which provider-reported tokens the value counts."
    )


class Tokens(ComputedMetric):
    """Provider-reported tokens summed over the session's ``llm.call`` events."""

    id = "Tokens"
    direction = "lower"
    description = "provider-reported tokens over all model calls (prompt, completion, cached)"

    def __init__(self, params: TokensParams | None = None, ctx: Any = None) -> None:
        self.params = params or TokensParams()

    def compute(self, run: SessionRun) -> MetricResult:
        """Sum usage over ``llm.call`` events."""
        totals = {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
        for call in run.events_named("llm.call"):
            for key, value in _usage(call).items():
                totals[key] += value
        totals["total_tokens"] = totals["prompt_tokens"] + totals["completion_tokens"]
        key = f"{self.params.count}_tokens"
        return MetricResult(float(totals[key]), f"{totals[key]} {self.params.count} tokens",
                            detail=totals)


class Cost(ComputedMetric):
    """Estimated provider cost in USD summed over ``llm.call`` events."""

    id = "Cost"
    direction = "lower"
    description = "estimated provider cost in USD over all model calls"

    def __init__(self, params: BaseModel | None = None, ctx: Any = None) -> None:
        self.params = params

    def compute(self, run: SessionRun) -> MetricResult:
        """Sum ``cost``; unpriced calls are counted and make the total a lower bound."""
        calls = run.events_named("llm.call")
        priced = [float(c["cost"]) for c in calls if isinstance(c.get("cost"), (int, float))]
        unpriced = len(calls) - len(priced)
        detail = {"priced_calls": len(priced), "unpriced_calls": unpriced,
                  "cost_status": "ok" if not unpriced else "pricing_or_usage_unavailable"}
        if calls and not priced:
            return MetricResult(None, error="pricing_or_usage_unavailable: no call was priced",
                                detail=detail)
        total = sum(priced)
        note = f"; {unpriced} unpriced call(s) not included" if unpriced else ""
        return MetricResult(total, f"${total:.6f} over {len(priced)} priced call(s){note}",
                            detail=detail)


class Compactions(ComputedMetric):
    """History compactions that completed (``compaction.stop``), and those that failed."""

    id = "Compactions"
    direction = "neither"
    description = "history compactions (compaction.stop events); failures in detail"

    def __init__(self, params: BaseModel | None = None, ctx: Any = None) -> None:
        self.params = params

    def compute(self, run: SessionRun) -> MetricResult:
        """Count compaction events."""
        stops = run.events_named("compaction.stop")
        detail = {
            "summarizer_calls": sum(1 for s in stops if s.get("llm_called")),
            "exceptions": len(run.events_named("compaction.exception")),
        }
        return MetricResult(float(len(stops)), f"{len(stops)} compaction(s)", detail=detail)


class CacheHitRateParams(BaseModel):
    """Params of ``CacheHitRate``."""

    model_config = ConfigDict(extra="forbid")

    layer: str | None = Field(
        default=None,
        description="Count only lookups of this cache layer (e.g. infra_llm_cache); "
        "omitted = every layer.",
    )


def _is_hit(event: dict[str, Any]) -> bool:
    if isinstance(event.get("hit"), bool):
        return bool(event["hit"])
    return str(event.get("result") or event.get("outcome") or "").lower() == "hit"


class CacheHitRate(ComputedMetric):
    """Response-cache hits over observed lookups (``cache.lookup`` events), per layer."""

    id = "CacheHitRate"
    description = "cache hits / lookups from cache.lookup events (per layer in detail)"

    def __init__(self, params: CacheHitRateParams | None = None, ctx: Any = None) -> None:
        self.params = params or CacheHitRateParams()

    def compute(self, run: SessionRun) -> MetricResult:
        """Hits over lookups; unscored when nothing was looked up (no denominator)."""
        layers: dict[str, dict[str, int]] = {}
        for lookup in run.events_named("cache.lookup"):
            counts = layers.setdefault(str(lookup.get("layer") or "unknown"),
                                       {"hits": 0, "lookups": 0})
            counts["lookups"] += 1
            counts["hits"] += int(_is_hit(lookup))
        usage = [_usage(c) for c in run.events_named("llm.call")]
        prompt = sum(u["prompt_tokens"] for u in usage)
        detail: dict[str, Any] = {
            "layers": layers,
            "prompt_cache_token_ratio": (
                sum(u["cached_tokens"] for u in usage) / prompt if prompt else None
            ),
        }
        chosen = [c for name, c in layers.items() if self.params.layer in (None, name)]
        lookups = sum(c["lookups"] for c in chosen)
        if not lookups:
            where = f" in layer {self.params.layer!r}" if self.params.layer else ""
            return MetricResult(None, error=f"no cache lookups{where}", detail=detail,
                                applicable=False)
        hits = sum(c["hits"] for c in chosen)
        return MetricResult(hits / lookups, f"{hits} hit(s) in {lookups} lookup(s)",
                            detail=detail)


def tool_failed(content: Any) -> bool:
    """Whether a tool result reports a failure: an ``error`` key, or text starting 'error'."""
    text = content if isinstance(content, str) else json.dumps(content)
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return bool(value.get("error"))
    return stripped.lower().startswith(("error", "tool error", "exception"))


class ToolErrorRate(ComputedMetric):
    """Share of tool results in the transcript that report a failure."""

    id = "ToolErrorRate"
    direction = "lower"
    description = "failed tool results / tool results in the transcript"
    inputs = ("conversation",)
    skip_errored: ClassVar[bool] = True

    def __init__(self, params: BaseModel | None = None, ctx: Any = None) -> None:
        self.params = params

    def compute(self, run: SessionRun) -> MetricResult:
        """Failed tool results over all tool results; unscored when no tool ran."""
        results = [m for m in run.messages if m.get("role") == "tool"]
        if not results:
            return MetricResult(None, error="no tool results in the transcript",
                                applicable=False)
        failed = sum(1 for m in results if tool_failed(m.get("content")))
        return MetricResult(failed / len(results),
                            f"{failed} of {len(results)} tool result(s) failed",
                            detail={"tool_results": len(results), "failed": failed})


def normalize(text: str) -> str:
    """Lower-case and collapse whitespace, for case/whitespace-insensitive matching."""
    return " ".join(text.lower().split())


class FactRecall(ComputedMetric):
    """Fraction of the dataset item's ``expected_facts`` present in the final answer."""

    id = "FactRecall"
    description = "expected facts (item.json) found in the final answer, case/space-insensitive"
    inputs = ("final_answer", "expected_facts")
    skip_errored: ClassVar[bool] = True

    def __init__(self, params: BaseModel | None = None, ctx: Any = None) -> None:
        self.params = params

    def missing_input(self, run: SessionRun) -> str | None:
        """Only an errored agent skips it: no facts is 'not applicable', an empty answer is 0."""
        return f"agent errored: {run.error}" if run.error else None

    def compute(self, run: SessionRun) -> MetricResult:
        """Facts found over facts expected."""
        facts = [str(f) for f in (run.item or {}).get("expected_facts") or []]
        if not facts:
            return MetricResult(None, error="no expected_facts in item.json", applicable=False)
        answer = normalize(run.final_answer)
        missing = [fact for fact in facts if normalize(fact) not in answer]
        found = len(facts) - len(missing)
        return MetricResult(found / len(facts), f"{found} of {len(facts)} expected fact(s) found",
                            detail={"expected": len(facts), "found": found, "missing": missing})


COMPUTED: tuple[tuple[str, type[ComputedMetric], type[BaseModel], tuple[str, ...]], ...] = (
    ("llm_calls", LlmCalls, NoParams, ("LLMCalls",)),
    ("tokens", Tokens, TokensParams, ()),
    ("cost", Cost, NoParams, ()),
    ("compactions", Compactions, NoParams, ()),
    ("cache_hit_rate", CacheHitRate, CacheHitRateParams, ("CacheHitRate",)),
    ("tool_error_rate", ToolErrorRate, NoParams, ("ToolErrorRate",)),
    ("fact_recall", FactRecall, NoParams, ("FactRecall",)),
)
"""Registry name, class, params model and aliases of each computed metric."""
