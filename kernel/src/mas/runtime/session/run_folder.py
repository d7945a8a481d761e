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
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from mas.runtime.errors import ManifestError, Problem, StorageError
from mas.runtime.events import Event, JsonlEventSink
from mas.runtime.paths import (
    MAX_RUN_FILE_BYTES,
    UnreadableFileError,
    hold_lock,
    read_regular,
    refuse_symlinks,
    truncate_own,
)
from mas.runtime.protocols import Message
from mas.runtime.runtime import Runtime
from mas.runtime.session.agent import AgentSession
from mas.runtime.session.store import write_atomic

TRANSCRIPT = "transcript.json"
EVENTS = "events.jsonl"
STATE = "session.json"
LOCK = ".lock"
RUN_FILES = (TRANSCRIPT, EVENTS, STATE)
"""The files of a session run folder; none of them may be a symlink."""


def is_run_folder(path: Path) -> bool:
    """A folder is a session run folder when it holds a transcript."""
    return (Path(path) / TRANSCRIPT).is_file()


def record_events(
    runtime: Runtime, folder: Path, session_id: Callable[[], str], *,
    committed_turns: int | None = None,
) -> Callable[[], None]:
    """Append the events of one session to ``folder/events.jsonl``; returns a closer.

    ``session_id`` is asked on every event, since a resumed session learns its id only
    when its state is loaded. Several sessions may share one runtime: only this session's
    events are written.

    :param committed_turns: the turns the saved state holds, when resuming: events after
        that turn's ``session.turn`` (a turn cut short by a kill, which is played again)
        are cut first, so no event is written twice.
    """
    refuse_symlinks(folder, RUN_FILES)
    if committed_turns is not None:
        trim_events(Path(folder) / EVENTS, committed_turns)
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
    """Write ``folder/transcript.json`` for ``session`` (atomically), after folding the
    session's journal into its ``session.json``."""
    session.compact_state()
    answers = [
        m for m in session.transcript if m.get("role") == "assistant" and not m.get("tool_calls")
    ]
    record = {
        "session_id": session.session_id,
        "agent": session.agent_name,
        "model": session.engine.model,
        "messages": [canonical_message(m) for m in session.transcript],
        "final_answer": (answers[-1].get("content") or "") if answers else "",
        "error": error,
        # ok, degraded or failed (docs/run-folder.md): what the lab and eval read first.
        "status": session.degradation.status(error),
        "degradation": session.degradation.to_state(),
        **(extra or {}),
    }
    write_atomic(Path(folder) / TRANSCRIPT, json.dumps(record, indent=1, ensure_ascii=False))


def canonical_message(message: Message) -> Message:
    """``message`` with its keys in one order: ``role`` first, then the rest sorted, nested
    objects sorted too.

    A resumed session reads its messages back from ``session.json`` (whose keys are
    sorted), an uninterrupted one keeps them as built: without one order the two
    transcripts of the same session would differ (issue 26, item 12).
    """
    rest = {key: _sorted(message[key]) for key in sorted(message) if key != "role"}
    return {"role": message["role"], **rest} if "role" in message else rest


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def lock_run_folder(folder: Path) -> AbstractContextManager[None]:
    """Hold ``folder/.lock`` while a session runs there: a second ``mas-ctl run`` on the
    same folder is refused with one line instead of interleaving turns with the first.

    :raises MasError: another process holds it (on entering).
    """
    return hold_lock(Path(folder) / LOCK, f"mas-ctl run (pid {os.getpid()})",
                     "wait for it to finish, or pass another --out")


def check_resume_input(session: AgentSession, turns: Sequence[str], source: str) -> None:
    """Refuse to resume ``session`` with an input whose first turns are not the saved ones.

    Resuming skips the turns already played; with another file that would silently skip
    that file's first turns instead.

    :raises ManifestError: naming the first line that differs.
    """
    played = [m.get("content") for m in session.transcript if m.get("role") == "user"]
    for number, (saved, given) in enumerate(zip(played, turns, strict=False), 1):
        if saved != given:
            raise ManifestError([Problem(
                source, f"turn {number}",
                f"differs from turn {number} saved in the run folder; resume with the same "
                "--input, or pass another --out for a new session")])
    if len(turns) < len(played):
        raise ManifestError([Problem(
            source, "", f"has {len(turns)} turn(s) but the run folder already played "
            f"{len(played)}; resume with the same --input, or pass another --out")])


def trim_events(path: Path, turns: int) -> int:
    """Cut ``path`` (an events.jsonl) after the ``session.turn`` event of turn ``turns``
    (everything, for 0); a torn last line goes too. Returns the bytes removed.
    """
    try:
        raw = read_regular(path, MAX_RUN_FILE_BYTES, follow_symlinks=False)
    except FileNotFoundError:
        return 0
    except UnreadableFileError as exc:
        raise StorageError(str(exc)) from exc
    except OSError as exc:
        raise StorageError(f"{path}: cannot read ({exc.strerror})") from exc
    keep = offset = 0
    for line in raw.splitlines(keepends=True):
        offset += len(line)
        if turns and b'"session.turn"' in line and line.endswith(b"\n"):
            try:
                event = json.loads(line)
            except ValueError:
                break
            if event.get("event") == "session.turn" and event.get("turn") == turns:
                keep = offset
    if keep < len(raw):
        truncate_own(path, keep)
    return len(raw) - keep
