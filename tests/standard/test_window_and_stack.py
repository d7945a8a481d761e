"""``sliding_window`` and ``stack`` (DESIGN §6): pair-safe, no model call, skills retained."""

from __future__ import annotations

from mas.runtime.context import ContextBudget, History, pair_problems

SKILL = '<skill_content name="alpha">Use metric units.</skill_content>'


def call(i: str) -> dict:
    return {"id": i, "type": "function", "function": {"name": "t", "arguments": "{}"}}


def tool_turn(i: int, parallel: int = 2) -> list[dict]:
    ids = [f"c{i}_{k}" for k in range(parallel)]
    return [
        {"role": "user", "content": f"q{i}"},
        {"role": "assistant", "content": None, "tool_calls": [call(c) for c in ids]},
        *[{"role": "tool", "tool_call_id": c, "content": f"r{c} " + "x" * 100} for c in ids],
        {"role": "assistant", "content": f"a{i}"},
    ]


BUDGET = ContextBudget.compute(window=100_000)


def test_sliding_window_keeps_the_last_n_user_turns(binder, engine_double) -> None:
    cm, _ = binder({"type": "sliding_window", "params": {"keep_turns": 3}})
    history = History([m for i in range(10) for m in tool_turn(i)])
    managed = cm.manage_history(history, BUDGET, engine=engine_double())
    assert managed.messages == [m for i in (7, 8, 9) for m in tool_turn(i)]
    cm.commit(history)
    assert history.messages == managed.messages


def test_sliding_window_token_budget_drops_whole_turns_and_holds_it(binder) -> None:
    cm, _ = binder({"type": "sliding_window", "params": {"keep_turns": None, "max_tokens": 200}})
    history = History([m for i in range(10) for m in tool_turn(i)])
    managed = cm.manage_history(history, BUDGET)
    assert 0 < managed.tokens <= 200
    assert managed.messages[0]["role"] == "user" and pair_problems(managed.messages) == []
    # A newest turn alone over the budget is dropped on purpose, not left for the trim.
    tiny, _ = binder({"type": "sliding_window", "params": {"max_tokens": 1}})
    managed = tiny.manage_history(History(tool_turn(0) + tool_turn(1)), BUDGET)
    assert managed.messages == [] and managed.ledger.dropped.messages == 10


def test_sliding_window_limit_follows_the_history_hard_limit(binder) -> None:
    cm, _ = binder(
        {"type": "sliding_window", "params": {"keep_turns": None, "max_tokens": "limit"}}
    )
    history = History([m for i in range(30) for m in tool_turn(i)])
    small = ContextBudget.compute(window=2_000, reserve=0)
    managed = cm.manage_history(history, small)
    assert 0 < managed.tokens <= small.history_hard_limit


def test_stack_caps_messages_moving_the_cut_past_tool_results(binder) -> None:
    """DESIGN §6: "moving the cut forward so that no tool result loses its call"."""
    cm, _ = binder({"type": "stack", "params": {"max_messages": 7}})
    history = History([m for i in range(5) for m in tool_turn(i)])  # 5 messages per turn
    managed = cm.manage_history(history, BUDGET)
    # The last 7 start at turn 3's first tool result, so the cut moves to a3.
    assert managed.messages == tool_turn(3)[-1:] + tool_turn(4)
    assert pair_problems(managed.messages) == []


def test_stack_without_cap_keeps_everything(binder) -> None:
    cm, _ = binder("stack")
    history = History([m for i in range(50) for m in tool_turn(i)])
    assert cm.manage_history(history, BUDGET).messages == history.messages


def test_skills_survive_in_every_strategy(binder) -> None:
    """Spec 000: "Every history strategy (summarising, sliding_window, stack) exempts them
    from pruning"; with pin_activated false the retained row is sent."""
    skill_turn = [
        {"role": "user", "content": "load"},
        {"role": "assistant", "content": None, "tool_calls": [call("s")]},
        {"role": "tool", "tool_call_id": "s", "content": SKILL},
        {"role": "assistant", "content": "loaded"},
    ]
    for raw in (
        {"type": "sliding_window", "params": {"keep_turns": 2}},
        {"type": "stack", "params": {"max_messages": 5}},
    ):
        cm, _ = binder(raw, pin_activated=False)
        history = History(skill_turn + [m for i in range(6) for m in tool_turn(i)])
        managed = cm.manage_history(history, BUDGET)
        assert managed.messages[0] == {"role": "system", "content": SKILL}, raw
        assert managed.skill_rows == (0,)
        pinned, _ = binder(raw)
        assert all(
            m.get("content") != SKILL
            for m in pinned.manage_history(History(history.messages), BUDGET).messages
        )
        assert pinned.state.skills == {"alpha": SKILL}
