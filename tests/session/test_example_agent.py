"""The example agent (library-standard/examples/agent), as `make demo` runs it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from mas.runtime.session import load_state

EXAMPLE = Path(__file__).resolve().parents[2] / "library-standard" / "examples" / "agent"


def test_example_session_compacts_twice_and_still_answers(mas_ctl: Callable[..., object], tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = mas_ctl("run", EXAMPLE / "agent.yaml", "--input", EXAMPLE / "turns.jsonl", "--out", out,
                     "--json")
    assert result.code == 0, result.err  # type: ignore[attr-defined]
    state = load_state(out / "session.json")
    assert state["compactions"] >= 2
    answers = [m["content"] for m in state["transcript"] if m["role"] == "assistant"][-3:]
    assert "ORD-7781" in answers[0]
    assert "Marta Kowalski" in answers[1]
    assert "142.50 EUR" in answers[2]
    view = json.loads(result.out)  # type: ignore[attr-defined]
    assert view["estimated_prompt_tokens"] <= view["hard_budget"]
    assert view["compactions"] == state["compactions"]
