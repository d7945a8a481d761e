"""Backing off a failing summarizer: after a failed summary call, skip the next few.

Without it, a summarizer whose endpoint is down is called again on every later turn
(each over budget, so each compacts), and every turn pays its retries and timeouts.
After ``k`` failures in a row of one model, the next ``2**(k-1)`` summary calls to it
(capped at :data:`MAX_SKIP`) fail at once without a request; a success resets it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from mas.runtime.errors import ModelCallError

MAX_SKIP = 8
"""Most summary calls skipped in a row before the model is tried again."""


class SummarizerBackoffError(ModelCallError):
    """A summary call skipped because its model failed just before."""


@dataclass
class _State:
    failures: int = 0
    skip: int = 0
    last: str = ""


class SummaryBackoff:
    """Per-model failure streaks of summary calls."""

    def __init__(self) -> None:
        self._models: dict[str, _State] = {}
        self._lock = threading.Lock()

    def check(self, model: str) -> None:
        """Raise when the next summary call to ``model`` is to be skipped (and count it).

        :raises SummarizerBackoffError: naming the failures so far and the last error.
        """
        with self._lock:
            state = self._models.get(model)
            if state is None or state.skip <= 0:
                return
            state.skip -= 1
            failures, last = state.failures, state.last
        raise SummarizerBackoffError(
            f"summary call to {model!r} skipped: backing off after {failures} failure(s) "
            f"in a row; last: {last}"
        )

    def failed(self, model: str, reason: str) -> None:
        """Record a failed summary call to ``model``."""
        with self._lock:
            state = self._models.setdefault(model, _State())
            state.failures += 1
            state.skip = min(MAX_SKIP, 2 ** (state.failures - 1))
            state.last = reason[:200]  # the first failure's line, not a nest of them

    def succeeded(self, model: str) -> None:
        """Record a successful summary call: the streak ends."""
        with self._lock:
            self._models.pop(model, None)
