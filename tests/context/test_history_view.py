"""A view of the history reads what the history held when it was taken, whatever the
history does next (appends, pruning in place, the write-back's drop), without a copy."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.context import History, HistoryView
from mas.runtime.context.history_view import extend_with

ROW = {"role": "system", "content": "[summary] earlier turns"}


def msg(i: int, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": f"message {i}"}


OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(0, 3)),
    st.tuples(st.just("replace"), st.integers(0, 1000)),
    st.tuples(st.just("drop"), st.integers(0, 4)),
    st.tuples(st.just("view"), st.integers(0, 6), st.booleans()),
), max_size=60)


@given(OPERATIONS)
def test_every_view_keeps_the_messages_it_was_taken_over(operations: list[tuple]) -> None:
    history = History([msg(i) for i in range(5)])
    taken: list[tuple[HistoryView, list[dict[str, Any]]]] = []
    counter = 5
    for name, *args in operations:
        if name == "append":
            for _ in range(args[0]):
                history.append(msg(counter, "assistant"))
                counter += 1
        elif name == "replace" and len(history):
            index = history.base + args[0] % len(history)
            old = history.message(index)
            history.replace(index, {**old, "content": "[pruned]"})
        elif name == "drop":
            history.drop_before(history.base + args[0])
        elif name == "view":
            start = history.base + args[0]
            rows = [ROW] if args[1] else []
            view = history.after(start, rows)
            taken.append((view, [*rows, *history.slice(start)]))
    for view, expected in taken:
        assert list(view) == expected
        assert view == expected and len(view) == len(expected)
        assert view.to_list() == expected
        out: list[dict[str, Any]] = [{"role": "system", "content": "s"}]
        extend_with(out, view)
        assert out[1:] == expected
        if expected:
            assert view[0] == expected[0] and view[-1] == expected[-1]
            assert view[1:] == expected[1:]


def test_a_view_of_the_whole_history_shares_its_list() -> None:
    history = History([msg(i) for i in range(10_000)])
    view = history.after(history.base)
    out: list[dict[str, Any]] = []
    view.extend_into(out)
    assert out == history.messages and out is not history.messages
    assert all(a is b for a, b in zip(out, history.messages, strict=True))
