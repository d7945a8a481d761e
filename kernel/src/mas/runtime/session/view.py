"""ContextUsageView: what ``inspect_context(session_id)`` returns (spec 003).

Numbers and metadata only — never prompt text, tool arguments or tool results.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mas.runtime.session.agent import AgentSession


@dataclass(frozen=True)
class ContextUsageView:
    """The latest assembled request of a session, and its cumulative usage and cost.

    After a compaction ``estimated_prompt_tokens`` counts the summary baseline plus the
    turns after it (what the next request will carry), while ``cost`` and the cumulative
    token totals keep every call ever made (spec 004). ``accounting`` says where every
    committed message went on the latest request (sent, summarized, dropped, cut),
    ``identifier_check`` totals the summaries' identifier checks, ``archive`` says how
    much of what left the request is kept for recall (``None`` without an archive; its
    ``cut`` counts what the final trim removed), and ``recall`` totals the session's
    ``recall_context`` calls (:class:`~mas.runtime.session.recall.RecallCounts`).
    ``tail`` is the verbatim tail the latest compaction kept (``keep_turns`` asked,
    ``turns``, ``messages`` and ``tokens`` kept, the ``token_bound`` that sized it), for a
    manager that keeps one (``summarising``); ``None`` otherwise or before a compaction.

    ``declared_window`` is the window the manifest, Infra or catalog declares, in the
    provider's tokens; ``window`` is the same room in the estimator's tokens once the
    calibration scaled it (``window_source`` then ends ``(calibrated xR)``), the figure
    every budget, trigger and fill ratio of the view is measured against.
    """

    session_id: str
    agent: str
    turns: int
    model: str
    model_source: str
    window: int | None
    window_source: str | None
    reserve: int | None
    hard_budget: int | None
    estimated_prompt_tokens: int | None
    remaining: int | None
    fill_ratio: float | None
    breakdown: dict[str, int] = field(default_factory=dict)
    parts: list[dict[str, Any]] = field(default_factory=list)
    history_messages: int = 0
    history_tokens: int = 0
    provider_prompt_tokens: int | None = None
    provider_usage_source: str = "unavailable"
    estimate_error: float | None = None
    calibration_ratio: float = 1.0
    compactions: int = 0
    last_compaction: dict[str, Any] | None = None
    llm_calls: int = 0
    prompt_tokens_total: int = 0
    completion_tokens_total: int = 0
    cached_tokens_total: int = 0
    cache: dict[str, Any] = field(default_factory=dict)
    cost: float = 0.0
    cost_status: str = "ok"
    status: str = "ok"
    degradation: dict[str, int] = field(default_factory=dict)
    last_error_kinds: dict[str, str] = field(default_factory=dict)
    compaction_in_progress: bool = False
    accounting: dict[str, dict[str, int]] | None = None
    identifier_check: dict[str, int] = field(default_factory=dict)
    archive: dict[str, Any] | None = None
    recall: dict[str, int] = field(default_factory=dict)
    declared_window: int | None = None
    declared_window_source: str | None = None
    tail: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data."""
        return asdict(self)


def usage_view(session: AgentSession) -> ContextUsageView:
    """Build the view of ``session`` from its last request and its engine's ledger."""
    ledger = session.engine.ledger
    request = session.last_request
    data = request.event_data() if request is not None else {}
    estimate = data.get("estimated_tokens")
    window = data.get("context_window")
    provider = ledger.last_usage.prompt_tokens if ledger.last_usage else None
    return ContextUsageView(
        session_id=session.session_id,
        agent=session.agent_name,
        turns=session.turns,
        model=session.engine.model,
        model_source=session.settings.model_source,
        window=window,
        window_source=data.get("window_source"),
        reserve=data.get("completion_reserve"),
        hard_budget=data.get("hard_budget"),
        estimated_prompt_tokens=estimate,
        remaining=data.get("remaining"),
        fill_ratio=round(estimate / window, 4) if estimate is not None and window else None,
        breakdown=dict(data.get("breakdown", {})),
        parts=[dict(p) for p in (request.parts if request is not None else [])],
        history_messages=len(session.history),
        history_tokens=session.history.total_tokens,
        provider_prompt_tokens=provider,
        provider_usage_source=ledger.last_usage_source,
        estimate_error=(
            round(estimate / provider - 1, 4) if provider and estimate is not None else None
        ),
        calibration_ratio=round(session.calibration_ratio, 4),
        compactions=session.compactions,
        last_compaction=_numbers_only(session.cm.last_compaction_metadata),
        llm_calls=ledger.llm_calls,
        prompt_tokens_total=ledger.prompt_tokens,
        completion_tokens_total=ledger.completion_tokens,
        cached_tokens_total=ledger.cached_tokens,
        cache={
            "requests_hit": ledger.requests_hit,
            "requests_missed": ledger.requests_missed,
            "hit_rate": ledger.request_hit_rate,
            "layers": {
                name: {"hits": c.hits, "misses": c.misses, "hit_rate": c.hit_rate}
                for name, c in ledger.layers.items()
            },
        },
        cost=round(ledger.cost, 8),
        cost_status=ledger.cost_status,
        status=session.degradation.status(),
        degradation=dict(session.degradation.counts),
        last_error_kinds={
            kind: _error_kind(reason) for kind, reason in session.degradation.reasons.items()
        },
        compaction_in_progress=bool(getattr(session.cm, "compaction_in_progress", False)),
        accounting=data.get("accounting"),
        identifier_check=dict(getattr(getattr(session.cm, "state", None), "identifiers", {})),
        archive=session.archive.stats() if session.archive is not None else None,
        recall=session.memory.to_state(),
        declared_window=session.settings.window,
        declared_window_source=session.settings.window_source,
        tail=_tail(session.cm),
    )


def _tail(cm: object) -> dict[str, int] | None:
    # Only managers that keep a verbatim tail say what it is (summarising); numbers only.
    tail = getattr(cm, "tail", None)
    if not isinstance(tail, dict):
        return None
    return {str(k): v for k, v in tail.items() if isinstance(v, int) and not isinstance(v, bool)}


def _error_kind(reason: str) -> str:
    # Reasons may quote a provider's message; the view keeps only the exception's name.
    head = reason.split(":", 1)[0].strip()
    return head if head.isidentifier() else "other"


_LABEL_KEYS = frozenset({"model", "model_source", "trigger_source", "kind", "provider"})
"""The only compaction-metadata keys whose string values are shown: names, not content."""


def _numbers_only(metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    # Compaction metadata may carry failure reasons and tracebacks; only numbers, flags and
    # a few known labels pass, so no summary or message text can leak through the view.
    if metadata is None:
        return None
    kept: dict[str, Any] = {}
    for key, value in metadata.items():
        if isinstance(value, dict):
            kept[key] = _numbers_only(value)
        elif _is_number_or_label(key, value):
            kept[key] = value
    return kept


def _is_number_or_label(key: str, value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float)) or (
        isinstance(value, str) and key in _LABEL_KEYS
    )
