"""Invariants of cutting a request to fit a window (``mas.runtime.engine._window``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.engine._window import (
    _MARK_ROOM,
    WindowExceededError,
    shrink,
    shrink_factor,
)

contents = st.lists(st.text(alphabet="ab7 ", max_size=3000), min_size=1, max_size=8)
factors = st.floats(min_value=0.05, max_value=0.95)


@given(contents, factors)
def test_shrink_keeps_every_message_and_its_order(texts: list[str], factor: float) -> None:
    messages = [{"role": "user" if i % 2 else "tool", "content": t, "n": i}
                for i, t in enumerate(texts)]
    out = shrink(messages, factor)
    assert [m["n"] for m in out.messages] == list(range(len(texts)))
    assert all(a["role"] == b["role"] for a, b in zip(messages, out.messages, strict=True))


@given(contents, factors)
def test_shrink_brings_the_text_under_the_share_asked(texts: list[str], factor: float) -> None:
    messages = [{"role": "user", "content": t} for t in texts]
    total = sum(map(len, texts))
    out = shrink(messages, factor)
    after = sum(len(m["content"]) for m in out.messages)
    # What is kept fits the share, but for one mark's room per message: a message is cut
    # only when that saves characters.
    assert after <= total * factor + len(texts) * _MARK_ROOM
    assert after <= total and (out.cut_chars == 0 or after < total)
    uncut = [m for m, t in zip(out.messages, texts, strict=True) if m["content"] == t]
    assert len(uncut) + out.cut_messages == len(texts)


@given(contents, factors)
def test_a_cut_message_keeps_its_head_and_tail(texts: list[str], factor: float) -> None:
    out = shrink([{"role": "user", "content": t} for t in texts], factor)
    for before, after in zip(texts, out.messages, strict=True):
        if after["content"] != before:
            head, _, tail = after["content"].partition("\n[... ")
            assert before.startswith(head)
            assert before.endswith(tail.split("window ...]\n", 1)[1])


@given(st.integers(1, 200_000), st.integers(1, 400_000), st.integers(0, 4096))
def test_the_factor_is_a_share_below_one(window: int, requested: int, completion: int) -> None:
    factor = shrink_factor(WindowExceededError("x", window=window, requested=requested,
                                               completion=completion))
    assert 0.05 <= factor <= 0.95
