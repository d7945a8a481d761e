"""Issue 3's invariants as hypothesis properties, over generated histories with parallel
tool calls, oversized tool results, skills, and empty and single-message histories.

The default profile runs 300 examples per property; ``HYPOTHESIS_PROFILE=thorough``
runs 5,000.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.context import (
    ContextBudget,
    ContextPart,
    History,
    assemble,
    pair_problems,
    prepare_request,
    user_turn_starts,
)
from mas.runtime.spec.binding import Binding, bind

from .conftest import EngineDouble, Recorder, make_ctx

# -- generators -----------------------------------------------------------------------

sizes = st.one_of(st.integers(0, 300), st.integers(300, 3_000), st.integers(3_000, 30_000))


@st.composite
def tool_round(draw: Any, tag: str) -> list[dict]:
    n = draw(st.integers(1, 3))
    ids = [f"{tag}_{k}" for k in range(n)]
    results = []
    for call_id in ids:
        if draw(st.integers(0, 9)) == 0:
            name = draw(st.sampled_from(["alpha", "beta"]))
            body = f'<skill_content name="{name}">rules {call_id}</skill_content>'
        else:
            body = f"{call_id}:" + "r" * draw(sizes)
        results.append({"role": "tool", "tool_call_id": call_id, "content": body})
    calls = [
        {"id": c, "type": "function", "function": {"name": "tool", "arguments": "{}"}} for c in ids
    ]
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *results]


@st.composite
def user_turn(draw: Any, index: int) -> list[dict]:
    messages = [{"role": "user", "content": f"q{index} " + "u" * draw(st.integers(0, 800))}]
    for r in range(draw(st.integers(0, 2))):
        messages += draw(tool_round(f"t{index}r{r}"))
    messages.append(
        {"role": "assistant", "content": f"a{index} " + "a" * draw(st.integers(0, 800))}
    )
    return messages


@st.composite
def histories(draw: Any) -> list[dict]:
    kind = draw(st.sampled_from(["empty", "single", "turns", "turns", "turns"]))
    if kind == "empty":
        return []
    if kind == "single":
        return [
            draw(
                st.sampled_from(
                    [
                        {"role": "user", "content": "lonely"},
                        {"role": "assistant", "content": "hello"},
                    ]
                )
            )
        ]
    n = draw(st.integers(1, 14))
    return [m for i in range(n) for m in draw(user_turn(i))]


@st.composite
def scenarios(draw: Any) -> dict[str, Any]:
    cm = draw(
        st.sampled_from(
            [
                {"type": "summarising", "params": {"keep_turns": 2}},
                {"type": "summarising", "params": {"keep_turns": 0, "summarizer": "drop"}},
                {"type": "summarising", "params": {"keep_turns": 3, "hysteresis_ratio": 0.3}},
                {"type": "sliding_window", "params": {"keep_turns": 4}},
                {"type": "sliding_window", "params": {"keep_turns": None, "max_tokens": "limit"}},
                {"type": "stack", "params": {"max_messages": 9}},
                {"type": "stack"},
            ]
        )
    )
    parts = [
        ContextPart(
            "agent",
            "role",
            "role " + "p" * draw(st.integers(0, 3_000)),
            placement="system",
            pinned=True,
        )
    ]
    if draw(st.booleans()):
        parts.append(ContextPart("memory", "notes", "n" * draw(st.integers(0, 2_000))))
    working = [m for r in range(draw(st.integers(0, 2))) for m in draw(tool_round(f"live{r}"))]
    return {
        "cm": cm,
        "history": draw(histories()),
        "parts": parts,
        "working": working,
        "user": {"role": "user", "content": "now " + "c" * draw(st.integers(0, 400))},
        "window": draw(st.integers(600, 30_000)),
        "reserve": draw(st.integers(0, 300)),
        "mode": draw(st.sampled_from(["ok", "ok", "raise", "empty", "tool_calls"])),
        "pin_activated": draw(st.booleans()),
    }


def bound(s: dict[str, Any]) -> tuple[Any, Recorder]:
    rec = Recorder()
    ctx = make_ctx(rec.runtime, pin_activated=s["pin_activated"])
    return bind("context_manager", Binding.model_validate(s["cm"]), ctx), rec


# -- properties -----------------------------------------------------------------------


@given(scenarios())
def test_assembled_request_invariants(s: dict[str, Any]) -> None:
    """No orphan tool result, no unanswered tool_calls; the latest user turn present; the
    system message first; never over the hard budget unless pinned content alone is
    (then a warning event); every message is an input message or a marked shortening."""
    cm, rec = bound(s)
    history = History(s["history"])
    request = prepare_request(
        cm=cm,
        history=history,
        parts=s["parts"],
        current_input=s["user"],
        working_memory=s["working"],
        window=s["window"],
        reserve=s["reserve"],
        engine=EngineDouble(s["mode"]),
        runtime=rec.runtime,
    )
    messages = request.messages
    assert pair_problems(messages) == []
    assert s["user"] in messages
    assert messages[0]["role"] == "system" and messages[0]["content"].startswith("role ")
    if request.estimate > request.budget.hard_budget:
        assert any("pinned content alone" in e.data["message"] for e in rec.of("warning"))
    # Cached estimates only make the trim faster: without them it keeps the same messages.
    uncached = assemble(
        parts=s["parts"],
        managed=replace(request.managed, message_tokens=None),
        current_input=s["user"],
        working_memory=s["working"],
        budget=request.budget,
    )
    assert uncached.messages == messages
    known = [*s["history"], *s["working"], s["user"]]
    for m in messages[1:]:
        if m in known or m["role"] == "system":
            continue
        assert m["role"] == "tool" and (
            "characters omitted" in m["content"]
            or m["content"] == "[Old tool result content cleared]"
        ), m


@given(scenarios())
def test_recent_turns_are_byte_identical_and_failures_lose_nothing(s: dict[str, Any]) -> None:
    """The verbatim tail comes back byte-identical, whole tool groups, at most keep_turns
    user turns (keep_turns is an upper bound; tokens bound it too); a summarizer failure
    never loses a committed message (count, order and ids kept)."""
    if s["cm"]["type"] != "summarising":
        s["cm"] = {"type": "summarising", "params": {"keep_turns": 2}}
    cm, rec = bound(s)
    original = [dict(m) for m in s["history"]]
    history = History(s["history"])
    b = ContextBudget.compute(window=s["window"], reserve=s["reserve"], settings=cm.budget_settings)
    managed = cm.manage_history(history, b, engine=EngineDouble(s["mode"]))
    keep = cm.params.keep_turns
    live = managed.messages[managed.leading_rows :]
    starts = user_turn_starts(original)
    newest = original[starts[-1] :] if starts else original
    if len(live) >= len(newest):
        assert live[len(live) - len(newest) :] == newest
    if cm.state.folded_through:
        assert live == original[len(original) - len(live) :]
        # A user turn starts the tail, or a later message of the newest turn when that
        # turn is over the tail's bound: never a tool result, so a call keeps its results.
        assert not live or live[0]["role"] != "tool"
        assert len(user_turn_starts(live)) <= keep
    failed = bool(rec.of("compaction.exception"))
    cm.commit(history)
    if failed:
        assert [(m["role"], m.get("tool_call_id")) for m in history.messages] == [
            (m["role"], m.get("tool_call_id")) for m in original
        ]
        assert cm.compaction_in_progress


@given(
    st.lists(
        st.builds(lambda i, s: (i, s), st.integers(0, 3), st.integers(10, 2_500)),
        min_size=5,
        max_size=40,
    ),
    st.integers(1_500, 12_000),
    st.sampled_from([0.0, 0.1, 0.5]),
    st.integers(0, 4),
)
def test_summarizer_calls_only_when_the_hysteresis_rule_allows(
    turns: list[tuple[int, int]], window: int, h: float, keep: int
) -> None:
    """DESIGN §5: after a compaction the cached summary is reused, and new turns append
    verbatim, until the managed history passes trigger x (1 + h)."""
    s = {
        "cm": {"type": "summarising", "params": {"keep_turns": keep, "hysteresis_ratio": h}},
        "pin_activated": True,
    }
    cm, _ = bound(s)
    engine = EngineDouble()
    history = History()
    for n, (rounds, size) in enumerate(turns):
        user = {"role": "user", "content": f"q{n} " + "u" * size}
        folded_before = cm.state.folded_through > 0 or cm.state.summary is not None
        before = cm.managed_tokens(history)
        calls = len(engine.calls)
        request = prepare_request(
            cm=cm, history=history, current_input=user, window=window, reserve=100, engine=engine
        )
        if len(engine.calls) > calls:
            b = request.budget
            assert before > (b.retrigger if folded_before else b.soft_trigger)
        turn = [user]
        for r in range(rounds):
            cid = f"c{n}_{r}"
            turn += [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": cid,
                            "type": "function",
                            "function": {"name": "t", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": cid, "content": "r" * size},
            ]
        history.extend([*turn, {"role": "assistant", "content": f"a{n}"}])
        cm.commit(history)
    assert pair_problems(history.messages) == []
