"""Hook implementations of mas-library-standard (entry point ``standard``)."""

from __future__ import annotations

from typing import Any

from mas.runtime import hookimpl


@hookimpl
def mas_register_model_providers(registry: Any) -> None:
    """Register the offline model (``offline/<name>``; litellm loads only when it is called)."""
    from mas.library.standard.offline import PROVIDER, make_handler

    registry.register(
        PROVIDER, make_handler,
        description="Deterministic offline chat model: no key, no network (docs/offline-model.md)",
    )


@hookimpl
def mas_register_context_managers(registry: Any) -> None:
    """Register ``summarising`` (the package default), ``sliding_window`` and ``stack``."""
    from mas.library.standard.plugins.context import (
        SlidingWindowContextManager,
        SlidingWindowParams,
        StackContextManager,
        StackParams,
        SummarisingContextManager,
        SummarisingParams,
    )

    registry.register(
        "summarising", SummarisingContextManager, params=SummarisingParams,
        description="Keep recent turns verbatim, prune old tool results, summarize the rest",
        aliases=("summarizing",),
    )
    registry.register(
        "sliding_window", SlidingWindowContextManager, params=SlidingWindowParams,
        description="Keep the last N user turns (or a token budget); no model call",
    )
    registry.register(
        "stack", StackContextManager, params=StackParams,
        description="Keep the full history, optionally capped to max_messages; no model call",
    )


@hookimpl
def mas_register_summarizers(registry: Any) -> None:
    """Register the ``llm`` and ``drop`` summarizers."""
    from mas.library.standard.plugins.context import DropSummarizer, LlmParams, LlmSummarizer

    registry.register(
        "llm", LlmSummarizer, params=LlmParams,
        description="One out-of-band summarize_messages call (summarizer slot, else turn model)",
    )
    registry.register(
        "drop", DropSummarizer, description="Discard folded turns; no model call"
    )


@hookimpl
def mas_register_identifier_extractors(registry: Any) -> None:
    """Register the ``standard`` identifier extractor (codes, amounts, dates, names, ...)."""
    from mas.library.standard.plugins.context.identifiers import (
        StandardExtractorParams,
        StandardIdentifierExtractor,
    )

    registry.register(
        "standard", StandardIdentifierExtractor, params=StandardExtractorParams,
        description="Codes, amounts, dates, times, numbers with units, e-mails, URLs, paths, "
        "names",
    )
