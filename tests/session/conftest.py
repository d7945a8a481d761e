"""Fixtures for agent-session tests: an agent manifest on disk and a session factory."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mas.runtime import Runtime
from mas.runtime.session import AgentSession, open_session
from mas.runtime.spec.loader import load_manifest_set

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {{name: tester}}
spec:
  instructions: You answer from the conversation.
  models:
    - {{id: main, model: offline/default, context_window: {window}, max_tokens: 256}}
  context_manager:
    type: {cm}
    params: {params}
  context_sources: {{pin_activated: {pin}}}
  budget: {{max_llm_calls: {calls}}}
"""


@pytest.fixture
def make_session(tmp_path: Path) -> Callable[..., AgentSession]:
    """``make_session(window=, cm=, params=, pin=, calls=, runtime=, state=, **kw)``."""

    def make(
        *, window: int = 4000, cm: str = "summarising", params: str = "{keep_turns: 2}",
        pin: str = "true", calls: int = 1000, runtime: Runtime | None = None,
        state: Path | None = None, **kwargs: Any,
    ) -> AgentSession:
        path = tmp_path / "agent.yaml"
        path.write_text(textwrap.dedent(AGENT.format(window=window, cm=cm, params=params, pin=pin, calls=calls)))
        manifests = load_manifest_set([path])
        return open_session(
            runtime or Runtime.create(), manifests.agents[0], manifests,
            state_path=state, **kwargs,
        )

    return make
