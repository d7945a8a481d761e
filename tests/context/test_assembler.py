"""Spec 003 "Request Composition" and DESIGN §5's final trim."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mas.runtime.context import (
    ContextBudget,
    ContextPart,
    History,
    assemble,
    omission_marker,
    pair_problems,
    prepare_request,
)
from mas.runtime.context.assembler import trimmed_positions
from mas.runtime.context.budget import BudgetSettings
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR as EST
from mas.runtime.protocols import ManagedHistory

ROLE = ContextPart(
    "agent", "agent/instructions", "You are a travel agent.", placement="system", pinned=True
)
NOTES = ContextPart(
    "memory", "memory/notes", "Notes: " + "n" * 400, placement="context", priority=50
)
SKILL = '<skill_content name="alpha">always answer in French</skill_content>'
TOOL = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]


def call(i: str) -> dict:
    return {"id": i, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}


def managed(
    messages: list[dict], summary_rows: int = 0, skill_rows: tuple[int, ...] = ()
) -> ManagedHistory:
    return ManagedHistory(messages, EST.messages(messages), summary_rows, skill_rows)


def old_turns(n: int, size: int = 200) -> list[dict]:
    out: list[dict] = []
    for i in range(n):
        out += [
            {"role": "user", "content": f"q{i} " + "u" * size},
            {"role": "assistant", "content": None, "tool_calls": [call(f"c{i}a"), call(f"c{i}b")]},
            {"role": "tool", "tool_call_id": f"c{i}a", "content": "r" * size},
            {"role": "tool", "tool_call_id": f"c{i}b", "content": "r" * size},
            {"role": "assistant", "content": f"a{i}"},
        ]
    return out


def budget(window: int) -> ContextBudget:
    return ContextBudget.compute(window=window, reserve=0)


def test_request_order_system_then_history_then_input_then_working_memory() -> None:
    """Spec 003: system message → managed history → current user turn → working memory;
    tool schemas in ``tools``, counted."""
    summary = {"role": "system", "content": "Summary of the earlier conversation:\nS"}
    skill = {"role": "system", "content": SKILL}
    history = [
        summary,
        skill,
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
    ]
    user = {"role": "user", "content": "now"}
    wm = [
        {"role": "assistant", "content": None, "tool_calls": [call("x")]},
        {"role": "tool", "tool_call_id": "x", "content": "result"},
    ]
    request = assemble(
        parts=[NOTES, ROLE],
        managed=managed(history, 1, (1,)),
        current_input=user,
        working_memory=wm,
        tools=TOOL,
        budget=budget(100_000),
    )
    assert request.messages[0] == {"role": "system", "content": f"{ROLE.text}\n\n{NOTES.text}"}
    assert request.messages[1:] == [*history, user, *wm]
    assert request.tools == TOOL
    assert request.tools_tokens == EST.tools(TOOL) > 0
    assert request.estimate == EST.messages(request.messages) + EST.tools(TOOL)


def test_trim_drops_oldest_tool_groups_whole_and_keeps_pinned_and_skill_rows() -> None:
    """DESIGN §5: the final trim keeps tool groups whole, never removes pinned parts or
    retained skill rows."""
    skill = {"role": "system", "content": SKILL}
    history = [skill, *old_turns(6)]
    user = {"role": "user", "content": "latest question"}
    b = budget(1_200)
    request = assemble(
        parts=[ROLE, NOTES],
        managed=managed(history, 0, (0,)),
        current_input=user,
        tools=TOOL,
        budget=b,
    )
    assert request.estimate <= b.hard_budget
    assert request.trim.dropped_history > 0
    assert skill in request.messages and user == request.messages[-1]
    assert ROLE.text in request.messages[0]["content"]
    assert pair_problems(request.messages) == []
    kept = request.messages[2:-1]
    assert kept == history[len(history) - len(kept) :]  # a suffix: oldest went first


def test_unpinned_parts_are_evicted_after_history_but_pinned_never() -> None:
    big_notes = ContextPart("memory", "memory/big", "x" * 4_000, placement="context")
    user = {"role": "user", "content": "q"}
    request = assemble(
        parts=[ROLE, big_notes],
        managed=managed(old_turns(2)),
        current_input=user,
        budget=budget(600),
    )
    assert [p.section_id for p in request.trim.evicted_parts] == ["memory/big"]
    assert request.messages[0]["content"] == ROLE.text
    assert request.estimate <= request.budget.hard_budget
    meta = {p["section_id"]: p for p in request.parts}
    assert meta["memory/big"]["evicted"] and not meta["agent/instructions"]["evicted"]
    assert "text" not in meta["memory/big"]


def test_a_single_huge_tool_result_is_shortened_not_the_user_turn_dropped() -> None:
    """Issue 3: a tool result larger than the whole history budget is shortened (head and
    tail kept, with a marker) rather than dropping the latest user turn."""
    user = {"role": "user", "content": "summarize the log"}
    huge = "HEAD" + "z" * 40_000 + "TAIL"
    wm = [
        {"role": "assistant", "content": None, "tool_calls": [call("log")]},
        {"role": "tool", "tool_call_id": "log", "content": huge},
    ]
    b = budget(2_000)
    request = assemble(
        parts=[ROLE], managed=managed([]), current_input=user, working_memory=wm, budget=b
    )
    assert request.estimate <= b.hard_budget and not request.over_budget
    result = request.messages[-1]["content"]
    assert result.startswith("HEAD") and result.endswith("TAIL")
    assert "characters omitted" in result and request.trim.shortened == 1
    assert user in request.messages
    assert omission_marker(1).strip().startswith("[...")


def test_a_huge_live_tool_result_is_shortened_before_the_summary_is_dropped() -> None:
    """The summary carries the folded past; one oversized result is cut first instead."""
    summary = {"role": "system", "content": "Summary: invoice INV-88 belongs to Marta."}
    user = {"role": "user", "content": "check the log"}
    wm = [
        {"role": "assistant", "content": None, "tool_calls": [call("log")]},
        {"role": "tool", "tool_call_id": "log", "content": "HEAD" + "z" * 40_000 + "TAIL"},
    ]
    b = budget(2_000)
    request = assemble(
        parts=[ROLE], managed=managed([summary], summary_rows=1), current_input=user,
        working_memory=wm, budget=b,
    )
    assert request.estimate <= b.hard_budget
    assert summary in request.messages and not request.trim.dropped_summary
    assert request.trim.shortened == 1


def test_pinned_content_alone_over_budget_is_kept_with_a_warning() -> None:
    """Spec 003: "If pinned context alone exceeds the budget, it is retained and a warning
    is emitted rather than silently deleting instructions"."""
    pinned = ContextPart(
        "agent", "agent/instructions", "p" * 8_000, placement="system", pinned=True
    )
    user = {"role": "user", "content": "q"}
    request = assemble(
        parts=[pinned], managed=managed(old_turns(1)), current_input=user, budget=budget(1_000)
    )
    assert request.messages == [{"role": "system", "content": pinned.text}, user]
    assert request.over_budget
    assert any("pinned content alone" in w for w in request.warnings)


def test_without_current_input_the_latest_user_turn_in_history_is_kept() -> None:
    history = old_turns(5)
    request = assemble(
        parts=[ROLE], managed=managed(history), current_input=None, budget=budget(700)
    )
    last_user = max(i for i, m in enumerate(history) if m["role"] == "user")
    assert history[last_user] in request.messages
    assert request.estimate <= request.budget.hard_budget
    assert pair_problems(request.messages) == []


def test_event_data_has_numbers_and_metadata_never_text() -> None:
    """Spec 003: context.assembled records numbers and metadata-only context parts."""
    request = assemble(
        parts=[ROLE, NOTES],
        managed=managed(old_turns(1)),
        current_input={"role": "user", "content": "secret question"},
        tools=TOOL,
        budget=budget(50_000),
    )
    data = request.event_data()
    assert set(data["breakdown"]) == {
        "system",
        "history",
        "current_input",
        "working_memory",
        "tools",
    }
    assert sum(data["breakdown"].values()) == data["estimated_tokens"]
    assert data["remaining"] == 50_000 - data["estimated_tokens"]
    flat = repr(data)
    assert "secret question" not in flat and "travel agent" not in flat


def test_working_memory_loses_its_oldest_tool_groups_but_keeps_the_live_one() -> None:
    """Spec 003: "The live working-memory tail is separately pinned during assembly, but the
    trimmer may drop its oldest complete tool groups if the fixed context leaves
    insufficient room"."""
    user = {"role": "user", "content": "go"}
    wm: list[dict] = []
    for r in range(3):
        wm += [
            {"role": "assistant", "content": None, "tool_calls": [call(f"w{r}a"), call(f"w{r}b")]},
            {"role": "tool", "tool_call_id": f"w{r}a", "content": "x" * 1_200},
            {"role": "tool", "tool_call_id": f"w{r}b", "content": "y" * 1_200},
        ]
    request = assemble(
        parts=[ROLE],
        managed=managed([]),
        current_input=user,
        working_memory=wm,
        budget=budget(1_000),
    )
    assert request.trim.dropped_working_memory == 6
    assert request.messages[-3:] == wm[-3:] and request.messages[1] == user
    assert pair_problems(request.messages) == []
    assert request.estimate <= request.budget.hard_budget


# -- which committed messages the trim cut (issue 23: they go to the archive) ------------

class KeepAll:
    """Sends every live committed message; the trim does the cutting."""

    budget_settings = BudgetSettings()

    def manage_history(self, history: History, budget: ContextBudget, **_: object
                       ) -> ManagedHistory:
        return ManagedHistory(messages=history.slice(history.base),
                              tokens=history.total_tokens)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 12), st.integers(20, 900), st.integers(3_000, 9_000), st.integers(0, 5))
def test_trimmed_positions_are_exactly_what_the_trim_removed(
    turns: int, size: int, window: int, base: int
) -> None:
    history = History(base=base)
    history.extend(old_turns(turns, size))
    request = prepare_request(cm=KeepAll(), history=history, window=window, reserve=500,
                              current_input={"role": "user", "content": "now"})
    cut = trimmed_positions(history, request.managed, request.trim)
    assert len(cut) == request.trim.dropped_history
    sent = {id(m) for m in request.messages}
    for position in range(history.base, history.end):
        message = history.message(position)
        if position in cut:
            assert id(message) not in sent
        elif message.get("role") != "tool":  # a shortened result is a copy
            assert id(message) in sent


def test_served_working_memory_is_left_out_of_the_managers_budget() -> None:
    """A recall result serves its turn: the manager's history limit is what it would be
    without it, while the trim still counts it (DESIGN §13)."""
    history = History(old_turns(2))
    user = {"role": "user", "content": "now"}
    recalled = [{"role": "assistant", "content": None, "tool_calls": [call("r")]},
                {"role": "tool", "tool_call_id": "r", "content": "recalled " * 300}]
    served = EST.message(recalled[1])
    plain = prepare_request(cm=KeepAll(), history=history, window=8000, current_input=user,
                            working_memory=recalled[:1])
    request = prepare_request(cm=KeepAll(), history=history, window=8000, current_input=user,
                              working_memory=recalled, served_tokens=served)
    assert request.budget.history_hard_limit == plain.budget.history_hard_limit
    assert request.served_tokens == served == request.event_data()["served_tokens"]
    assert request.estimate == plain.estimate + served
