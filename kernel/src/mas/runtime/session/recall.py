"""The session's archive and the opt-in ``recall_context`` tool (docs/context.md, "Recall").

A context manager that archives what it folds (:class:`~mas.runtime.protocols.ArchivingManager`)
gets an :class:`~mas.runtime.context.archive.Archive` from the session: ``archive.sqlite``
beside the saved state, or in memory for a session without a folder. With
``params.recall: true`` the model is offered ``recall_context(query)``, which returns the
best-matching folded messages within ``recall_max_tokens``. Each recall emits a
``recall`` event with counts only (terms, messages found, tokens), never the text.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from mas.runtime.context.archive import Archive, message_text
from mas.runtime.paths import refuse_symlinks
from mas.runtime.protocols import ArchiveSettings, ArchivingManager
from mas.runtime.session.tools import Tool

ARCHIVE_FILE = "archive.sqlite"
"""The archive's file name in a run folder."""

RECALL_TOOL = "recall_context"
"""The tool name the model calls."""


def open_archive(cm: object, state_path: Path | None) -> Archive | None:
    """Attach an archive to ``cm`` when it archives what it folds; ``None`` otherwise."""
    if not isinstance(cm, ArchivingManager) or not cm.archive_settings.enabled:
        return None
    settings: ArchiveSettings = cm.archive_settings
    path: Path | str = ":memory:"
    if state_path is not None:
        folder = state_path.parent
        folder.mkdir(parents=True, exist_ok=True)
        # SQLite follows links: a planted one must not redirect the archive's writes.
        refuse_symlinks(folder, [ARCHIVE_FILE, f"{ARCHIVE_FILE}-journal"])
        path = folder / ARCHIVE_FILE
    archive = Archive(path, max_messages=settings.max_messages, max_bytes=settings.max_bytes)
    cm.attach_archive(archive)
    return archive


def recall_tool(
    archive: Archive, max_tokens: int, emit: Callable[[dict[str, Any]], None]
) -> Tool:
    """The ``recall_context`` tool over ``archive``."""

    def recall_context(query: str) -> str:
        """Search earlier parts of this conversation that are no longer in view.

        Give words, names or identifiers (an order code, an amount) to look for; the
        best-matching earlier messages come back verbatim.
        """
        found = archive.search(str(query)[:500], max_tokens=max_tokens)
        emit({"terms": len(str(query).split()), "found": len(found),
              "tokens": sum(archive.estimator.message(m) for _, m in found)})
        if not found:
            return f"Nothing earlier in this conversation matches {str(query)[:80]!r}."
        lines = [f"Recalled {len(found)} earlier message(s):"]
        lines += [f"[#{position} {message.get('role')}] {message_text(message)}"
                  for position, message in found]
        return "\n".join(lines)

    return Tool.from_function(
        recall_context,
        name=RECALL_TOOL,
        parameters={
            "type": "object",
            "properties": {"query": {"type": "string",
                                     "description": "Words or identifiers to look for."}},
            "required": ["query"],
        },
    )
