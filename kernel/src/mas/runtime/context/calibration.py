"""Calibration of the chars/4 estimate against provider ``prompt_tokens`` (off by default).

The estimator is a heuristic; a provider's tokenizer counts prose, JSON and tool calls
differently. :class:`Calibration` learns, per model, the ratio of the ``prompt_tokens``
the provider reported to what was estimated for the same request, and can scale later
estimates by it. Given the estimate split by message kind (see :func:`kind_of`), it also
learns one ratio per kind by least squares over the observed requests, since one request
total cannot tell how much of an error came from JSON tool results and how much from
prose.

Nothing calls it unless a caller opts in::

    calibration = Calibration(enabled=True)
    calibration.observe("gpt-4o", kind_estimates(request_messages), usage.prompt_tokens)
    calibration.apply("gpt-4o", estimate, kind="tool")   # scaled once it has learned
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mas.runtime.context.estimate import DEFAULT_ESTIMATOR, TokenEstimator
from mas.runtime.protocols import Message

KINDS = ("system", "user", "assistant", "tool_calls", "tool")
"""Message kinds with their own ratio: an assistant message that calls tools is ``tool_calls``."""

MIN_OBSERVATIONS = 3
"""Requests seen for a model before its ratios are applied."""

_RIDGE = 1e-3
"""Pull of each per-kind ratio toward the model's overall ratio (keeps unseen kinds sane)."""


def kind_of(message: Message) -> str:
    """The calibration kind of one chat message."""
    role = str(message.get("role") or "user")
    if role == "assistant" and message.get("tool_calls"):
        return "tool_calls"
    return role if role in KINDS else "user"


def kind_estimates(
    messages: Iterable[Message], estimator: TokenEstimator = DEFAULT_ESTIMATOR
) -> dict[str, int]:
    """Estimated tokens of ``messages`` split by :func:`kind_of`."""
    out: dict[str, int] = {}
    for message in messages:
        kind = kind_of(message)
        out[kind] = out.get(kind, 0) + estimator.message(message)
    return out


@dataclass
class _Model:
    """Running sums for one model: totals and the normal equations of the per-kind fit."""

    count: int = 0
    estimated: int = 0
    reported: int = 0
    xtx: list[list[float]] = field(default_factory=lambda: [[0.0] * len(KINDS) for _ in KINDS])
    xty: list[float] = field(default_factory=lambda: [0.0] * len(KINDS))
    kinds: dict[str, float] | None = None


class Calibration:
    """Per-model ratio of provider ``prompt_tokens`` to the estimate.

    :param enabled: when ``False`` (the default) :meth:`apply` returns estimates unchanged;
        observations are still recorded, so the ratio can be inspected.
    :param min_observations: requests needed before a model's ratio is applied.
    """

    def __init__(self, *, enabled: bool = False, min_observations: int = MIN_OBSERVATIONS) -> None:
        self.enabled = enabled
        self.min_observations = min_observations
        self._models: dict[str, _Model] = {}
        self._lock = threading.Lock()

    def observe(
        self, model: str, estimate: int | Mapping[str, int], prompt_tokens: int
    ) -> None:
        """Record one request: its estimate (a total, or per kind) and the reported tokens.

        Requests with no estimate or no reported tokens are ignored.
        """
        parts = dict(estimate) if isinstance(estimate, Mapping) else None
        total = sum(parts.values()) if parts is not None else int(estimate)
        if total <= 0 or prompt_tokens <= 0:
            return
        with self._lock:
            state = self._models.setdefault(model, _Model())
            state.count += 1
            state.estimated += total
            state.reported += prompt_tokens
            if parts is not None:
                row = [float(parts.get(kind, 0)) for kind in KINDS]
                for i, a in enumerate(row):
                    state.xty[i] += a * prompt_tokens
                    for j, b in enumerate(row):
                        state.xtx[i][j] += a * b
                state.kinds = None

    def ratio(self, model: str, kind: str | None = None) -> float:
        """The learned ratio for ``model`` (and ``kind``); 1.0 while too little was seen."""
        with self._lock:
            state = self._models.get(model)
            if state is None or state.count < self.min_observations:
                return 1.0
            overall = state.reported / state.estimated
            if kind is None:
                return overall
            if state.kinds is None:
                state.kinds = _solve(state, overall)
            return state.kinds.get(kind, overall)

    def apply(self, model: str, estimate: int, kind: str | None = None) -> int:
        """``estimate`` scaled by :meth:`ratio` when enabled, else unchanged."""
        if not self.enabled:
            return estimate
        return round(estimate * self.ratio(model, kind))

    def to_dict(self) -> dict[str, dict[str, float | int]]:
        """Per model: requests seen and the overall ratio (for logs and inspection)."""
        return {
            model: {"requests": s.count, "ratio": round(self.ratio(model), 4)}
            for model, s in sorted(self._models.items())
        }


def _solve(state: _Model, overall: float) -> dict[str, float]:
    """Ridge least squares of reported tokens on per-kind estimates, toward ``overall``."""
    n = len(KINDS)
    # Each kind is pulled in proportion to its own weight, so a rare kind is not swamped.
    pull = [_RIDGE * (state.xtx[i][i] or 1.0) for i in range(n)]
    a = [
        [state.xtx[i][j] + (pull[i] if i == j else 0.0) for j in range(n)]
        + [state.xty[i] + pull[i] * overall]
        for i in range(n)
    ]
    for col in range(n):  # Gaussian elimination with partial pivoting
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        for row in range(n):
            if row != col and a[col][col]:
                factor = a[row][col] / a[col][col]
                a[row] = [x - factor * y for x, y in zip(a[row], a[col], strict=True)]
    return {
        kind: (a[i][n] / a[i][i] if a[i][i] else overall)
        for i, kind in enumerate(KINDS)
        if state.xtx[i][i] > 0
    }
