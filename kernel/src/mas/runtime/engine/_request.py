"""One live request: sized to the model's window, built, sent through the retry loop.

:func:`send` cuts a request that is known not to fit before the first attempt
(:func:`fit_first`), sends it with the ``litellm.completion`` keyword arguments of
:func:`request_kwargs` through :func:`~mas.runtime.engine._retry.complete`, and re-sizes
and resends it after a window overflow.
"""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from mas.runtime.engine import _litellm, _retry, _window
from mas.runtime.engine._accounting import count_cut
from mas.runtime.protocols import Message, ModelReply

if TYPE_CHECKING:
    from mas.runtime.degradation import Degradation
    from mas.runtime.engine.llm_live import Engine

# The cut-before-sending line belongs to the engine's public logger (spec 000's logger
# table), as the retry warnings do.
log = logging.getLogger("mas.runtime.engine.llm_live")

MAX_WINDOW_RETRIES = 3
"""Re-sized attempts after a window overflow before the call fails."""

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


def send(
    engine: Engine,
    model: str,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    params: dict[str, Any],
    purpose: str,
    window: int | None = None,
) -> tuple[ModelReply, int]:
    """One live call, sized to ``window`` first when it is known (:func:`fit_first`); a
    window overflow is re-sized and retried, never skipped.

    Each re-sized attempt counts against ``max_llm_calls`` and is counted as
    ``window_overflows_recovered`` (``judge_truncations`` for a judge); the provider's
    count of the refused prompt also teaches the calibration, so the next request is
    sized right from the start.
    """
    sent, cut = messages, 0
    if window is not None:
        sent, cut = fit_first(engine, model, messages, tools, params, purpose, window)
    for recovery in range(MAX_WINDOW_RETRIES + 1):
        try:
            reply, attempts = _attempt(engine, model, sent, tools, params, purpose)
        except _window.WindowExceededError as exc:
            if exc.prompt_tokens:
                engine.calibration.observe(model, sent, exc.prompt_tokens, tools=tools)
            shrunk = _window.shrink(sent, _window.shrink_factor(exc))
            if recovery == MAX_WINDOW_RETRIES or not shrunk.cut_chars:
                raise
            engine._charge_budget(purpose)
            count_cut(
                engine.degradation, purpose,
                f"{purpose} request to {model}: {exc.requested or '?'} tokens for a "
                f"window of {exc.window or '?'}; cut {shrunk.cut_chars} characters from "
                f"{shrunk.cut_messages} message(s) and retried",
            )
            sent, cut = shrunk.messages, cut + shrunk.cut_chars
            continue
        if reply.usage is not None:
            engine.calibration.observe(model, sent, reply.usage.prompt_tokens, tools=tools)
        return replace(reply, cut_chars=cut), attempts
    raise AssertionError("unreachable: the last recovery re-raises")  # pragma: no cover


def fit_first(
    engine: Engine,
    model: str,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    params: dict[str, Any],
    purpose: str,
    window: int,
) -> tuple[list[Message], int]:
    """``messages`` cut to fit ``window`` with the reply's ``max_tokens``, by the
    calibrated estimate, before the first attempt: a refusal would cost a call."""
    reserve = int(params.get("max_tokens") or 0)
    fitted = _window.fit_request(engine.calibration, model, messages, tools,
                                 window=window, reserve=reserve)
    if not fitted.shrunk.cut_chars:
        return messages, 0
    # Counted as the refused-then-cut request is: it is the same cut, made one call
    # earlier.
    reason = fitted.reason(purpose, model, window, reserve)
    log.info("%s", reason)
    count_cut(engine.degradation, purpose, reason)
    return fitted.shrunk.messages, fitted.shrunk.cut_chars


def _attempt(
    engine: Engine,
    model: str,
    messages: list[Message],
    tools: list[dict[str, Any]] | None,
    params: dict[str, Any],
    purpose: str,
) -> tuple[ModelReply, int]:
    """Send ``messages`` as they are, with the model's own timeout and retries."""
    engine._ensure_providers()
    own = engine.model_settings.get(model, {})
    kwargs = request_kwargs(
        model, messages, tools, params, timeout=own.get("timeout") or engine.timeout,
        session_id=engine.session_id, api_base=engine.api_base, api_key=engine._api_key,
        trace_id=engine.conversation_id(),
    )
    policy = engine.retry_policy
    if own.get("num_retries") is not None:
        policy = replace(policy, num_retries=int(own["num_retries"]))
    response, attempts = _retry.complete(
        kwargs, policy=policy, purpose=purpose, api_base=engine.api_base,
        secrets=(engine._api_key,) if engine._api_key else (),
        on_retry=partial(_count_summary_retry, engine.degradation)
        if purpose == "summary" else None,
    )
    return _litellm.reply_of(response, model), attempts


def _count_summary_retry(degradation: Degradation, exc: BaseException) -> None:
    degradation.add("summarizer_retries", reason=f"{type(exc).__name__}")
