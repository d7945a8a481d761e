"""The summary's room (docs/context.md, ``summary_share``, ``summary_max_share``,
``summary_window_share``): it starts at a share of the trigger, grows with what the
summary covers, and stays within a share of the summarizer's window, because every
summarizer call carries the summary in and reserves as much for its answer."""

from __future__ import annotations

import pytest

from mas.runtime.context import ContextBudget, FixedCosts, History
from mas.runtime.errors import ManifestError

SUMMARIZER_WINDOW = 8_000


def history_of(turns: int) -> History:
    return History([m for i in range(turns) for m in (
        {"role": "user", "content": f"question {i} " + "u" * 1_600},
        {"role": "assistant", "content": f"answer {i} " + "a" * 1_600})])


def asked_room(binder, engine_double, covered: int, **params) -> int:
    """The output room the first summarizer call of a fold asks for, once the summary
    already covers ``covered`` tokens."""
    cm, _ = binder({"type": "summarising", "params": {
        "keep_turns": 1, "summary_share": 0.02, "summary_max_share": 0.9,
        "summarizer": {"type": "llm", "params": {"context_window": SUMMARIZER_WINDOW}},
        **params}})
    cm.state.summarized_tokens = covered
    engine = engine_double()
    budget = ContextBudget.compute(window=60_000, reserve=0, fixed=FixedCosts(system=10),
                                   settings=cm.budget_settings)
    cm.manage_history(history_of(120), budget, engine=engine)
    return engine.calls[0]["max_tokens"]


def test_the_room_grows_with_what_the_summary_covers(binder, engine_double) -> None:
    assert asked_room(binder, engine_double, 0) < asked_room(binder, engine_double, 30_000)


def test_the_grown_room_stays_within_its_share_of_the_summarizer_window(
    binder, engine_double
) -> None:
    default = asked_room(binder, engine_double, 1_000_000)
    wider = asked_room(binder, engine_double, 1_000_000, summary_window_share=0.3)
    assert default <= SUMMARIZER_WINDOW * 0.125 < wider <= SUMMARIZER_WINDOW * 0.3


@pytest.mark.parametrize("share", [0, -0.1, 0.41, 1])
def test_a_window_share_outside_its_bounds_is_refused_naming_the_field(
    binder, share: float
) -> None:
    with pytest.raises(ManifestError, match=rf"params\.summary_window_share: .*\(got {share}\)"):
        binder({"type": "summarising", "params": {"summary_window_share": share}})
