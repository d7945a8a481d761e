"""The engine over LiteLLM: model calls with budget, response cache, cost and events.

Build one :class:`Engine` per session::

    from mas.runtime import Runtime
    from mas.runtime.engine import Engine, ResponseCache

    runtime = Runtime.create()
    engine = Engine(runtime, model="offline/default", session_id="s1",
                    cache=ResponseCache(".mas/cache.sqlite"))
    reply = engine.turn([{"role": "user", "content": "hello"}])
    engine.ledger.cost, engine.ledger.cost_status

It follows :class:`~mas.runtime.protocols.SummaryEngine` and
:class:`~mas.runtime.protocols.ChatEngine`. litellm is imported on the first live call.
"""

from __future__ import annotations

from mas.runtime.engine.cache import (
    LAYER,
    PROVIDER_LAYER,
    ResponseCache,
    ResponseCacheMissError,
    request_key,
)
from mas.runtime.engine.cost import (
    COST_OK,
    COST_UNAVAILABLE,
    USAGE_CACHED_RESPONSE,
    USAGE_PROVIDER,
    USAGE_UNAVAILABLE,
    LayerCounts,
    UsageLedger,
    call_cost,
)
from mas.runtime.engine.llm_live import PURPOSES, Engine

__all__ = [
    "COST_OK",
    "COST_UNAVAILABLE",
    "LAYER",
    "PROVIDER_LAYER",
    "PURPOSES",
    "USAGE_CACHED_RESPONSE",
    "USAGE_PROVIDER",
    "USAGE_UNAVAILABLE",
    "Engine",
    "LayerCounts",
    "ResponseCache",
    "ResponseCacheMissError",
    "UsageLedger",
    "call_cost",
    "request_key",
]
