"""The engine's retry loop around one ``litellm.completion`` call.

The engine retries itself rather than through LiteLLM: LiteLLM's wrapper would also retry
authentication errors (and needs an optional package to retry at all), and the provider
SDK's own loop would multiply the attempts. One loop here makes attempt counts exact.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mas.runtime.engine import _litellm
from mas.runtime.errors import ModelCallError

# Retry warnings belong to the engine's public logger (spec 000's logger table).
log = logging.getLogger("mas.runtime.engine.llm_live")


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


def complete(
    kwargs: dict[str, Any],
    *,
    policy: RetryPolicy,
    purpose: str,
    api_base: str | None,
    secrets: tuple[str, ...],
) -> tuple[Any, int]:
    """``litellm.completion(**kwargs)`` with retries; returns the response and attempts.

    :raises ModelCallError: authentication failed (never retried), a non-transient error,
        or a transient one that outlived the retries. The message is one line, secrets
        masked, and the LiteLLM exception is not chained (it may quote the key).
    """
    litellm = _litellm.load_litellm()
    model = kwargs["model"]
    attempt = 0
    while True:
        attempt += 1
        try:
            return litellm.completion(**kwargs), attempt
        except Exception as exc:
            if _litellm.is_authentication(exc):
                where = f" at {api_base}" if api_base else ""
                raise ModelCallError(
                    f"authentication failed for model {model!r}{where} ({purpose} call): "
                    f"check the API key (infra generation.api_key_env); "
                    f"{_litellm.describe(exc, secrets)}"
                ) from None
            if _litellm.retriable(exc) and attempt <= policy.num_retries:
                wait = policy.wait(exc, attempt)
                log.warning(
                    "model %s: attempt %d failed (%s); retrying in %.2fs",
                    model, attempt, type(exc).__name__, wait,
                )
                policy.sleep(wait)
                continue
            tried = f"after {attempt} attempt(s)" if attempt > 1 else "on the first attempt"
            raise ModelCallError(
                f"model call to {model!r} failed {tried} ({purpose} call): "
                f"{_litellm.describe(exc, secrets)}"
            ) from None
