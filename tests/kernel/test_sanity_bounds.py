"""Issue 12, item 5: documented sanity bounds on windows, reserves and triggers; each
violation is one line naming the field and the value, exit 2, no traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.spec.windows import MAX_CONTEXT_WINDOW

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {{name: bounded}}
spec:
  models:
    - {{id: main, model: gpt-4o, {row}}}
  context_manager:
    type: summarising
    params: {{{params}}}
"""


def _agent(write: Callable[[str, str], Path], row: str, params: str = "") -> Path:
    return write("agent.yaml", AGENT.format(row=row, params=params))


def _refused(mas_ctl: Callable[..., Any], path: Path, command: str = "validate") -> str:
    result = mas_ctl(command, path)
    assert result.code == 2, (result.out, result.err)
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, lines
    return str(lines[0])


@pytest.mark.parametrize("command", ["validate", "compile"])
def test_sanity_bounds_context_window_of_10_29_is_refused(write, mas_ctl, command: str) -> None:
    path = _agent(write, "context_window: 100000000000000000000000000000")
    line = _refused(mas_ctl, path, command)
    assert line.startswith(f"{path}: spec.models[0].context_window: ")
    assert "less than or equal to 100000000" in line and "(got 10000000000000000" in line


def test_sanity_bounds_max_tokens_at_the_window_is_refused(write, mas_ctl) -> None:
    path = _agent(write, "context_window: 8000, max_tokens: 8000")
    line = _refused(mas_ctl, path)
    assert line == (
        f"{path}: spec.models[id=main].max_tokens: a completion reserve of 8,000 tokens "
        "leaves no room for input in the 8,000-token window of gpt-4o (from "
        "spec.models[id=main].context_window); the reserve must be below the window (got 8000)"
    )
    assert _refused(mas_ctl, path, "compile") == line


def test_sanity_bounds_max_tokens_over_a_catalog_window_is_refused(write, mas_ctl) -> None:
    path = _agent(write, "max_tokens: 200000")
    line = _refused(mas_ctl, path)
    assert "spec.models[id=main].max_tokens:" in line and "(got 200000)" in line


def test_sanity_bounds_a_window_below_the_default_reserve_names_the_window(write, mas_ctl) -> None:
    line = _refused(mas_ctl, _agent(write, "context_window: 1500"))
    assert "spec.models[id=main].context_window: a completion reserve of 2,000 tokens" in line


def test_sanity_bounds_remaining_tokens_trigger_over_the_window(write, mas_ctl) -> None:
    path = _agent(write, "context_window: 8000", "trigger: {type: remaining_tokens, value: 9000}")
    line = _refused(mas_ctl, path)
    assert line.startswith(f"{path}: spec.context_manager.params.trigger.value: a "
                           "remaining_tokens trigger must be below the 8,000-token window")
    assert line.endswith("(got 9000.0)")
    huge = _agent(write, "context_window: 8000",
                  "trigger: {type: remaining_tokens, value: 1000000000}")
    assert "remaining_tokens value must be in [0, 100,000,000]" in _refused(mas_ctl, huge)


def test_sanity_bounds_safety_margin_and_reserve_leaving_nothing(write, mas_ctl) -> None:
    path = _agent(write, "context_window: 8000, max_tokens: 4000",
                  "trimmer: {safety_margin_ratio: 0.5}")
    line = _refused(mas_ctl, path)
    assert "spec.context_manager.params.trimmer: reserve 4,000 + safety margin 4,000" in line


def test_sanity_bounds_infra_values(write, mas_ctl) -> None:
    agent = _agent(write, "context_window: 8000")
    infra = write("infra.yaml", """
        apiVersion: mas/v1
        kind: Infra
        metadata: {name: i}
        spec: {generation: {max_tokens: 9000}}
    """)
    result = mas_ctl("validate", agent, "--infra", infra)
    assert result.code == 2
    assert "infra.spec.generation.max_tokens: a completion reserve of 9,000" in result.err
    infra.write_text(infra.read_text().replace("max_tokens: 9000", "context_window: 1e30"))
    assert mas_ctl("validate", agent, "--infra", infra).code == 2


def test_sanity_bounds_session_refuses_before_calling(write, mas_ctl) -> None:
    path = _agent(write, "context_window: 8000, max_tokens: 8000")
    turns = write("turns.jsonl", '"hello"\n')
    result = mas_ctl("run", path, "--input", turns)
    assert result.code == 2 and "spec.models[id=main].max_tokens" in result.err


@given(value=st.integers(-10, 10**30))
def test_sanity_bounds_row_values_are_accepted_exactly_inside_the_bound(value: int) -> None:
    from pydantic import ValidationError

    from mas.runtime.spec.manifests import ModelSpec

    inside = 0 < value <= MAX_CONTEXT_WINDOW
    for name in ("context_window", "max_tokens"):
        try:
            ModelSpec.model_validate({"id": "main", name: value})
        except ValidationError:
            assert not inside
        else:
            assert inside
