"""Timeline test helpers: synthetic run folders of any length, written as a session would."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

SECRET = "PLANTED-SECRET-PROMPT-7f3a"
"""A string no timeline page may contain: it stands for prompt, reply and reason text."""


def synthetic_events(requests: int, *, per_turn: int = 3, fold_every: int = 40) -> list[dict[str, Any]]:
    """The events of a session of ``requests`` model requests that grows and folds.

    Every ``fold_every`` requests a compaction runs (every other one inside a turn), every
    37th request a recall, every 53rd a pruning pass and every 101st a degradation; each
    text-bearing field carries :data:`SECRET`.
    """
    events: list[dict[str, Any]] = []
    history, turn = 0, 0
    for index in range(requests):
        if index % per_turn == 0 and index:
            turn += 1
            events.append({"event": "session.turn", "turn": turn, "ts": 1.0})
        if index and index % fold_every == 0:
            events.append({"event": "compaction.start", "estimated_tokens": history})
            events.append({"event": "compaction.stop", "llm_calls": 1, "folded_messages": 30,
                           "tokens_after": 900, "summary_text": SECRET,
                           "identifier_check": {"found": 3, "repaired": 1, "appended": 0,
                                                "missing": 0}})
            history = 900
        if index % 37 == 5:
            events.append({"event": "recall", "terms": 3, "found": 2, "tokens": 120, "query": SECRET})
        if index % 53 == 7:
            events.append({"event": "context.pruned", "capped": 0, "soft_trimmed": 2, "cleared": 1,
                           "chars_before": 9000, "chars_after": 3000, "fill": 0.8})
        if index % 101 == 9:
            events.append({"event": "degraded", "kind": "budget_cuts", "count": 1, "total": 1,
                           "reason": SECRET})
        history += 150
        events.append({
            "event": "context.assembled", "estimated_tokens": history + 60,
            "breakdown": {"system": 40, "tools": 0, "history": history, "current_input": 20,
                          "working_memory": 0},
            "context_window": 8000, "hard_budget": 6688, "soft_trigger": 6048,
            "over_budget": False, "parts": [{"section_id": SECRET, "tokens": 40}],
            "accounting": {"sent": {"messages": 10, "tokens": history},
                           "summarized": {"messages": turn, "tokens": turn * 50},
                           "dropped": {"messages": 0, "tokens": 0},
                           "cut": {"messages": 0, "tokens": 0}},
        })
        events.append({"event": "llm.call", "purpose": "turn", "prompt_tokens": history + 58,
                       "cached_tokens": history // 2})
        events.append({"event": "brand.new.kind", "text": SECRET})
    return events


@pytest.fixture
def run_folder(tmp_path: Path) -> Callable[..., Path]:
    """``run_folder(events, name="run")``: a run folder holding those events (and a
    transcript whose messages carry :data:`SECRET`)."""

    def make(events: list[dict[str, Any]], name: str = "run") -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "transcript.json").write_text(json.dumps(
            {"session_id": "s1", "agent": "a", "messages": [{"role": "user", "content": SECRET}]}))
        (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        return folder

    return make


@pytest.fixture
def synthetic_run(run_folder: Callable[..., Path]) -> Callable[..., Path]:
    """``synthetic_run(requests, name="run")``: a run folder of :func:`synthetic_events`."""

    def make(requests: int, name: str = "run") -> Path:
        return run_folder(synthetic_events(requests), name)

    return make


@pytest.fixture
def secret() -> str:
    """:data:`SECRET`, the text no page may hold."""
    return SECRET
