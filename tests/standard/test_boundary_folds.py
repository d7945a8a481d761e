"""Issue 22: ``summarising`` folds at the turn boundary, leaving room for what a turn adds
in flight; a fold while tool results are in flight is the exception, and counted."""

from __future__ import annotations

from typing import Any

from mas.runtime.context import ContextPart, History, prepare_request

ROLE = [ContextPart("agent", "role", "You help.", placement="system", pinned=True)]


def tool_turn(i: int, result_chars: int) -> list[dict[str, Any]]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return [
        {"role": "user", "content": f"question {i} " + "u" * 600},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i} " + "r" * result_chars},
        {"role": "assistant", "content": f"answer {i} " + "a" * 600},
    ]


def drive(cm: Any, engine: Any, turns: int, result_chars: int) -> list[tuple[bool, bool]]:
    """Each turn's two requests (boundary, then with its tool result in flight); per
    request, whether it compacted and whether the compaction was at the boundary."""
    history = History()
    seen: list[tuple[bool, bool]] = []
    for i in range(turns):
        messages = tool_turn(i, result_chars)
        for working in ([], messages[1:3]):
            request = prepare_request(cm=cm, history=history, parts=ROLE,
                                      current_input=messages[0], working_memory=working,
                                      window=6_000, reserve=0, engine=engine)
            meta = request.managed.metadata or {}
            seen.append((request.managed.compacted, bool(meta.get("at_boundary"))))
            assert request.accounting.cut.messages == 0
        history.extend(messages)
        cm.commit(history)
    return seen


def test_folds_happen_at_the_boundary_once_the_in_flight_growth_is_learned(
    binder, engine_double
) -> None:
    cm, rec = binder({"type": "summarising", "params": {
        "summarizer": {"type": "llm", "params": {"context_window": 100_000}}}})
    seen = drive(cm, engine_double(), 40, result_chars=4_000)
    compactions = [at for compacted, at in seen if compacted]
    assert len(compactions) >= 3
    # The first turns teach the manager how much a turn grows in flight; after them
    # every fold is at a boundary.
    later = [at for compacted, at in seen[10:] if compacted]
    assert later and all(later)
    stops = rec.of("compaction.stop")
    assert [e.data["at_boundary"] for e in stops] == compactions
    in_turn = compactions.count(False)
    assert cm.state.in_turn_compactions == in_turn == stops[-1].data["in_turn_compactions"]
    assert max(cm.state.inflight_peaks) > 1_000


def test_the_learned_peaks_survive_a_restore(binder, engine_double) -> None:
    cm, _ = binder({"type": "summarising", "params": {}})
    drive(cm, engine_double(), 6, result_chars=2_000)
    restored, _ = binder({"type": "summarising", "params": {}})
    restored.load_state(cm.to_state())
    assert restored.state.inflight_peaks == cm.state.inflight_peaks
    assert len(cm.state.inflight_peaks) == 5  # the sixth turn's peak joins when it ends


def test_a_turn_larger_than_the_tail_keeps_its_newest_tool_groups_verbatim(
    binder, engine_double
) -> None:
    """With a summarizer call smaller than the history (the summarizer inherits the agent's
    6,000-token window), a newest turn over the tail's bound is folded up to a message
    inside it — never a tool result — instead of whole: its newest tool groups and its
    reply stay verbatim."""
    cm, _ = binder({"type": "summarising", "params": {}})
    history = History()
    history.extend([{"role": "user", "content": "small " + "u" * 6_000},
                    {"role": "assistant", "content": "ok " + "a" * 6_000}])
    big: list[dict[str, Any]] = [{"role": "user", "content": "big turn " + "u" * 400}]
    for k in range(3):
        call = {"id": f"g{k}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        big += [{"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": f"g{k}", "content": f"r{k} " + "r" * 3_000}]
    big.append({"role": "assistant", "content": "done " + "a" * 400})
    history.extend(big)
    request = prepare_request(cm=cm, history=history, parts=ROLE,
                              current_input={"role": "user", "content": "next"},
                              working_memory=[], window=6_000, reserve=0,
                              engine=engine_double())
    assert request.managed.compacted and request.accounting.cut.messages == 0
    live = request.managed.messages[request.managed.leading_rows:]
    assert live == big[len(big) - len(live):] and 1 < len(live) < len(big)
    assert live[0]["role"] == "assistant" and live[0].get("tool_calls")
