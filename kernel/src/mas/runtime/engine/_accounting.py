"""What the engine records of each call: the ledger, the cut counters and the events.

A call answered live or from the response cache ends here: its usage and cost go into the
session's :class:`~mas.runtime.engine.cost.UsageLedger`, each cache layer it probed into a
``cache.lookup`` event, and the call itself into an ``llm.call`` event (numbers and names,
never text). A request cut to fit its window is counted in the engine's degradation.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from mas.runtime.engine.cache import LAYER, PROVIDER_LAYER
from mas.runtime.engine.cost import (
    COST_OK,
    COST_UNAVAILABLE,
    USAGE_CACHED_RESPONSE,
    USAGE_PROVIDER,
    USAGE_UNAVAILABLE,
    call_cost,
)
from mas.runtime.protocols import Message, ModelReply

if TYPE_CHECKING:
    from mas.runtime.degradation import Degradation
    from mas.runtime.engine.llm_live import Engine


def count_cut(degradation: Degradation, purpose: str, reason: str) -> None:
    """Count a request cut to fit its window. A judge that read a cut transcript gave a
    degraded vote; a summary or turn cut this way is recovered, and still counted."""
    degradation.add(
        "judge_truncations" if purpose == "judge" else "window_overflows_recovered",
        reason=reason,
    )


def count_request(engine: Engine, *, hit: bool) -> None:
    """Count one request in the ledger, answered by a cache layer (``hit``) or not."""
    with engine._lock:
        engine.ledger.record_request(hit)


def lookup_event(engine: Engine, layer: str, hit: bool, purpose: str, **extra: Any) -> None:
    """Record one probe of a cache ``layer`` in the ledger and as a ``cache.lookup`` event."""
    with engine._lock:
        engine.ledger.record_lookup(layer, hit)
    data: dict[str, Any] = {"layer": layer, "hit": hit, "purpose": purpose}
    if layer == LAYER:
        data["strict"] = bool(engine.cache is not None and engine.cache.strict)
    data.update(extra)
    engine._emit("cache.lookup", data)


def finish_cached(
    engine: Engine,
    reply: ModelReply,
    requested: str,
    purpose: str,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
) -> ModelReply:
    """Account for a reply the response cache gave, and return it."""
    with engine._lock:
        engine.ledger.record_cached(reply.model or requested, reply.usage)
    if reply.cut_chars:
        # The replayed answer read a cut request: counted again, as the live run was.
        count_cut(
            engine.degradation, purpose,
            f"{purpose} request to {reply.model or requested}: answered from the "
            f"response cache; {reply.cut_chars:,} characters were cut to fit the window "
            "when it was recorded",
        )
    engine._emit("llm.call", call_record(
        reply, requested, purpose, len(messages), tools, engine.ledger,
        latency=0.0, attempts=0, source=USAGE_CACHED_RESPONSE, cost_status=COST_OK,
    ), content={"messages": messages, "reply": reply})
    return reply


def finish_live(
    engine: Engine,
    reply: ModelReply,
    requested: str,
    purpose: str,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    *,
    deployed: str,
    key: str | None,
    infra_probed: bool,
    latency: float,
    attempts: int,
    setup: float,
) -> ModelReply:
    """Price and account for a reply the provider gave, store it in the response cache
    under ``key``, and return it with its deployed model and cost.

    :param infra_probed: the response cache was asked first (and missed).
    """
    cost = call_cost(reply.usage, engine._pricing_for(requested))
    reply = replace(reply, model=deployed, cost=cost)
    with engine._lock:
        engine.ledger.record_live(deployed, reply.usage, cost)
    provider_hit = None
    if reply.usage is not None:
        # The provider's prefix cache is probed by every call that reaches it; a call
        # that reports cached input tokens hit it.
        provider_hit = reply.usage.cached_tokens > 0
        lookup_event(engine, PROVIDER_LAYER, provider_hit, purpose,
                     cached_tokens=reply.usage.cached_tokens)
    if infra_probed or provider_hit is not None:
        count_request(engine, hit=bool(provider_hit))
    if engine.cache is not None and key is not None:
        engine.cache.put(key, reply)
    engine._emit("llm.call", call_record(
        reply, requested, purpose, len(messages), tools, engine.ledger,
        latency=latency, attempts=attempts, setup=setup,
        source=USAGE_PROVIDER if reply.usage is not None else USAGE_UNAVAILABLE,
        cost_status=COST_OK if cost is not None else COST_UNAVAILABLE,
    ), content={"messages": messages, "reply": reply})
    return reply


def call_record(
    reply: Any,
    requested: str,
    purpose: str,
    n_messages: int,
    tools: list[dict[str, Any]] | None,
    ledger: Any,
    *,
    latency: float,
    attempts: int,
    source: str,
    cost_status: str,
    setup: float = 0.0,
) -> dict[str, Any]:
    """The data of one ``llm.call`` event: numbers and names, never text."""
    usage = reply.usage
    return {
        "model": reply.model or requested,
        "requested_model": requested,
        "purpose": purpose,
        "messages": n_messages,
        "tools": len(tools or []),
        "tool_calls": len(reply.tool_calls),
        "prompt_tokens": usage.prompt_tokens if usage else None,
        "completion_tokens": usage.completion_tokens if usage else None,
        "cached_tokens": usage.cached_tokens if usage else None,
        "cache_write_tokens": usage.cache_write_tokens if usage else None,
        "provider_usage_source": source,
        "cache_hit": reply.cache_hit,
        "cost": reply.cost,
        "cost_status": cost_status,
        "session_cost": ledger.cost,
        "session_cost_status": ledger.cost_status,
        "latency_s": round(latency, 6),
        "setup_s": round(setup, 6),
        "attempts": attempts,
        "llm_calls": ledger.llm_calls,
    }
