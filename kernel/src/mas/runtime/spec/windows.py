"""Window, completion-reserve and pricing resolution for the model an agent really calls.

Spec 003 fixes the orders; each function returns the value with the field that won:

- window: agent ``spec.models[].context_window`` > infra ``generation.context_window`` >
  model facts (LiteLLM's map under the catalog's dated overrides, :mod:`mas.runtime.catalog`)
  of the model after infra model mappings > 128,000 with a warning;
- reserve: effective output budget > the binding's ``max_tokens`` > 2,000;
- pricing: infra ``generation.pricing`` > catalog (after mappings) > unpriced (``None``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from mas.runtime.catalog import Catalog, Pricing, default_catalog
from mas.runtime.errors import MasError
from mas.runtime.spec.model_ref import map_model

log = logging.getLogger(__name__)

FALLBACK_CONTEXT_WINDOW = 128_000
"""Input window assumed for a model nobody describes (spec 003)."""

FALLBACK_RESERVE = 2_000
"""Completion reserve when neither the output budget nor ``max_tokens`` is set."""

MAX_CONTEXT_WINDOW = 100_000_000
"""Largest ``context_window`` / ``max_tokens`` a manifest may set (10^8 tokens).

Ten times the largest window any model offers today (10M): a bigger number is a typo, and
accepting it would run the budget arithmetic on meaningless (float-sized) numbers."""

SOURCE_AGENT_WINDOW = "spec.models[].context_window"
SOURCE_INFRA_WINDOW = "infra.generation.context_window"
SOURCE_INFRA_PRICING = "infra.generation.pricing"
SOURCE_CATALOG = "catalog"
SOURCE_FALLBACK = "fallback"
SOURCE_OUTPUT_BUDGET = "output_budget"
SOURCE_MAX_TOKENS = "spec.models[].max_tokens"


class WindowSettingError(MasError, ValueError):
    """A window or reserve setting is not a positive integer; the message names the field."""


@dataclass(frozen=True)
class WindowChoice:
    """The resolved input window of a model.

    :ivar value: maximum input tokens.
    :ivar source: ``spec.models[].context_window``, ``infra.generation.context_window``,
        ``litellm-map <version>`` (LiteLLM's bundled map), ``catalog <as_of>`` (a dated
        override in the kernel's file), or ``fallback``.
    :ivar warning: set only for the fallback: names the model and the fields to set.
    """

    value: int
    source: str
    warning: str | None = None


class ReserveChoice(NamedTuple):
    """The completion reserve and the field it came from (unpacks as ``value, source``)."""

    value: int
    source: str


def _positive(value: Any, field: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise WindowSettingError(f"{field}: must be a positive integer (got {value!r})")
    if value > MAX_CONTEXT_WINDOW:
        raise WindowSettingError(
            f"{field}: must be at most {MAX_CONTEXT_WINDOW:,} tokens (got {value!r})"
        )
    return value


def resolve_window(
    model: str,
    *,
    agent_context_window: int | None = None,
    agent_source: str = SOURCE_AGENT_WINDOW,
    infra_context_window: int | None = None,
    infra_mappings: Mapping[str, str] | None = None,
    catalog: Catalog | None = None,
) -> WindowChoice:
    """Input window for ``model`` (the resolved model, before infra mappings).

    :param agent_context_window: the binding row's ``spec.models[].context_window``.
    :param agent_source: the row that supplied it, e.g. ``spec.models[id=main].context_window``
        or ``mas.spec.models[id=main].context_window``.
    :param infra_context_window: infra ``spec.generation.context_window``.
    :param infra_mappings: infra model mappings; the catalog is asked for the deployed model.
    :param catalog: defaults to :func:`~mas.runtime.catalog.default_catalog`.
    :raises WindowSettingError: an override is not a positive integer.
    """
    agent = _positive(agent_context_window, agent_source)
    if agent is not None:
        return WindowChoice(agent, agent_source)
    infra = _positive(infra_context_window, "infra.spec.generation.context_window")
    if infra is not None:
        return WindowChoice(infra, SOURCE_INFRA_WINDOW)
    deployed = map_model(model, infra_mappings)
    entry = (catalog if catalog is not None else default_catalog()).lookup(deployed)
    if entry is not None and entry.context_window is not None:
        return WindowChoice(entry.context_window, entry.source)
    named = model if deployed == model else f"{model} (deployed as {deployed})"
    warning = (
        f"unknown context window for model {named}; using the {FALLBACK_CONTEXT_WINDOW:,}-token "
        "fallback. Set spec.models[].context_window on the model binding or "
        "generation.context_window in the infra spec."
    )
    log.warning("%s", warning)
    return WindowChoice(FALLBACK_CONTEXT_WINDOW, SOURCE_FALLBACK, warning)


def resolve_reserve(
    *,
    output_budget: int | None = None,
    binding_max_tokens: int | None = None,
    binding_source: str = SOURCE_MAX_TOKENS,
) -> ReserveChoice:
    """Completion reserve: effective output budget > binding ``max_tokens`` > 2,000.

    :param output_budget: the output-token limit in force for the request, if any.
    :param binding_max_tokens: the binding row's ``spec.models[].max_tokens``.
    :param binding_source: the row that supplied it (as for :func:`resolve_window`).
    :raises WindowSettingError: a value is not a positive integer.
    """
    budget = _positive(output_budget, "output budget")
    if budget is not None:
        return ReserveChoice(budget, SOURCE_OUTPUT_BUDGET)
    max_tokens = _positive(binding_max_tokens, binding_source)
    if max_tokens is not None:
        return ReserveChoice(max_tokens, binding_source)
    return ReserveChoice(FALLBACK_RESERVE, SOURCE_FALLBACK)


def resolve_pricing(
    model: str,
    *,
    infra_pricing: Pricing | Mapping[str, Any] | Any = None,
    infra_mappings: Mapping[str, str] | None = None,
    catalog: Catalog | None = None,
) -> Pricing | None:
    """Per-million rates for ``model``: infra ``generation.pricing`` > catalog > ``None``.

    :param infra_pricing: a :class:`Pricing`, or the infra block with spec 003's field names
        (``input_per_million_tokens``, ``cached_input_per_million_tokens``,
        ``output_per_million_tokens``) as a mapping or a pydantic model.
    :param infra_mappings: infra model mappings; the catalog is asked for the deployed model.
    :param catalog: defaults to :func:`~mas.runtime.catalog.default_catalog`.
    :return: the rates, or ``None`` when the model is unpriced.
    :raises CatalogError: the infra block is malformed.
    """
    if isinstance(infra_pricing, Pricing):
        return infra_pricing
    if infra_pricing is not None:
        if not isinstance(infra_pricing, Mapping):
            # The validated manifest model: read it as data, never import the manifest layer.
            infra_pricing = infra_pricing.model_dump(exclude_none=True)
        return Pricing.from_mapping(
            infra_pricing, source=SOURCE_INFRA_PRICING, where="infra.spec.generation.pricing"
        )
    deployed = map_model(model, infra_mappings)
    return (catalog if catalog is not None else default_catalog()).pricing(deployed)


__all__ = [
    "FALLBACK_CONTEXT_WINDOW",
    "FALLBACK_RESERVE",
    "MAX_CONTEXT_WINDOW",
    "ReserveChoice",
    "WindowChoice",
    "WindowSettingError",
    "resolve_pricing",
    "resolve_reserve",
    "resolve_window",
]
