"""The session run folder (docs/run-folder.md): transcript, events and state of one session.

::

    <run>/transcript.json   whole conversation as it happened, final answer, error
    <run>/events.jsonl      one event per line (context.assembled, llm.call, compaction.*, ...)
    <run>/session.json      resumable session state (atomic writes)

Eval and the lab read these files; nothing in them is prompt text except the transcript,
which is the record the user asked for.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mas.runtime.events import Event, JsonlEventSink
from mas.runtime.paths import refuse_symlinks
from mas.runtime.runtime import Runtime
from mas.runtime.session.agent import AgentSession
from mas.runtime.session.store import write_atomic

TRANSCRIPT = "transcript.json"
EVENTS = "events.jsonl"
STATE = "session.json"
RUN_FILES = (TRANSCRIPT, EVENTS, STATE)
"""The files of a session run folder; none of them may be a symlink."""


def is_run_folder(path: Path) -> bool:
    """A folder is a session run folder when it holds a transcript."""
    return (Path(path) / TRANSCRIPT).is_file()


def record_events(
    runtime: Runtime, folder: Path, session_id: Callable[[], str]
) -> Callable[[], None]:
    """Append the events of one session to ``folder/events.jsonl``; returns a closer.

    ``session_id`` is asked on every event, since a resumed session learns its id only
    when its state is loaded. Several sessions may share one runtime: only this session's
    events are written.
    """
    refuse_symlinks(folder, RUN_FILES)
    sink = JsonlEventSink(Path(folder) / EVENTS)

    def listener(event: Event) -> None:
        if event.session_id == session_id():
            sink(event)

    remove = runtime.add_listener(listener)

    def close() -> None:
        remove()
        sink.close()

    return close


def write_transcript(
    folder: Path,
    session: AgentSession,
    *,
    error: str | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Write ``folder/transcript.json`` for ``session`` (atomically)."""
    answers = [
        m for m in session.transcript if m.get("role") == "assistant" and not m.get("tool_calls")
    ]
    record = {
        "session_id": session.session_id,
        "agent": session.agent_name,
        "model": session.engine.model,
        "messages": session.transcript,
        "final_answer": (answers[-1].get("content") or "") if answers else "",
        "error": error,
        # ok, degraded or failed (docs/run-folder.md): what the lab and eval read first.
        "status": session.degradation.status(error),
        "degradation": session.degradation.to_state(),
        **(extra or {}),
    }
    write_atomic(Path(folder) / TRANSCRIPT, json.dumps(record, indent=1, ensure_ascii=False))
