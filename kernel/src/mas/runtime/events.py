"""Runtime events: what happened, as numbers and metadata, never prompt text.

Names in use: ``context.assembled``, ``compaction.start``, ``compaction.stop``,
``compaction.exception``, ``llm.call``, ``cache.lookup``, ``session.turn``, ``warning``,
``degraded`` (one per addition to a session's degradation record: kind, count, total, reason).

A model call's text rides along out of band (:attr:`Event.content`), for in-process
listeners that show it only on the user's opt-in; no sink stores it.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mas.runtime.errors import StorageError
from mas.runtime.paths import open_append
from mas.runtime.secrets import is_exception_text, mask_data, reduce_message


@dataclass(frozen=True)
class Event:
    """One runtime event.

    :ivar name: dotted event name such as ``compaction.stop``.
    :ivar data: JSON-serializable numbers and metadata.
    :ivar session_id: the session it belongs to (empty outside a session).
    :ivar ts: wall-clock seconds since the epoch.
    :ivar content: the text behind the numbers, for in-process listeners that show it
        only on the user's opt-in (the OpenTelemetry spans, docs/otel.md): on ``llm.call``
        ``messages`` (the request) and ``reply`` (the :class:`~mas.runtime.protocols.
        ModelReply`), on ``llm.error`` ``messages``. Never stored: :meth:`to_json` and
        :func:`stored_event` leave it out.
    """

    name: str
    data: dict[str, Any] = field(default_factory=dict)
    session_id: str = ""
    ts: float = field(default_factory=time.time)
    content: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> str:
        """One JSON line (no trailing newline), keys sorted for stable files."""
        record = {"event": self.name, "session_id": self.session_id, "ts": self.ts, **self.data}
        return json.dumps(record, sort_keys=True, default=str)


class JsonlEventSink:
    """Appends events to a JSON-lines file, one whole line per write.

    Each line goes out in a single ``os.write`` on a file opened with ``O_APPEND``, under
    a lock, so concurrent sessions writing the same file never interleave partial lines.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # O_NOFOLLOW: a symlink planted at the path must not redirect the appends.
            self._fd = open_append(self.path)
        except OSError as exc:
            raise StorageError.writing(self.path, exc) from exc

    def __call__(self, event: Event) -> None:
        """Write ``event`` as one line: keys masked, provider error text reduced to its
        kind and status (:func:`mas.runtime.secrets.stored_event`)."""
        line = (stored_event(event).to_json() + "\n").encode("utf-8")
        with self._lock:
            try:
                os.write(self._fd, line)
            except OSError as exc:
                raise StorageError.writing(self.path, exc) from exc

    def close(self) -> None:
        """Close the file; later writes raise."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> JsonlEventSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stored_event(event: Event) -> Event:
    """``event`` as it may be stored: every string masked; on an ``*.exception`` event the
    ``reason`` reduced to type, kind and status and the ``stacktrace`` dropped, since a
    provider's message may quote the prompt (DESIGN.md §11, Boundaries). Any other
    event's ``reason`` that is a formatted exception (a ``degraded`` event counting a
    failed compaction) is reduced the same way; reasons in the project's own words stay."""
    data = dict(event.data)
    reason = data.get("reason")
    if event.name.endswith(".exception"):
        data.pop("stacktrace", None)
        if isinstance(reason, str):
            data["reason"] = reduce_message(reason)
    elif isinstance(reason, str) and is_exception_text(reason):
        data["reason"] = reduce_message(reason)
    return Event(event.name, mask_data(data), event.session_id, event.ts)
