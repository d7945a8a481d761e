"""The engine's retry loop around one ``litellm.completion`` call.

The engine retries itself rather than through LiteLLM: LiteLLM's wrapper would also retry
authentication errors (and needs an optional package to retry at all), and the provider
SDK's own loop would multiply the attempts. One loop here makes attempt counts exact.

Policy (docs/engine.md, "Failures and retries"):

- retried, up to ``num_retries`` times: 408, 409, 429, 500, 502, 503, 504 and 529
  (Anthropic's "overloaded"), refused or dropped connections and unreadable responses;
- never retried: authentication (401/403, or no key to send), any other 4xx, and an
  attempt that outlived ``timeout``. ``timeout`` bounds the whole attempt, not each read;
  a server that is still working on the abandoned request (llama.cpp and Ollama serve one
  request per slot) would only queue the retry behind it, so a timed-out call fails at
  once with an error that says so;
- a window overflow raises :class:`~mas.runtime.engine._window.WindowExceededError` for
  the engine to re-size the request.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mas.runtime._deadline import Worker
from mas.runtime.engine import _litellm
from mas.runtime.engine._window import WindowExceededError, parse_overflow
from mas.runtime.errors import ModelCallError

# Retry warnings belong to the engine's public logger (spec 000's logger table).
log = logging.getLogger("mas.runtime.engine.llm_live")

SETUP_ALLOWANCE = 60.0
"""Seconds an attempt may spend before its request is sent (LiteLLM's first call imports
and builds its HTTP client) when that time is not counted against its ``timeout``."""
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""HTTP statuses worth another attempt."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry transient failures.

    :ivar num_retries: extra attempts after the first.
    :ivar backoff: first wait without ``Retry-After``, doubled per attempt.
    :ivar max_wait: cap on any single wait, ``Retry-After`` included.
    :ivar sleep: how to wait.
    """

    num_retries: int
    backoff: float
    max_wait: float
    sleep: Callable[[float], None]

    def wait(self, exc: BaseException, attempt: int) -> float:
        """Seconds to wait after failed ``attempt`` (1-based)."""
        asked = _litellm.retry_after(exc)
        wait = asked if asked is not None else self.backoff * 2 ** (attempt - 1)
        return min(wait, self.max_wait)


class AttemptTimeoutError(TimeoutError):
    """One attempt outlived the engine's ``timeout`` (the whole attempt, not one read)."""


def endpoint(api_base: str | None, model: str) -> str:
    """Where a call goes, for error lines: ``host:port`` of ``api_base``, never a key.

    Without ``api_base`` it is the provider LiteLLM picks from the model prefix.
    """
    if api_base:
        parts = urlsplit(api_base if "//" in api_base else f"//{api_base}")
        host = parts.hostname or api_base
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f"{host}:{port}"
    provider = model.split("/", 1)[0] if "/" in model else "openai"
    return f"{provider} default endpoint"


def attempt(call: Callable[[], Any], timeout: float, *, from_sending: bool = False) -> Any:
    """Run ``call()`` and return its result, or raise after ``timeout`` seconds overall.

    The call runs in a daemon thread: a provider SDK's timeout applies per read, so a
    server that trickles its answer a byte at a time would otherwise hold the caller for
    as long as it likes. The abandoned thread ends at the SDK's own read timeout.

    :param from_sending: the deadline starts when LiteLLM sends the request
        (:func:`~mas.runtime.engine._litellm.on_request_sent`), so its first call's set-up
        (imports, HTTP client: seconds on a loaded machine) is not counted; the set-up gets
        :data:`SETUP_ALLOWANCE` of its own. Otherwise it starts with the call.
    """
    sent: list[float] = []
    ready = threading.Event()  # the request was sent, or the call ended

    def run() -> Any:
        def mark() -> None:
            sent.append(time.monotonic())
            ready.set()

        forget = _litellm.on_request_sent(mark) if from_sending else None
        try:
            return call()
        finally:
            if forget is not None:
                forget()

    started = time.monotonic()
    worker = Worker(run, "mas-llm-attempt", also_set=ready)
    done = worker.wait(timeout)
    if not done and from_sending:
        ready.wait(started + SETUP_ALLOWANCE - time.monotonic())
        done = worker.wait(sent[0] + timeout - time.monotonic() if sent else 0.0)
        if not sent and not done:
            raise AttemptTimeoutError(
                f"the request was not sent within {SETUP_ALLOWANCE:g}s of set-up")
    if not done:
        raise AttemptTimeoutError(f"no complete answer within {timeout:g}s")
    return worker.result()


def status_of(exc: BaseException) -> int | None:
    """The HTTP status a LiteLLM error carries, when it has one."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def retriable(exc: BaseException) -> bool:
    """Whether another attempt may help (see the module policy)."""
    if isinstance(exc, AttemptTimeoutError) or _litellm.is_authentication(exc):
        return False
    litellm = _litellm.load_litellm()
    if isinstance(exc, litellm.ContextWindowExceededError):
        return False
    if isinstance(exc, litellm.Timeout):
        # The SDK's own read timeout: the server stopped answering (or sent a 504).
        return True
    if isinstance(exc, litellm.APIConnectionError):
        return True
    status = status_of(exc)
    return status in RETRY_STATUSES if status is not None else _litellm.retriable(exc)


def complete(
    kwargs: dict[str, Any],
    *,
    policy: RetryPolicy,
    purpose: str,
    api_base: str | None,
    secrets: tuple[str, ...],
    on_retry: Callable[[BaseException], None] | None = None,
) -> tuple[Any, int]:
    """``litellm.completion(**kwargs)`` with retries; returns the response and attempts.

    :param on_retry: called with each error that is about to be retried.
    :raises WindowExceededError: the provider said the request is longer than its window.
    :raises ModelCallError: authentication failed (never retried), a non-transient error,
        a timed-out attempt, or a transient error that outlived the retries. The message
        is one line naming model and endpoint, secrets masked, and the LiteLLM exception
        is not chained (it may quote the key).
    """
    litellm = _litellm.load_litellm()
    model = kwargs["model"]
    where = endpoint(api_base, model)
    timeout = float(kwargs.get("timeout") or 60.0)
    from_sending = _litellm.signals_sending(model)
    number = 0
    while True:
        number += 1
        try:
            return attempt(lambda: litellm.completion(**kwargs), timeout,
                           from_sending=from_sending), number
        except Exception as exc:
            if _litellm.is_authentication(exc):
                raise ModelCallError(
                    f"authentication failed for model {model!r} at {where} ({purpose} call): "
                    f"check the API key (infra generation.api_key_env); "
                    f"{_litellm.describe(exc, secrets)}"
                ) from None
            if isinstance(exc, litellm.ContextWindowExceededError):
                window, requested, completion = parse_overflow(_refusal_text(exc))
                raise WindowExceededError(
                    f"model {model!r} at {where} refused the {purpose} request as longer "
                    f"than its window: {_litellm.describe(exc, secrets)}",
                    window=window, requested=requested, completion=completion,
                ) from None
            if retriable(exc) and number <= policy.num_retries:
                wait = policy.wait(exc, number)
                log.warning(
                    "model %s at %s: attempt %d failed (%s); retrying in %.2fs",
                    model, where, number, type(exc).__name__, wait,
                )
                if on_retry is not None:
                    on_retry(exc)
                policy.sleep(wait)
                continue
            tried = f"after {number} attempt(s)" if number > 1 else "on the first attempt"
            hint = (" (timed-out attempts are not retried: raise the model's timeout)"
                    if isinstance(exc, AttemptTimeoutError) else "")
            raise ModelCallError(
                f"model call to {model!r} at {where} failed {tried} ({purpose} call): "
                f"{_litellm.describe(exc, secrets)}{hint}"
            ) from None


def _refusal_text(exc: BaseException) -> str:
    """All a refusal said: LiteLLM's message, the parsed body and the raw response body
    (llama.cpp's ``n_prompt_tokens`` and ``n_ctx`` survive only in the last)."""
    response = getattr(exc, "response", None)
    try:
        raw = getattr(response, "text", "")
    except RuntimeError:  # httpx: a streamed body that was never read
        raw = ""
    return f"{exc} {getattr(exc, 'body', '') or ''} {raw if isinstance(raw, str) else ''}"
