"""Issue 12, item 9: the events carry what spec 002 and spec 003 say they carry."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mas.runtime.context import ContextBudget, FixedCosts, History, prepare_request
from mas.runtime.spec.binding import Binding, bind

from .conftest import EngineDouble, Recorder, make_ctx


def bound(raw: dict[str, Any]) -> tuple[Any, Recorder]:
    rec = Recorder()
    return bind("context_manager", Binding.model_validate(raw), make_ctx(rec.runtime)), rec


def long_history() -> History:
    return History([m for i in range(30) for m in (
        {"role": "user", "content": f"q{i} " + "u" * 800},
        {"role": "assistant", "content": f"a{i} " + "a" * 800})])


def budget(cm: Any) -> ContextBudget:
    return ContextBudget.compute(window=6_000, reserve=0, fixed=FixedCosts(system=10),
                                 settings=cm.budget_settings)


def test_compaction_start_carries_system_and_monotonic_time() -> None:
    cm, rec = bound({"type": "summarising", "params": {"keep_turns": 2}})
    cm.manage_history(long_history(), budget(cm), engine=EngineDouble())
    [start] = rec.of("compaction.start")
    assert isinstance(start.data["system_time"], float)
    assert isinstance(start.data["monotonic_time"], float)


def test_drop_compaction_stop_says_not_summarized() -> None:
    cm, rec = bound({"type": "summarising", "params": {"keep_turns": 2, "summarizer": "drop"}})
    cm.manage_history(long_history(), budget(cm), engine=None)
    [stop] = rec.of("compaction.stop")
    assert stop.data["summarized"] is False and stop.data["llm_called"] is False


def test_compaction_stop_names_the_provider_of_a_bare_model_name() -> None:
    # gpt-4o as an Infra mapping or api_base reaches it: no provider/ prefix to split.
    cm, rec = bound({"type": "summarising", "params": {"keep_turns": 2}})
    cm.manage_history(long_history(), budget(cm), engine=EngineDouble())
    [stop] = rec.of("compaction.stop")
    assert (stop.data["model"], stop.data["provider"]) == ("gpt-4o", "openai")


def test_a_failed_compaction_has_metadata_saying_so() -> None:
    cm, rec = bound({"type": "summarising", "params": {"keep_turns": 2}})
    managed = cm.manage_history(long_history(), budget(cm), engine=EngineDouble("raise"))
    assert rec.of("compaction.exception") and not managed.compacted
    assert managed.metadata is not None and managed.metadata["failed"] is True
    assert managed.metadata["kind"] == "exception" and "threshold" in managed.metadata


def test_the_window_fallback_emits_a_warning_event() -> None:
    cm, rec = bound({"type": "stack"})
    prepare_request(cm=cm, history=History(), current_input={"role": "user", "content": "hi"},
                    window=128_000, window_source="fallback", runtime=rec.runtime)
    [warning] = rec.of("warning")
    assert "fallback" in warning.data["message"] and "context_window" in warning.data["message"]


def test_the_window_fallback_warning_names_the_documented_window_when_calibrated() -> None:
    # A session passes the fallback scaled by calibration; the warning used to call that
    # scaled figure (127,504) "the fallback", which is not the documented 128,000.
    cm, rec = bound({"type": "stack"})
    prepare_request(cm=cm, history=History(), current_input={"role": "user", "content": "hi"},
                    window=127_504, window_source="fallback (calibrated x1.004)",
                    runtime=rec.runtime)
    [warning] = rec.of("warning")
    assert "using the 128,000-token fallback (127,504 in force);" in \
        warning.data["message"]


def test_context_assembled_carries_reserve_source_margin_retrigger_and_trigger_source() -> None:
    cm, rec = bound({"type": "summarising"})
    prepare_request(cm=cm, history=History(), current_input={"role": "user", "content": "hi"},
                    window=10_000, reserve=500, reserve_source="max_tokens", runtime=rec.runtime)
    [event] = rec.of("context.assembled")
    data = event.data
    assert data["reserve_source"] == "max_tokens" and data["safety_margin"] == 1_000
    assert data["trigger_source"] == "auto"
    assert data["retrigger"] >= data["soft_trigger"] > 0


CONTEXT_DOC = Path(__file__).resolve().parents[2] / "docs" / "context.md"


def _documented(event: str) -> set[str]:
    prefix = f"| `{event}` |"
    [row] = [line for line in CONTEXT_DOC.read_text().splitlines() if line.startswith(prefix)]
    return set(re.findall(r"`(\w+)`", row))


def test_the_events_table_names_every_field_each_event_carries() -> None:
    """docs/context.md's table is where a user learns what the events say: it lagged behind
    them (no system_time, reserve_source, retrigger, trigger_source ...)."""
    from .test_pruning import conversation

    cm, rec = bound({"type": "summarising", "params": {"keep_turns": 2}})
    cm.manage_history(long_history(), budget(cm), engine=EngineDouble())
    failing, failed = bound({"type": "summarising", "params": {"keep_turns": 2}})
    failing.manage_history(long_history(), budget(failing), engine=EngineDouble("raise"))
    pruned, pruning = bound({"type": "summarising", "params": {"keep_turns": 2}})
    history = History(conversation(["x" * 60_000, "small", "small", "small"]))
    pruned.manage_history(history, ContextBudget.compute(
        window=int(history.total_tokens / 0.38), reserve=0, fixed=FixedCosts(system=10),
        settings=pruned.budget_settings), engine=None)
    prepare_request(cm=cm, history=History(), current_input={"role": "user", "content": "hi"},
                    window=10_000, reserve=500, reserve_source="max_tokens", runtime=rec.runtime)
    events = [*rec.events, *failed.events, *pruning.events]
    for name in ("context.assembled", "context.pruned", "compaction.start", "compaction.stop",
                 "compaction.exception"):
        carried = set().union(*(e.data for e in events if e.name == name))
        assert carried, name
        assert carried - _documented(name) == set(), name
