"""Whole sessions with compactions, as hypothesis properties (≥ 500 generated sessions).

tests/standard/test_properties.py checks single assembled requests; here a generated
session runs turn by turn through the context-manager API exactly as the agent session
drives it (``prepare_request`` before each model call, ``commit`` after the turn), with
summaries that succeed or fail along the way. After every call and every turn:

- no broken tool pairing, the current user message present, the request within budget;
- nothing committed is lost: every committed message is still in history, or was folded
  into a summary (or dropped by a strategy that drops by design), in order, never twice;
- a failed summary folds nothing.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mas.runtime.context import ContextPart, History, pair_problems, prepare_request

from .conftest import ScriptedEngine, bound_manager

EXAMPLES = max(500, settings().max_examples)

STRATEGIES = [
    {"type": "summarising", "params": {"keep_turns": 1}},
    {"type": "summarising", "params": {"keep_turns": 2, "pruning": {"min_prunable_tool_chars": 0}}},
    {"type": "summarising", "params": {"keep_turns": 0, "summarizer": "drop"}},
    {"type": "summarising", "params": {"keep_turns": 1, "summarizer": {
        "type": "llm", "params": {"context_window": 3_000}}}},
    {"type": "sliding_window", "params": {"keep_turns": 3}},
    {"type": "sliding_window", "params": {"keep_turns": None, "max_tokens": "limit"}},
    {"type": "stack", "params": {"max_messages": 7}},
    {"type": "stack"},
]
FOLDS_INTO_SUMMARY = {0, 1, 3}


@st.composite
def turns(draw: Any, index: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": f"u{index} " + "w" * draw(st.integers(0, 600))}]
    for r in range(draw(st.integers(0, 2))):
        ids = [f"c{index}_{r}_{k}" for k in range(draw(st.integers(1, 3)))]
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "t", "arguments": "{}"}}
            for i in ids]})
        big = st.one_of(st.integers(0, 400), st.integers(2_000, 12_000))
        messages += [{"role": "tool", "tool_call_id": i, "content": f"{i}:" + "r" * draw(big)}
                     for i in ids]
    messages.append({"role": "assistant", "content": f"a{index} " + "x" * draw(st.integers(0, 300))})
    return messages


@st.composite
def sessions(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(1, 14))
    return {
        "strategy": draw(st.integers(0, len(STRATEGIES) - 1)),
        "turns": [draw(turns(i)) for i in range(n)],
        "window": draw(st.integers(1_500, 9_000)),
        "modes": draw(st.lists(st.sampled_from(["ok", "ok", "raise", "timeout", "empty",
                                                 "tool_calls"]), min_size=1, max_size=6)),
    }


def _calls(turn: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Working memory before each model call of a turn."""
    rest = turn[1:]
    out: list[list[dict[str, Any]]] = [[]]
    for i, m in enumerate(rest):
        if m["role"] == "tool" and (i + 1 == len(rest) or rest[i + 1]["role"] != "tool"):
            out.append(rest[: i + 1])
    return out


@settings(max_examples=EXAMPLES)
@given(sessions())
def test_whole_sessions_keep_every_invariant(s: dict[str, Any]) -> None:
    cm, events = bound_manager(STRATEGIES[s["strategy"]])
    engine = ScriptedEngine(s["modes"])
    history = History()
    parts = [ContextPart("agent", "role", "You help.", placement="system", pinned=True)]
    committed: list[dict[str, Any]] = []
    for turn in s["turns"]:
        user = turn[0]
        for working in _calls(turn):
            folded_before = cm.to_state()["folded_through"]
            calls_before = len(engine.calls)
            request = prepare_request(cm=cm, history=history, parts=parts, current_input=user,
                                      working_memory=working, window=s["window"], reserve=100,
                                      engine=engine)
            assert pair_problems(request.messages) == []
            assert user in request.messages
            assert not request.over_budget
            assert request.messages[-len(working) - 1 :] == [user, *working] or \
                request.trim.shortened or request.trim.dropped_working_memory
            failed = [e for e in events if e.name == "compaction.exception"]
            if len(engine.calls) > calls_before and failed and failed[-1].data.get("kind"):
                last_failed = events.index(failed[-1]) > max(
                    (i for i, e in enumerate(events) if e.name == "compaction.stop"), default=-1)
                if last_failed:
                    assert cm.to_state()["folded_through"] == folded_before
        history.extend(turn)
        cm.commit(history)
        committed += turn
        # Nothing committed is lost: the live history is the committed suffix, except
        # that pruning may shorten old tool results in place (same message, same id).
        live, expected = history.messages, committed[history.base :]
        assert len(live) == len(expected)
        for got, want in zip(live, expected, strict=True):
            if want["role"] == "tool" and got != want:
                assert got["tool_call_id"] == want["tool_call_id"]
                assert len(got["content"]) < len(want["content"])
            else:
                assert got == want
        state = cm.to_state()
        assert history.base == state["folded_through"] or history.base == 0
        if s["strategy"] in FOLDS_INTO_SUMMARY and history.base > 0:
            assert state["summary"], "history was folded without a summary"
