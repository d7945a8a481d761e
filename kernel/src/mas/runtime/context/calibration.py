"""Calibration of the chars/4 estimate against provider ``prompt_tokens``.

The estimator is a heuristic; a provider's tokenizer counts prose, JSON and tool calls
differently. :class:`Calibration` learns, per model, the ratio of the ``prompt_tokens``
a provider reported to what was estimated for the same request, and can scale later
estimates by it.

One request total cannot say how much of an error came from JSON tool results and how
much from prose, so the calibration also fits, over all requests seen for the model, one
ratio per message kind (:func:`kind_of`) plus a fixed number of tokens per request (ridge
least squares, pulled toward the overall ratio).

Until a model has been seen often enough, :func:`digit_prior` stands in: many tokenizers
(Llama's, Qwen's) spend one token per digit where chars/4 charges a quarter, so the
start is conservative on digit-dense text. The engine observes every live call of every
model (turn, summary, judge); sessions save the sums with their state
(:meth:`Calibration.to_state`). A model is learned as it is actually called: behind an
Infra mapping (``models: {gpt-4o: openai/gpt-4o}``) both names read and teach one
calibration (:attr:`Calibration.called`)::

    calibration = Calibration(enabled=True)
    calibration.observe("gpt-4o", request_messages, usage.prompt_tokens)   # after a call
    calibration.estimate("gpt-4o", messages)      # calibrated once it has seen enough
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from mas.runtime.context.estimate import DEFAULT_ESTIMATOR, TokenEstimator
from mas.runtime.protocols import Message

KINDS = ("system", "user", "assistant", "tool_calls", "tool")
"""Message kinds with their own fit: an assistant message that calls tools is ``tool_calls``."""

MIN_OBSERVATIONS = 3
"""Requests seen for a model before its calibration is applied."""

_RIDGE = 1e-3
"""Pull of the per-kind fit toward the overall ratio (keeps rare kinds sane)."""

_FEATURES = len(KINDS) + 1
"""Estimated tokens per kind, plus one constant per request."""

DIGIT_TOKENS = 1.0
"""Tokens a digit is assumed to cost before a model's own ratio is known."""


def digit_prior(texts: Iterable[str], estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> float:
    """Ratio to assume before any observation: as if each digit cost one token.

    1.0 for text without digits; about 2.5 for text that is half digits.
    """
    estimated = digits = 0
    for text in texts:
        estimated += estimator.text(text)
        digits += sum(ch.isdigit() for ch in text)
    if estimated <= 0 or digits == 0:
        return 1.0
    # A digit already counts 1/chars_per_token in the estimate; the rest is missing.
    missing = digits * (DIGIT_TOKENS - 1 / estimator.chars_per_token)
    return max(1.0, (estimated + missing) / estimated)


def kind_of(message: Message) -> str:
    """The calibration kind of one chat message."""
    role = str(message.get("role") or "user")
    if role == "assistant" and message.get("tool_calls"):
        return "tool_calls"
    return role if role in KINDS else "user"


@dataclass
class _Model:
    """Running sums for one model: totals and the normal equations of the per-kind fit."""

    count: int = 0
    estimated: int = 0
    reported: int = 0
    xtx: list[list[float]] = field(
        default_factory=lambda: [[0.0] * _FEATURES for _ in range(_FEATURES)]
    )
    xty: list[float] = field(default_factory=lambda: [0.0] * _FEATURES)
    fit: list[float] | None = None


class Calibration:
    """Per-model calibration of token estimates from provider ``prompt_tokens``.

    :param enabled: when ``False`` (the default) :meth:`estimate` and :meth:`message`
        return the plain estimate; observations are still recorded and can be inspected.
    :param estimator: the estimator being calibrated.
    :param min_observations: requests needed before a model's calibration is applied.
    :ivar called: the model as called for a name it is reached by (the engine sets Infra's
        model mapping); every method keys its sums by it, so a session asking by its
        manifest's name reads what the provider's usage taught under the deployed name.
    """

    def __init__(
        self,
        *,
        enabled: bool = False,
        estimator: TokenEstimator = DEFAULT_ESTIMATOR,
        min_observations: int = MIN_OBSERVATIONS,
    ) -> None:
        self.enabled = enabled
        self.estimator = estimator
        self.min_observations = min_observations
        self.called: Callable[[str], str] = str
        self._models: dict[str, _Model] = {}
        self._lock = threading.Lock()

    # -- learning --------------------------------------------------------------------

    def observe(
        self,
        model: str,
        messages: Iterable[Message],
        prompt_tokens: int,
        *,
        tools: list[dict[str, object]] | None = None,
    ) -> None:
        """Record one request the provider reported ``prompt_tokens`` for.

        Tool schemas count toward the estimate of the request (as ``system``). Requests
        with nothing estimated or nothing reported are ignored.
        """
        row = self._row(messages)
        row[KINDS.index("system")] += float(self.estimator.tools(tools))
        total = int(sum(row[: len(KINDS)]))
        if total <= 0 or prompt_tokens <= 0:
            return
        with self._lock:
            state = self._models.setdefault(self.called(model), _Model())
            state.count += 1
            state.estimated += total
            state.reported += prompt_tokens
            for i, a in enumerate(row):
                state.xty[i] += a * prompt_tokens
                for j, b in enumerate(row):
                    state.xtx[i][j] += a * b
            state.fit = None

    def _row(self, messages: Iterable[Message]) -> list[float]:
        row = [0.0] * _FEATURES
        row[-1] = 1.0
        for message in messages:
            row[KINDS.index(kind_of(message))] += self.estimator.message(message)
        return row

    # -- reading ---------------------------------------------------------------------

    def ratio(self, model: str) -> float:
        """Reported over estimated tokens for ``model``; 1.0 while too little was seen."""
        return self._ratio(self.called(model))

    def _ratio(self, key: str) -> float:
        with self._lock:
            state = self._models.get(key)
            if state is None or state.count < self.min_observations:
                return 1.0
            return state.reported / state.estimated

    def message(self, model: str, message: Message) -> int:
        """Calibrated tokens of one message (its plain estimate when disabled or unlearned)."""
        return self._message(self._fit(model) if self.enabled else None, message)

    def _message(self, fit: list[float] | None, message: Message) -> int:
        plain = self.estimator.message(message)
        if fit is None:
            return plain
        return max(0, round(fit[KINDS.index(kind_of(message))] * plain))

    def estimate(self, model: str, messages: Sequence[Message]) -> int:
        """Calibrated tokens of a request's messages (per-request constant included)."""
        fit = self._fit(model) if self.enabled else None
        if fit is None:
            return self.estimator.messages(messages)
        return max(0, round(sum(self._message(fit, m) for m in messages) + fit[-1]))

    def learned(self, model: str) -> bool:
        """Whether ``model`` has been seen often enough for its own ratio to apply."""
        with self._lock:
            state = self._models.get(self.called(model))
            return state is not None and state.count >= self.min_observations

    def to_state(self) -> dict[str, dict[str, object]]:
        """The running sums of every model, as JSON data (for the session file)."""
        with self._lock:
            return {
                name: {"count": m.count, "estimated": m.estimated, "reported": m.reported,
                       "xtx": [list(row) for row in m.xtx], "xty": list(m.xty)}
                for name, m in sorted(self._models.items())
            }

    def load_state(self, state: dict[str, dict[str, object]] | None) -> None:
        """Replace the sums with what :meth:`to_state` saved (``None``: nothing)."""
        models = {}
        for name, saved in (state or {}).items():
            xtx = saved.get("xtx")
            xty = saved.get("xty")
            if not (isinstance(xtx, list) and len(xtx) == _FEATURES and isinstance(xty, list)
                    and len(xty) == _FEATURES):
                continue  # written by an older feature set: relearn rather than misread
            models[name] = _Model(
                count=int(saved.get("count", 0)),  # type: ignore[call-overload]
                estimated=int(saved.get("estimated", 0)),  # type: ignore[call-overload]
                reported=int(saved.get("reported", 0)),  # type: ignore[call-overload]
                xtx=[[float(x) for x in row] for row in xtx],
                xty=[float(x) for x in xty],
            )
        with self._lock:
            self._models = models

    def to_dict(self) -> dict[str, dict[str, float | int]]:
        """Per model: requests seen and the overall ratio (for logs and inspection)."""
        with self._lock:
            names = sorted(self._models)
        return {
            name: {"requests": self._models[name].count, "ratio": round(self._ratio(name), 4)}
            for name in names
        }

    def _fit(self, model: str) -> list[float] | None:
        with self._lock:
            state = self._models.get(self.called(model))
            if state is None or state.count < self.min_observations:
                return None
            if state.fit is None:
                state.fit = _solve(state, state.reported / state.estimated)
            return state.fit


def _solve(state: _Model, overall: float) -> list[float]:
    """Ridge least squares: ratios pulled toward ``overall``, the constant toward 0."""
    n = _FEATURES
    prior = [overall] * len(KINDS) + [0.0]
    # Each feature is pulled in proportion to its own weight, so a rare kind is not swamped.
    pull = [_RIDGE * (state.xtx[i][i] or 1.0) for i in range(n)]
    a = [
        [state.xtx[i][j] + (pull[i] if i == j else 0.0) for j in range(n)]
        + [state.xty[i] + pull[i] * prior[i]]
        for i in range(n)
    ]
    for col in range(n):  # Gauss-Jordan elimination with partial pivoting
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        if not a[col][col]:
            continue
        for row in range(n):
            if row != col:
                factor = a[row][col] / a[col][col]
                a[row] = [x - factor * y for x, y in zip(a[row], a[col], strict=True)]
    return [a[i][n] / a[i][i] if a[i][i] else prior[i] for i in range(n)]
