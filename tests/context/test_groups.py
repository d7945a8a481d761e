"""Spec 002: "Never splits tool_call/tool_result pairs" — one implementation of the
boundaries (user-turn groups; an assistant tool_calls message with all its results)."""

from __future__ import annotations

from mas.runtime.context import call_ids, pair_problems, safe_cut, units, user_turn_starts


def call(i: str) -> dict:
    return {"id": i, "type": "function", "function": {"name": "t", "arguments": "{}"}}


HISTORY = [
    {"role": "user", "content": "q1"},  # 0
    {"role": "assistant", "content": None, "tool_calls": [call("a"), call("b")]},  # 1
    {"role": "tool", "tool_call_id": "a", "content": "ra"},  # 2
    {"role": "tool", "tool_call_id": "b", "content": "rb"},  # 3
    {"role": "assistant", "content": "answer 1"},  # 4
    {"role": "user", "content": "q2"},  # 5
    {"role": "assistant", "content": "answer 2"},  # 6
]


def test_parallel_calls_and_all_their_results_form_one_unit() -> None:
    assert units(HISTORY) == [(0, 1), (1, 4), (4, 5), (5, 6), (6, 7)]
    assert call_ids(HISTORY[1]) == ["a", "b"]


def test_user_turn_groups_start_at_each_user_message() -> None:
    assert user_turn_starts(HISTORY) == [0, 5]
    assert user_turn_starts(HISTORY, start=1) == [5]


def test_a_cut_on_a_tool_result_moves_forward_past_the_results() -> None:
    assert safe_cut(HISTORY, 2) == 4
    assert safe_cut(HISTORY, 3) == 4
    assert safe_cut(HISTORY, 1) == 1
    assert safe_cut(HISTORY, 5) == 5


def test_pair_problems_finds_orphans_and_unanswered_calls() -> None:
    assert pair_problems(HISTORY) == []
    orphan = HISTORY[2:]
    assert any("has no call" in p for p in pair_problems(orphan))
    unanswered = HISTORY[:3]
    assert pair_problems(unanswered) == ["message 1: tool call 'b' has no result"]
