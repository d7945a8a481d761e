"""Issue 22: tool results in flight larger than the request's room are shortened to one
level before any committed message is cut, so the summary and the newest turn still fit;
the request never exceeds the hard budget, and every shortening is counted."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mas.runtime.context import DEFAULT_ESTIMATOR
from mas.runtime.context.trimmer import in_flight_level, sendable_sizes, trim_request
from mas.runtime.protocols import ManagedHistory

EST = DEFAULT_ESTIMATOR


def in_flight(sizes: list[int]) -> list[dict[str, Any]]:
    """One assistant message calling a tool per size, then the results (``size`` chars)."""
    calls = [{"id": f"c{k}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
             for k in range(len(sizes))]
    results = [{"role": "tool", "tool_call_id": c["id"], "content": f"r{k} " + "x" * size}
               for k, (c, size) in enumerate(zip(calls, sizes, strict=True))]
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *results]


def managed_of(summary_chars: int, turn_chars: int) -> tuple[ManagedHistory, list[int]]:
    """A summary row and the newest committed turn."""
    messages = [
        {"role": "system", "content": "Summary: " + "s" * summary_chars},
        {"role": "user", "content": "q " + "u" * turn_chars},
        {"role": "assistant", "content": "a " + "a" * turn_chars},
    ]
    tokens = [EST.message(m) for m in messages]
    return ManagedHistory(messages=messages, tokens=sum(tokens), summary_rows=1,
                          message_tokens=tokens), tokens


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 40_000), min_size=1, max_size=4), st.integers(1_000, 8_000))
def test_the_level_leaves_half_the_budget(sizes: list[int], budget: int) -> None:
    wm = in_flight(sizes)
    tokens = [EST.message(m) for m in wm]
    level = in_flight_level(wm, tokens, budget)
    sendable = sendable_sizes(wm, tokens, budget)
    assert 0 <= level <= budget // 2
    # The assistant message is not shortenable; the results share what it leaves.
    assert sum(sendable) <= max(budget // 2, tokens[0])
    assert all(s == min(t, level) for s, t in zip(sendable[1:], tokens[1:], strict=True))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 120_000), min_size=1, max_size=4),
       st.integers(0, 2_000), st.integers(0, 800), st.integers(3_000, 8_000))
def test_in_flight_results_never_cut_the_summary_or_the_newest_turn(
    sizes: list[int], summary_chars: int, turn_chars: int, budget: int
) -> None:
    wm = in_flight(sizes)
    current = {"role": "user", "content": "now?"}
    managed, tokens = managed_of(summary_chars, turn_chars)
    wm_tokens = [EST.message(m) for m in wm]
    room = budget - EST.message(current) - sum(sendable_sizes(wm, wm_tokens, budget))
    # What a manager keeps: the history it was given room for (here: all of it, when it
    # fits that room; the test is about the in-flight results, not the manager).
    if sum(tokens) > room:
        return
    result = trim_request(parts=[], managed=managed, current_input=current, working_memory=wm,
                          tools_tokens=0, hard_budget=budget, estimator=EST)
    assert result.total(0) <= budget
    assert not result.dropped_summary
    assert result.dropped_history == 0
    assert list(result.history) == managed.messages
    assert len(result.working_memory) == len(wm)
    assert result.shortened_in_flight == result.shortened
    over = sum(tokens) + EST.message(current) + sum(wm_tokens) > budget
    assert (result.shortened_in_flight > 0) == over
    assert result.in_flight_omitted_tokens == (
        sum(tokens) + EST.message(current) + sum(wm_tokens) - result.total(0)
    )


def test_a_result_larger_than_the_window_keeps_head_tail_and_a_marker() -> None:
    text = "HEAD " + "x" * 100_000 + " TAIL"
    wm = [*in_flight([1])[:1], {"role": "tool", "tool_call_id": "c0", "content": text}]
    managed, _ = managed_of(400, 200)
    result = trim_request(parts=[], managed=managed, current_input={"role": "user", "content": "?"},
                          working_memory=wm, tools_tokens=0, hard_budget=7_200, estimator=EST)
    sent = result.working_memory[1]["content"]
    assert sent.startswith("HEAD") and sent.endswith("TAIL") and "characters omitted" in sent
    assert result.total(0) <= 7_200 and not result.dropped_summary
    assert result.shortened_in_flight == 1 and result.in_flight_omitted_tokens > 10_000
    assert wm[1]["content"] == text  # the original is left as it was


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6_000), max_size=6), st.integers(0, 12_000))
def test_sendable_sizes_count_each_result_at_most_at_the_level(
    sizes: list[int], budget: int
) -> None:
    """Also under half the budget, where no message is read: nothing is shortened there."""
    messages = in_flight(sizes)
    tokens = [EST.message(m) for m in messages]
    level = in_flight_level(messages, tokens, budget)
    assert sendable_sizes(messages, tokens, budget) == [
        min(t, level) if m["role"] == "tool" else t for m, t in zip(messages, tokens, strict=True)
    ]
