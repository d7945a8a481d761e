"""The on-disk response cache: the ``infra_llm_cache`` layer.

The key is the SHA-256 of a canonical JSON of everything that decides the answer: the
model actually called, the exact messages, the tool schemas and every model parameter that
was set. Unset parameters are left out, so "not set" and "absent" are one key. The store is
one SQLite file in WAL mode with short transactions, so several processes can share it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mas.runtime.errors import ModelCallError, StorageError
from mas.runtime.protocols import Message, ModelReply, Usage

LAYER = "infra_llm_cache"
"""Name of this cache layer in events and in the ContextUsageView."""

PROVIDER_LAYER = "provider_cache"
"""The provider's own prompt-prefix cache, probed by every call that reaches the provider."""

_KEY_VERSION = "mas-response-cache/1"


class ResponseCacheMissError(ModelCallError):
    """A strict response cache had no answer for a request (offline replay went off-script)."""


def request_key(
    model: str,
    messages: list[Message],
    tools: list[dict[str, Any]] | None = None,
    params: Mapping[str, Any] | None = None,
) -> str:
    """The cache key of one request: hex SHA-256 of its canonical JSON.

    Dict key order does not matter (keys are sorted); list order does, because message and
    tool order change what the model sees. Parameters whose value is ``None`` are dropped.
    """
    document = {
        "v": _KEY_VERSION,
        "model": model,
        "messages": messages,
        "tools": tools or [],
        "params": {k: v for k, v in (params or {}).items() if v is not None},
    }
    canonical = json.dumps(
        document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _encode(reply: ModelReply) -> str:
    usage = reply.usage
    record: dict[str, Any] = {
        "text": reply.text,
        "tool_calls": reply.tool_calls,
        "model": reply.model,
        "usage": None if usage is None else [
            usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens
        ],
    }
    if reply.cut_chars:
        # A reply to a request cut to fit the window stays marked when replayed (a judge
        # vote stays truncated); uncut replies are stored as before.
        record["cut_chars"] = reply.cut_chars
    return json.dumps(record, sort_keys=True)


def _decode(value: str) -> ModelReply:
    record = json.loads(value)
    usage = record.get("usage")
    return ModelReply(
        text=record["text"],
        tool_calls=record.get("tool_calls") or [],
        usage=Usage(*usage) if usage else None,
        model=record.get("model", ""),
        cost=0.0,
        cache_hit=True,
        cut_chars=int(record.get("cut_chars") or 0),
    )


_BUSY_SECONDS = 30.0
"""How long an open, a lookup or a store waits for another connection's lock."""


def _set_up(db: sqlite3.Connection) -> None:
    """Put the file in WAL mode and create the table, waiting out other openers.

    Switching the journal mode takes an exclusive lock, and SQLite reports a concurrent
    switch as "database is locked" at once, without its busy handler: sessions that start
    together on a new file (threads of the local runner, the Ray keeper) would each fail.
    So the switch is skipped when the file is already in WAL mode and retried for as long as
    the busy timeout otherwise.
    """
    deadline = time.monotonic() + _BUSY_SECONDS
    pause = 0.005
    while True:
        try:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                " key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
            )
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


class ResponseCache:
    """Replies by request key in one SQLite file.

    :param path: the SQLite file; parent folders are created.
    :param strict: a miss is an error (:class:`ResponseCacheMissError`) instead of a call.
    """

    def __init__(self, path: str | Path, *, strict: bool = False) -> None:
        self.path = Path(path)
        self.strict = strict
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(
                self.path, timeout=_BUSY_SECONDS, isolation_level=None, check_same_thread=False
            )
            _set_up(self._db)
        except sqlite3.Error as exc:  # not a database, a full disk, a read-only folder
            raise StorageError(
                f"{self.path}: cannot open the response cache ({exc}); free disk space, "
                "fix infra cache.path, or turn the cache off (infra cache.enabled: false)"
            ) from exc

    def get(self, key: str) -> ModelReply | None:
        """The stored reply for ``key`` (marked ``cache_hit``, cost 0), or ``None``."""
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM responses WHERE key = ?", (key,)
            ).fetchone()
        return _decode(row[0]) if row is not None else None

    def put(self, key: str, reply: ModelReply) -> None:
        """Store ``reply`` under ``key`` (replacing an older one) in one short transaction."""
        with self._lock:
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO responses (key, value, created) VALUES (?, ?, ?)",
                    (key, _encode(reply), time.time()),
                )
            except sqlite3.Error as exc:  # "database or disk is full", a read-only file
                raise StorageError(
                    f"{self.path}: the response cache cannot store a reply ({exc}); free disk "
                    "space or turn the cache off (infra cache.enabled: false)"
                ) from exc

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close the connection; the file stays."""
        with self._lock:
            self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
