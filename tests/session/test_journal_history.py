"""Issue 13 item 14: a journal line carries the history window as a delta against the
transcript (where it starts, what pruning replaced), so saving a turn does not grow with
the window, and replay gives back exactly the window that was saved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mas.runtime.session.store import StateJournal, journal_path, load_state


def _state(turns: int, base: int, pruned: set[int], *, foreign: bool = False) -> dict[str, Any]:
    transcript = [{"role": "user" if i % 2 == 0 else "tool", "content": f"message {i} " * 20}
                  for i in range(2 * turns)]
    messages = [{**m, "content": "[cleared]"} if i in pruned else m
                for i, m in enumerate(transcript) if i >= base]
    history: dict[str, Any] = {"base": base, "messages": messages}
    if pruned:
        history["originals"] = {str(i): transcript[i] for i in sorted(pruned)
                                if base <= i < len(transcript)}
        if not history["originals"]:
            del history["originals"]
    if foreign:  # a window that is not the transcript's tail: stored whole
        history["messages"] = [*messages[:-1], {"role": "user", "content": "not committed"}]
    return {"turns": turns, "transcript": transcript, "history": history, "other": turns}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.sets(st.integers(0, 40), max_size=5),
                          st.booleans()), min_size=1, max_size=8))
def test_every_saved_window_replays_exactly(tmp_path_factory: Any, steps: list[Any]) -> None:
    path = tmp_path_factory.mktemp("s") / "session.json"
    journal = StateJournal(path)
    base = 0
    for turn, (advance, pruned, foreign) in enumerate(steps, start=1):
        base = min(base + advance, 2 * turn)
        state = _state(turn, base, {p for p in pruned if base <= p < 2 * turn},
                       foreign=foreign)
        journal.save(state)
        assert load_state(path) == {**json.loads(json.dumps(state)), "version": 1}


def test_a_line_does_not_grow_with_the_window(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    journal = StateJournal(path)
    sizes: dict[int, int] = {}
    for turn in range(1, 301):
        journal.save(_state(turn, 0, {3, 5}))
        lines = journal_path(path).read_text().splitlines() if journal_path(path).exists() else []
        if lines:  # right after a snapshot the journal is empty
            sizes[turn] = len(json.dumps(json.loads(lines[-1])["state"]["history"]))
    early = max(v for k, v in sizes.items() if k <= 60)
    late = max(v for k, v in sizes.items() if k >= 240)
    assert late <= early + 16, (early, late)  # the window grew fivefold; its part did not
