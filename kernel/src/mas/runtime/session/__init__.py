"""Agent sessions: the tool-calling loop, skills, persistence and ``inspect_context``.

::

    from mas.runtime import Runtime
    from mas.runtime.spec.loader import load_manifest_set
    from mas.runtime.session import open_session

    runtime = Runtime.create()
    manifests = load_manifest_set([Path("agent.yaml")])
    session = open_session(runtime, manifests.agents[0], manifests, state_path=Path("s.json"))
    print(session.send("My order id is A-1042.").answer)
    print(session.inspect_context().to_dict())
"""

from __future__ import annotations

from mas.runtime.session.agent import AgentSession, SessionSettings, TurnResult
from mas.runtime.session.build import engine_for, infra_engine, open_session
from mas.runtime.session.run_folder import (
    EVENTS,
    STATE,
    TRANSCRIPT,
    is_run_folder,
    record_events,
    write_transcript,
)
from mas.runtime.session.skills import SkillLibrary
from mas.runtime.session.store import SessionStateError, load_state, save_state, write_atomic
from mas.runtime.session.tools import Tool, schema_of
from mas.runtime.session.view import ContextUsageView

__all__ = [
    "EVENTS",
    "STATE",
    "TRANSCRIPT",
    "AgentSession",
    "ContextUsageView",
    "SessionSettings",
    "SessionStateError",
    "SkillLibrary",
    "Tool",
    "TurnResult",
    "engine_for",
    "infra_engine",
    "is_run_folder",
    "load_state",
    "open_session",
    "record_events",
    "save_state",
    "schema_of",
    "write_atomic",
    "write_transcript",
]
