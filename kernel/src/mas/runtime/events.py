"""Runtime events: what happened, as numbers and metadata, never prompt text.

Names in use: ``context.assembled``, ``compaction.start``, ``compaction.stop``,
``compaction.exception``, ``llm.call``, ``cache.lookup``, ``session.turn``, ``warning``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Event:
    """One runtime event.

    :ivar name: dotted event name such as ``compaction.stop``.
    :ivar data: JSON-serializable numbers and metadata.
    :ivar session_id: the session it belongs to (empty outside a session).
    :ivar ts: wall-clock seconds since the epoch.
    """

    name: str
    data: dict[str, Any] = field(default_factory=dict)
    session_id: str = ""
    ts: float = field(default_factory=time.time)

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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def __call__(self, event: Event) -> None:
        """Write ``event`` as one line."""
        line = (event.to_json() + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, line)

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
