"""The control methods over a tree of run folders: list sessions, status, inspect_context.

Every answer is numbers and metadata read from the saved session files; none carries
prompt text, tool arguments or error text (an error is reported by its kind only).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mas.runtime.control._jsonrpc import Method, Param, RpcError
from mas.runtime.degradation import KINDS, is_degraded
from mas.runtime.errors import MasError
from mas.runtime.paths import MAX_RUN_FILE_BYTES, UnreadableFileError, read_regular
from mas.runtime.session import STATE, TRANSCRIPT, load_state

SESSION_NOT_FOUND = -32001
"""No session with that id under the runs root."""
NO_MODEL_CALL = -32002
"""The session exists but has made no model call, so it has no ContextUsageView yet."""
MAX_SESSION_ID_CHARS = 1024
"""Longest ``session_id`` a method takes (-32602 past it): the answers echo it."""


def saved_view(folder: Path) -> dict[str, Any]:
    """The ContextUsageView saved in a run folder's session file.

    :raises MasError: no session file, or no model call made yet.
    """
    path = Path(folder) / STATE
    if not path.is_file():
        raise MasError(f"{folder}: no {STATE} here; is it a session run folder?")
    view = load_state(path).get("context_usage")
    if view is None:
        raise MasError(f"{folder}: the session has made no model call yet")
    return dict(view)


class SessionTree:
    """The sessions saved under one runs root, read afresh on every call.

    Session files are found at any depth; symlinked files are skipped, so an answer never
    reads outside the root.

    :param root: the runs folder (``mas-ctl serve --runs``).
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def methods(self) -> list[Method]:
        """The JSON-RPC methods this tree answers."""
        session = (Param("session_id", max_chars=MAX_SESSION_ID_CHARS),)
        return [
            Method("list_sessions", (), self.list_sessions),
            Method("session_status", session, self.session_status),
            Method("inspect_context", session, self.inspect_context),
        ]

    def _files(self) -> list[Path]:
        resolved = self.root.resolve()
        return [
            path
            for path in sorted(self.root.rglob(STATE))
            if not path.is_symlink() and path.resolve().is_relative_to(resolved)
        ]

    def _folder(self, path: Path) -> str:
        return path.parent.relative_to(self.root).as_posix()

    def list_sessions(self) -> dict[str, Any]:
        """Every readable session (id, agent, model, turns, folder), and the unreadable ones.

        An unreadable file is listed with its folder and reason instead of being skipped.
        """
        sessions, unreadable = [], []
        for path in self._files():
            try:
                state = load_state(path)
            except MasError as exc:
                unreadable.append({"folder": self._folder(path), "reason": type(exc).__name__})
                continue
            sessions.append({
                "session_id": state.get("session_id"),
                "agent": state.get("agent"),
                "model": state.get("model"),
                "turns": state.get("turns", 0),
                "folder": self._folder(path),
            })
        return {"sessions": sessions, "unreadable": unreadable}

    def _find(self, session_id: str) -> tuple[Path, dict[str, Any]]:
        unreadable = 0
        for path in self._files():
            try:
                state = load_state(path)
            except MasError:
                unreadable += 1  # it may have held this id: the error says how many
                continue
            if state.get("session_id") == session_id:
                return path, state
        raise RpcError(
            SESSION_NOT_FOUND,
            f"no session {session_id!r} under {self.root}",
            {"session_id": session_id, "unreadable": unreadable},
        )

    def session_status(self, session_id: str) -> dict[str, Any]:
        """Where a session stands: turns, compactions, calls, cost, whether it degraded (the
        count of each kind its degradation record holds) and whether it failed."""
        path, state = self._find(session_id)
        ledger = state.get("ledger") or {}
        error_kind = _error_kind(path.parent / TRANSCRIPT)
        # Counts only: a kind's last reason may quote a provider's or a plugin's error text,
        # which never crosses the control channel (as for error_kind).
        saved = state.get("degradation")
        recorded = (saved.get("counts") if isinstance(saved, dict) else None) or {}
        counts = {str(kind): int(count) for kind, count in recorded.items()
                  if kind in KINDS and isinstance(count, int) and count > 0}
        return {
            "session_id": session_id,
            "agent": state.get("agent"),
            "model": state.get("model"),
            "folder": self._folder(path),
            "turns": state.get("turns", 0),
            "compactions": state.get("compactions", 0),
            "llm_calls": ledger.get("llm_calls", 0),
            "cost": ledger.get("cost", 0.0),
            "cost_status": ledger.get("cost_status", "ok"),
            "finished": (path.parent / TRANSCRIPT).is_file(),
            "failed": error_kind is not None,
            "error_kind": error_kind,
            "degraded": is_degraded(counts),
            "degradation": dict(sorted(counts.items())),
        }

    def inspect_context(self, session_id: str) -> dict[str, Any]:
        """The session's latest ContextUsageView (numbers and metadata only)."""
        _, state = self._find(session_id)
        view = state.get("context_usage")
        if view is None:
            raise RpcError(
                NO_MODEL_CALL, f"session {session_id!r} has made no model call yet",
                {"session_id": session_id},
            )
        return dict(view)


def _error_kind(transcript: Path) -> str | None:
    # The transcript stores "<ExceptionType>: <message>"; the message may quote provider
    # text, so only the type crosses the control channel. A symlink is never followed (it
    # could point outside --runs), nor a pipe read (it would hang the server).
    if not transcript.is_file() and not transcript.is_symlink():
        return None
    try:
        raw = read_regular(transcript, MAX_RUN_FILE_BYTES, follow_symlinks=False)
        record = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, UnreadableFileError):
        return "UnreadableTranscript"
    error = record.get("error") if isinstance(record, dict) else None
    return str(error).split(":", 1)[0] if error else None

