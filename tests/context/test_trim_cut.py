"""Issue 22: the final trim cuts the oldest history in one pass, scanning back from the
newest message; it keeps exactly what the prefix-sum rule keeps (the smallest cut after
which the request fits, moved past tool results), counts what it cut, and never splits a
tool call from its result."""

from __future__ import annotations

from itertools import accumulate
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mas.runtime.context import DEFAULT_ESTIMATOR, pair_problems, safe_cut
from mas.runtime.context.trimmer import trim_request
from mas.runtime.protocols import ManagedHistory


def messages_of(shape: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """Turns of (tool results, size): a user message, then calls with results, an answer."""
    out: list[dict[str, Any]] = []
    for n, (results, size) in enumerate(shape):
        out.append({"role": "user", "content": f"q{n} " + "u" * size})
        if results:
            calls = [{"id": f"c{n}_{k}", "type": "function",
                      "function": {"name": "f", "arguments": "{}"}} for k in range(results)]
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
            out += [{"role": "tool", "tool_call_id": c["id"], "content": "r" * size}
                    for c in calls]
        out.append({"role": "assistant", "content": "a" * size})
    return out


def reference_cut(tokens: list[int], messages: list[dict[str, Any]], first: int,
                  over: int) -> int:
    """The rule stated on prefix sums: the smallest cut whose prefix covers ``over``."""
    sums = list(accumulate(tokens[first:]))
    k = next((i for i, v in enumerate(sums) if v >= over), len(sums))
    return safe_cut(messages, first + k + 1) if k < len(sums) else len(messages)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 400)), min_size=2, max_size=60),
       st.integers(0, 1), st.integers(200, 6_000))
def test_the_cut_matches_the_prefix_sum_rule_and_is_counted(
    shape: list[tuple[int, int]], summary: int, budget: int
) -> None:
    history = messages_of(shape)
    rows = [{"role": "system", "content": "Summary: " + "s" * 40}] * summary
    messages = [*rows, *history]
    tokens = [DEFAULT_ESTIMATOR.message(m) for m in messages]
    current = {"role": "user", "content": "now?"}
    managed = ManagedHistory(messages=messages, tokens=sum(tokens), summary_rows=summary,
                             message_tokens=tokens)
    result = trim_request(parts=[], managed=managed, current_input=current, working_memory=[],
                          tools_tokens=0, hard_budget=budget, estimator=DEFAULT_ESTIMATOR)
    kept = list(result.history)
    assert pair_problems(kept) == []
    over = sum(tokens) + DEFAULT_ESTIMATOR.message(current) - budget
    if over > 0 and not result.dropped_summary:
        cut = reference_cut(tokens, messages, summary, over)
        assert kept == [*rows, *messages[cut:]]
        assert result.dropped_history == cut - summary
        assert result.dropped_history_tokens == sum(tokens[summary:cut])
        assert result.total(0) <= budget or cut == len(messages)
    elif over <= 0:
        assert kept == messages and result.dropped_history == 0
