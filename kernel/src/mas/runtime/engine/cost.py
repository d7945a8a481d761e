"""Estimated cost of model calls (spec 003) and the per-session ledger of usage and caches.

Rates read from LiteLLM's model map are priced by LiteLLM's own cost logic, which knows
each record's cache-write premium and its tiers above a prompt size. Other rates (the
catalog's dated overrides, infra ``generation.pricing``) use spec 003's formula:

cost = uncached input x input rate + cached input x cached-input rate + cache writes x
cache-write rate + output x output rate, rates per million tokens.

A response-cache hit costs nothing. A live call without pricing or without provider
usage cannot be priced: the session's ``cost_status`` then becomes
``pricing_or_usage_unavailable`` and stays so (the total is a lower bound).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mas.runtime.protocols import Usage

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from mas.runtime.catalog import Pricing

PricingResolver = Callable[[str], "Pricing | None"]
"""Gives the rates for a model string, ``None`` when the model is unpriced."""

COST_OK = "ok"
COST_UNAVAILABLE = "pricing_or_usage_unavailable"

USAGE_PROVIDER = "provider"
USAGE_CACHED_RESPONSE = "cached_response"
USAGE_UNAVAILABLE = "unavailable"

_MILLION = 1_000_000


def call_cost(usage: Usage | None, pricing: Pricing | None) -> float | None:
    """USD estimate of one live call, ``None`` when usage or pricing is missing.

    Rates from LiteLLM's map (``pricing.litellm_key`` set) go through LiteLLM's cost logic;
    should it fail, the map's flat rates are used with a warning. Other rates use
    :func:`rates_cost`.
    """
    if usage is None or pricing is None:
        return None
    if pricing.litellm_key is not None:
        cost = litellm_cost(pricing.litellm_key, usage)
        if cost is not None:
            return cost
    return rates_cost(usage, pricing)


def rates_cost(usage: Usage, pricing: Pricing) -> float:
    """Spec 003's formula over flat per-million rates.

    ``usage.prompt_tokens`` includes cache reads and cache writes. Cached input or cache
    writes without their own rate are charged at the input rate (the conservative reading
    of an unknown discount or premium).
    """
    cached = min(usage.cached_tokens, usage.prompt_tokens)
    written = min(usage.cache_write_tokens, usage.prompt_tokens - cached)
    uncached = usage.prompt_tokens - cached - written
    cached_rate = pricing.cached_input_per_million
    if cached_rate is None:
        cached_rate = pricing.input_per_million
    write_rate = pricing.cache_write_per_million
    if write_rate is None:
        write_rate = pricing.input_per_million
    return (
        uncached * pricing.input_per_million
        + cached * cached_rate
        + written * write_rate
        + usage.completion_tokens * pricing.output_per_million
    ) / _MILLION


def litellm_cost(key: str, usage: Usage) -> float | None:
    """USD of one call by LiteLLM's ``cost_per_token`` for map key ``key``.

    Usage is handed over OpenAI-style (prompt tokens include cache reads and writes, both
    detailed), which LiteLLM prices the same for every provider. Only called after a live
    call, so litellm is already imported. ``None``, with a warning, when LiteLLM cannot
    price it.
    """
    from mas.runtime.engine._litellm import load_litellm

    litellm = load_litellm()
    from litellm.types.utils import PromptTokensDetailsWrapper
    from litellm.types.utils import Usage as LitellmUsage

    usage_block = LitellmUsage(
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
        prompt_tokens_details=PromptTokensDetailsWrapper(
            cached_tokens=usage.cached_tokens, cache_creation_tokens=usage.cache_write_tokens
        ),
    )
    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=key,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            usage_object=usage_block,
        )
    except Exception as exc:  # LiteLLM raises many kinds; the flat rates still apply
        log.warning(
            "LiteLLM cannot price model %r (%s); using its map's flat rates", key,
            type(exc).__name__,
        )
        return None
    return float(prompt_cost) + float(completion_cost)


@dataclass
class LayerCounts:
    """Probes of one cache layer."""

    hits: int = 0
    misses: int = 0

    @property
    def lookups(self) -> int:
        """Hits plus misses."""
        return self.hits + self.misses

    @property
    def hit_rate(self) -> float | None:
        """Hits over lookups, ``None`` before the first lookup."""
        return self.hits / self.lookups if self.lookups else None


@dataclass
class UsageLedger:
    """What one session's model calls used and cost, cumulatively. Numbers only.

    :ivar llm_calls: calls that counted against the budget (cache hits included).
    :ivar live_calls: calls that reached a provider and returned.
    :ivar cost: cumulative estimated USD over priced live calls.
    :ivar cost_status: ``ok`` or ``pricing_or_usage_unavailable``.
    :ivar prompt_tokens: cumulative provider-reported input tokens of live calls.
    :ivar completion_tokens: cumulative provider-reported output tokens of live calls.
    :ivar cached_tokens: cumulative provider prefix-cache tokens of live calls.
    :ivar last_usage: usage of the latest call (live or cached), if any.
    :ivar last_usage_source: ``provider``, ``cached_response`` or ``unavailable``.
    :ivar last_model: model of the latest call.
    :ivar requests_hit: requests answered by some cache layer.
    :ivar requests_missed: requests that probed a cache and went to the provider.
    :ivar layers: raw probe counts per cache layer.
    """

    llm_calls: int = 0
    live_calls: int = 0
    cost: float = 0.0
    cost_status: str = COST_OK
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    last_usage: Usage | None = None
    last_usage_source: str = USAGE_UNAVAILABLE
    last_model: str = ""
    requests_hit: int = 0
    requests_missed: int = 0
    layers: dict[str, LayerCounts] = field(default_factory=dict)

    def record_lookup(self, layer: str, hit: bool) -> None:
        """Count one probe of ``layer``."""
        counts = self.layers.setdefault(layer, LayerCounts())
        if hit:
            counts.hits += 1
        else:
            counts.misses += 1

    def record_request(self, hit: bool) -> None:
        """Count one request that probed at least one cache, once, whatever the layers."""
        if hit:
            self.requests_hit += 1
        else:
            self.requests_missed += 1

    @property
    def request_hit_rate(self) -> float | None:
        """Requests served from a cache over requests that probed one."""
        total = self.requests_hit + self.requests_missed
        return self.requests_hit / total if total else None

    def record_live(self, model: str, usage: Usage | None, cost: float | None) -> None:
        """Add one live provider call."""
        self.live_calls += 1
        self.last_model = model
        self.last_usage = usage
        self.last_usage_source = USAGE_PROVIDER if usage is not None else USAGE_UNAVAILABLE
        if usage is not None:
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens
            self.cached_tokens += usage.cached_tokens
        if cost is None:
            self.cost_status = COST_UNAVAILABLE
        else:
            self.cost += cost

    def record_cached(self, model: str, usage: Usage | None) -> None:
        """Add one response served from the response cache: zero cost, usage kept for analysis."""
        self.last_model = model
        self.last_usage = usage
        self.last_usage_source = USAGE_CACHED_RESPONSE
