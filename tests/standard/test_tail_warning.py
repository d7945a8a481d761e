"""Issue 25 item 6: a ``keep_turns`` the tail's token bound overrides is said — at bind
with the numbers when the bound holds no turn at all, else at the first fold that keeps
fewer turns than asked — and ``inspect`` shows the tail the latest fold kept."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mas.runtime.context import ContextBudget, FixedCosts, History

LOGGER = "mas.library.standard.plugins.context.conversation"

# The plugin tutorial's agent (docs/plugins.md), with the call-free drop summarizer.
TUTORIAL = """apiVersion: mas/v1
kind: Agent
metadata: {name: headline-demo}
spec:
  models:
    - {id: main, model: offline/default, max_tokens: 128, context_window: 600}
  context_manager:
    type: summarising
    params:
      keep_turns: 2
      summarizer: drop
"""
TURNS = [
    f"Turn {i}: my order ORD-77{i}1 has not arrived and the tracking page shows nothing "
    "since Monday, when it said the parcel had left the warehouse in Poznan." for i in range(8)
]


def tail_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    caplog.clear()
    return [line for line in lines if "keep_turns" in line and "asked" in line]


def test_a_keep_turns_the_bound_overrides_is_warned_once_at_bind_with_the_numbers(
    write: Callable[[str, str], Path], mas_ctl: Callable[..., Any], tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = write("agent.yaml", TUTORIAL)
    caplog.set_level(logging.WARNING, logger=LOGGER)
    assert mas_ctl("validate", agent).code == 0
    [line] = tail_warnings(caplog)
    assert line.startswith("summarising: keep_turns 2 asked, 0 turn(s) kept verbatim: the "
                           "tail's token bound is 0 tokens (auto: half the trigger ")
    assert "history limit 412" in line
    turns = write("turns.jsonl", "\n".join(json.dumps(t) for t in TURNS) + "\n")
    out = tmp_path / "run"
    ran = mas_ctl("run", agent, "--input", turns, "--out", out)
    assert ran.code == 0, ran.err
    assert len(tail_warnings(caplog)) == 1, "one warning for the run, at bind"
    assert "verbatim   0 turn(s) kept of keep_turns 2" in ran.out + ran.err
    view = json.loads(mas_ctl("inspect", out).out)
    assert view["tail"] == {"keep_turns": 2, "turns": 0, "messages": 0, "tokens": 0,
                            "token_bound": 0}
    assert view["accounting"]["sent"]["messages"] == 0


def turn(i: int, size: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"question {i} " + "u" * size},
            {"role": "assistant", "content": f"answer {i} " + "a" * size}]


@pytest.mark.parametrize("explicit", [True, False])
def test_a_fold_keeping_fewer_turns_than_asked_warns_once_when_keep_turns_is_set(
    binder: Callable[..., Any], engine_double: Callable[..., Any],
    caplog: pytest.LogCaptureFixture, explicit: bool,
) -> None:
    params: dict[str, Any] = {"summarizer": "drop"}
    if explicit:
        params["keep_turns"] = 10  # the default's value, set: the user asked for it
    cm, _ = binder({"type": "summarising", "params": params})
    budget = ContextBudget.compute(window=6_000, reserve=0, fixed=FixedCosts(system=10),
                                   settings=cm.budget_settings)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        cm.check_budget(budget)  # the bound holds a turn: nothing to say at bind
        assert not caplog.records
        history = History([m for i in range(30) for m in turn(i, 1_200)])
        cm.manage_history(history, budget, engine=engine_double())
        cm.commit(history)
        history.extend([m for i in range(30, 60) for m in turn(i, 1_200)])
        cm.manage_history(history, budget, engine=engine_double())
    tail = cm.tail
    assert tail is not None and 0 < tail["turns"] < 10
    assert tail["tokens"] <= tail["token_bound"] and tail["keep_turns"] == 10
    warned = [r.getMessage() for r in caplog.records if "asked" in r.getMessage()]
    if not explicit:
        assert warned == [], "the default keep_turns is an upper bound the token bound tightens"
        return
    [line] = warned
    assert line.startswith(f"summarising: keep_turns 10 asked, {tail['turns']} turn(s) kept "
                           f"verbatim: the tail's token bound is {tail['token_bound']} tokens")


def test_a_lab_binding_a_manager_per_session_warns_once(
    binder: Callable[..., Any], caplog: pytest.LogCaptureFixture,
) -> None:
    """A lab binds a fresh manager for each session on one runtime: one line, not fifteen."""
    raw = {"type": "summarising", "params": {"keep_turns": 2, "summarizer": "drop"}}
    first, rec = binder(raw)
    budget = ContextBudget.compute(window=600, reserve=128, settings=first.budget_settings)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        for _ in range(3):
            cm, _ = binder(raw, rec)
            cm.check_budget(budget)
        binder(raw)[0].check_budget(budget)  # another runtime: another run, said again
    assert len(tail_warnings(caplog)) == 2
