"""Budget arithmetic of DESIGN §5, with every intermediate number exposed.

::

    window   = resolved input window (agent > infra > catalog > 128,000 with a warning)
    reserve  = effective output budget > binding max_tokens > 2,000
    cap      = min(trimmer.max_tokens, window) if set, else window
    reserve' = trimmer.reserve_tokens if set, else reserve
    margin   = floor(trimmer.safety_margin_ratio x cap)
    hard     = max(0, cap - reserve' - margin)                 # the whole request
    fixed    = system/context + current input + working memory + tool schemas
    limit    = max(0, hard - fixed)                            # history hard limit
    trigger  = floor((limit + exempt) / (1 + h))               # soft trigger, h = hysteresis
             then min() with each earlier trigger the user set (summary_threshold,
             token_ratio: floor(value x window) - (fixed - exempt), remaining_tokens:
             window - value - (fixed - exempt)), capped at limit, floored at 0
    retrigger = floor(trigger x (1 + h))  <= limit             # reuse the summary until here

Window resolution itself is the engine's job; this module takes the resolved number and
its source. ``exempt`` is the part of the fixed costs the soft trigger leaves out (the
recall tool's schema, once a session offers it): it counts against the hard limit only, so
offering recall does not move when the manager folds (docs/context.md, "Archive and
recall").
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from mas.runtime.spec.windows import FALLBACK_CONTEXT_WINDOW, FALLBACK_RESERVE

DEFAULT_WINDOW = FALLBACK_CONTEXT_WINDOW
"""Input window used when nothing resolves one (with a warning)."""

DEFAULT_RESERVE = FALLBACK_RESERVE
"""Completion reserve when neither the output budget nor the binding sets one."""

DEFAULT_SAFETY_MARGIN_RATIO = 0.1
"""``trimmer.safety_margin_ratio`` default: 10 % of the window kept unused."""

DEFAULT_HYSTERESIS_RATIO = 0.1
"""``hysteresis_ratio`` default (spec 000's table and spec 003; DESIGN §5)."""

TriggerKind = Literal["token_ratio", "remaining_tokens"]


@dataclass(frozen=True)
class Trigger:
    """A spec-004 trigger: ``token_ratio`` (share of the window) or ``remaining_tokens``.

    :ivar type: ``token_ratio`` fires when the request reaches ``value x window``;
        ``remaining_tokens`` fires when fewer than ``value`` tokens of the window remain.
    :ivar value: the ratio (0 < value <= 1) or the token count (>= 0).
    """

    type: TriggerKind
    value: float


@dataclass(frozen=True)
class BudgetSettings:
    """The knobs a context manager contributes to the budget (its ``trimmer`` and trigger params).

    :ivar safety_margin_ratio: ``trimmer.safety_margin_ratio``.
    :ivar max_tokens: ``trimmer.max_tokens``: assembly-time payload cap, ``None`` = window.
    :ivar reserve_tokens: ``trimmer.reserve_tokens``, ``None`` = the completion reserve.
    :ivar hysteresis_ratio: ``hysteresis_ratio``.
    :ivar summary_threshold: ``summary_threshold`` (positive), ``None`` for auto.
    :ivar trigger: an optional spec-004 trigger.
    """

    safety_margin_ratio: float = DEFAULT_SAFETY_MARGIN_RATIO
    max_tokens: int | None = None
    reserve_tokens: int | None = None
    hysteresis_ratio: float = DEFAULT_HYSTERESIS_RATIO
    summary_threshold: int | None = None
    trigger: Trigger | None = None


@dataclass(frozen=True)
class FixedCosts:
    """Estimated tokens of everything in the request that is not committed history.

    :ivar system: the system message (agent context, memory seeds, context parts).
    :ivar current_input: the current user turn.
    :ivar working_memory: in-turn tool calls and results.
    :ivar tools: the ``tools`` schemas.
    """

    system: int = 0
    current_input: int = 0
    working_memory: int = 0
    tools: int = 0

    @property
    def total(self) -> int:
        """Sum of the four costs."""
        return self.system + self.current_input + self.working_memory + self.tools


@dataclass(frozen=True)
class ContextBudget:
    """Every number of one request's budget, as computed by :meth:`compute`."""

    window: int
    window_source: str
    reserve: int
    reserve_source: str
    cap: int
    cap_source: str
    request_reserve: int
    request_reserve_source: str
    safety_margin_ratio: float
    margin: int
    hard_budget: int
    fixed: FixedCosts
    history_hard_limit: int
    hysteresis_ratio: float
    auto_trigger: int
    soft_trigger: int
    trigger_source: str
    retrigger: int
    summary_threshold: int | None = None
    trigger: Trigger | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)
    trigger_exempt: int = 0

    @classmethod
    def compute(
        cls,
        *,
        window: int | None,
        reserve: int | None = None,
        fixed: FixedCosts | None = None,
        settings: BudgetSettings | None = None,
        window_source: str = "resolved",
        reserve_source: str = "max_tokens",
        trigger_exempt: int = 0,
    ) -> ContextBudget:
        """Apply DESIGN §5 to the resolved window and reserve.

        :param window: resolved input window; ``None`` uses 128,000 and records a warning.
        :param reserve: effective completion reserve; ``None`` uses 2,000.
        :param fixed: fixed request costs (default all zero).
        :param settings: the context manager's budget settings (default all auto).
        :param window_source: which field gave ``window`` (for events and inspection).
        :param reserve_source: which field gave ``reserve``.
        :param trigger_exempt: tokens of ``fixed`` the soft trigger leaves out (they still
            count against the history's hard limit), at most ``fixed.total``.
        """
        s = settings or BudgetSettings()
        f = fixed or FixedCosts()
        key = (cls, s, window, reserve, f.system, f.current_input, f.working_memory, f.tools,
               window_source, reserve_source, trigger_exempt)
        for known, budget in _recent:
            # The very settings object, not an equal one: an equal int for a float ratio
            # would give the same budget with a field of another type.
            if known[1] is s and known == key:
                return budget
        computed = cls._compute(window, reserve, f, s, window_source, reserve_source,
                                trigger_exempt)
        _remember(key, computed)
        return computed

    @classmethod
    def _compute(
        cls,
        window: int | None,
        reserve: int | None,
        f: FixedCosts,
        s: BudgetSettings,
        window_source: str,
        reserve_source: str,
        trigger_exempt: int,
    ) -> ContextBudget:
        """:meth:`compute` for arguments it does not remember."""
        warnings: list[str] = []
        if window is None:
            window_source = "fallback"
        if window_source.startswith("fallback"):
            # Also when a resolver already chose the fallback: the user should hear of it,
            # with the documented figure (calibration may scale the window in force).
            scaled = f" ({window:,} in force)" if window not in (None, DEFAULT_WINDOW) else ""
            warnings.append(
                f"context window unknown: using the {DEFAULT_WINDOW:,}-token fallback{scaled}; "
                "set spec.models[].context_window or infra generation.context_window"
            )
        if reserve is None:
            reserve_source = "default"
        window, reserve, cap, request_reserve, margin, hard = _hard_budget(window, reserve, s)
        cap_source = "trimmer.max_tokens" if s.max_tokens is not None else window_source
        request_reserve_source = (
            "trimmer.reserve_tokens" if s.reserve_tokens is not None else reserve_source
        )
        total = f.total
        limit = max(0, hard - total)
        exempt = min(max(trigger_exempt, 0), total)
        h = s.hysteresis_ratio
        auto = min(limit, _floor(min(hard, limit + exempt) / (1 + h)))
        trigger, trigger_source = auto, "auto"
        for source, value in _user_triggers(s, window, total - exempt):
            if value < trigger:
                trigger, trigger_source = max(0, value), source
        retrigger = min(limit, _floor(trigger * (1 + h)))
        # Every field stored at once: the __init__ of a frozen dataclass sets each of its
        # 22 fields through object.__setattr__, which cost more than all the arithmetic
        # above (tests/context/test_budget.py checks that none is left out).
        budget = object.__new__(cls)
        budget.__dict__.update(
            window=window,
            window_source=window_source,
            reserve=reserve,
            reserve_source=reserve_source,
            cap=cap,
            cap_source=cap_source,
            request_reserve=request_reserve,
            request_reserve_source=request_reserve_source,
            safety_margin_ratio=s.safety_margin_ratio,
            margin=margin,
            hard_budget=hard,
            fixed=f,
            history_hard_limit=limit,
            hysteresis_ratio=h,
            auto_trigger=auto,
            soft_trigger=trigger,
            trigger_source=trigger_source,
            retrigger=retrigger,
            summary_threshold=s.summary_threshold,
            trigger=s.trigger,
            warnings=tuple(warnings),
            trigger_exempt=exempt,
        )
        return budget

    def as_dict(self) -> dict[str, Any]:
        """Every number as a flat JSON-ready dict (fixed costs nested under ``fixed``)."""
        data = asdict(self)
        data["fixed"]["total"] = self.fixed.total
        data["warnings"] = list(self.warnings)
        return data


RECENT_BUDGETS = 4
"""Budgets :meth:`ContextBudget.compute` remembers, newest first."""

_recent: tuple[tuple[tuple[Any, ...], ContextBudget], ...] = ()


def _remember(key: tuple[Any, ...], budget: ContextBudget) -> None:
    """Keep ``budget`` for ``key``: a manager asks for the budget of its turn's boundary
    (nothing in flight) on every request of the turn, which is the budget the turn's first
    request computed. Budgets are frozen and depend on nothing but the key, so a
    remembered one is the one a new computation would give."""
    global _recent
    _recent = ((key, budget), *_recent[: RECENT_BUDGETS - 1])


def hard_budget(
    window: int | None, reserve: int | None, settings: BudgetSettings | None = None
) -> int:
    """The hard request budget alone (window − reserve − margin): it does not depend on
    the fixed costs, which need it to size in-flight tool results."""
    return _hard_budget(window, reserve, settings or BudgetSettings())[5]


def _hard_budget(
    window: int | None, reserve: int | None, s: BudgetSettings
) -> tuple[int, int, int, int, int, int]:
    """``(window, reserve, cap, request_reserve, margin, hard)`` with the defaults applied."""
    window = DEFAULT_WINDOW if window is None else window
    reserve = DEFAULT_RESERVE if reserve is None else reserve
    cap = min(s.max_tokens, window) if s.max_tokens is not None else window
    request_reserve = s.reserve_tokens if s.reserve_tokens is not None else reserve
    margin = _floor(s.safety_margin_ratio * cap)
    return window, reserve, cap, request_reserve, margin, max(0, cap - request_reserve - margin)


def _user_triggers(s: BudgetSettings, window: int, fixed: int) -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    if s.summary_threshold is not None and s.summary_threshold > 0:
        found.append(("summary_threshold", s.summary_threshold))
    if s.trigger is not None:
        if s.trigger.type == "token_ratio":
            found.append(("token_ratio", _floor(s.trigger.value * window) - fixed))
        else:
            found.append(("remaining_tokens", window - _floor(s.trigger.value) - fixed))
    return found


def _floor(value: float) -> int:
    # Absorb binary rounding (0.1 * 30000 is 3000.0000000000005, 0.29 * 100 is 28.99...).
    return math.floor(value + 1e-9)
