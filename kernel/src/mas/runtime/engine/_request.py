"""The keyword arguments of one ``litellm.completion`` call, built from the engine's settings."""

from __future__ import annotations

import os
from typing import Any

from mas.runtime.protocols import Message

KEYLESS_PLACEHOLDER = "no-key"
"""Key sent to an ``openai/`` server at ``api_base`` when none is configured."""


def request_kwargs(
    model: str,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    params: dict[str, Any],
    *,
    timeout: float,
    session_id: str,
    api_base: str | None,
    api_key: str | None,
    trace_id: str = "",
) -> dict[str, Any]:
    """Everything ``litellm.completion`` is called with (unset ``params`` are left out)."""
    kwargs: dict[str, Any] = {
        "model": model,
        "messages": messages,
        "timeout": timeout,
        # Retries are the engine's own (see _retry); LiteLLM's and the SDK's are off.
        "num_retries": 0,
        "max_retries": 0,
        # A parameter the provider cannot take is dropped rather than failing the call.
        "drop_params": True,
    }
    kwargs.update({k: v for k, v in params.items() if v is not None})
    # LiteLLM keeps these for itself (logging, custom providers) and never sends them
    # on: the offline model keys its simulated prefix cache by them.
    if session_id:
        kwargs["litellm_session_id"] = session_id
    if trace_id:
        kwargs["litellm_trace_id"] = trace_id
    if tools:
        kwargs["tools"] = tools
    if api_base:
        kwargs["api_base"] = api_base
    if api_key:
        kwargs["api_key"] = api_key
    elif api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        # A local OpenAI-compatible server (llama.cpp, Ollama, vLLM) often needs no
        # key, but the OpenAI SDK will not send a request without one.
        kwargs["api_key"] = KEYLESS_PLACEHOLDER
    return kwargs


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
