"""The archive: what a context manager folded, kept searchable for recall (DESIGN §11).

Folded messages leave the request, but not the session: a context manager with an
archive attached stores the *original* of every message it folds, under its absolute
position, in SQLite (``archive.sqlite`` in the run folder; in memory for a session
without one). The opt-in ``recall_context`` tool searches it by text or identifier
(SQLite FTS5, ranked by bm25) and returns the best messages within a token cap.

Retention is bounded: at most ``max_messages`` messages and ``max_bytes`` of message
JSON; past either, the oldest are evicted and counted (``stats()["evicted"]``).
Positions already stored are not stored again, so a resumed session re-folding the same
range writes nothing twice.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

from mas.runtime.context.estimate import DEFAULT_ESTIMATOR, TokenEstimator
from mas.runtime.context.shorten import shorten_middle
from mas.runtime.errors import StorageError
from mas.runtime.protocols import Message

DEFAULT_MAX_MESSAGES = 20_000
"""Messages an archive keeps at most (the oldest go first)."""

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""Bytes of message JSON an archive keeps at most."""

MAX_QUERY_TERMS = 12
"""Terms of a recall query that are searched (the rest are ignored)."""

_TERM = re.compile(r"[A-Za-z0-9][\w.@/$€%-]*[A-Za-z0-9%]|[A-Za-z0-9]")
_SCHEMA = """
create table if not exists messages (
    position integer primary key,
    role text not null,
    body text not null,
    bytes integer not null
);
create virtual table if not exists message_text using fts5(text, tokenize='unicode61');
create table if not exists meta (key text primary key, value integer not null);
"""


def message_text(message: Message) -> str:
    """The searchable text of a message: its content and its tool-call arguments."""
    parts = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        parts.extend(str(p.get("text")) for p in content if isinstance(p, dict) and p.get("text"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            parts.append(f"{function.get('name', '')} {function.get('arguments', '')}")
    return "\n".join(parts)


class Archive:
    """Folded messages of one session, searchable and bounded.

    :param path: the SQLite file, or ``":memory:"``.
    :param max_messages: messages kept at most.
    :param max_bytes: bytes of message JSON kept at most.
    """

    def __init__(
        self,
        path: Path | str = ":memory:",
        *,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        estimator: TokenEstimator = DEFAULT_ESTIMATOR,
    ) -> None:
        self.path = str(path)
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self.estimator = estimator
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise StorageError.writing(self.path, exc) from exc

    def add(self, start: int, messages: list[Message]) -> int:
        """Store ``messages`` at absolute positions ``start``, ``start + 1``, ...

        :return: how many were new (positions already stored are skipped).
        """
        rows = []
        for offset, message in enumerate(messages):
            body = json.dumps(message, ensure_ascii=False, default=str)
            rows.append((start + offset, str(message.get("role", "")), body,
                         len(body.encode("utf-8")), message_text(message)))
        with self._lock:
            known = {
                p for (p,) in self._db.execute(
                    "select position from messages where position between ? and ?",
                    (start, start + len(messages)),
                )
            }
            fresh = [r for r in rows if r[0] not in known]
            if not fresh:
                return 0
            try:
                self._db.execute("begin")
                self._db.executemany(
                    "insert into messages values (?, ?, ?, ?)", [r[:4] for r in fresh]
                )
                self._db.executemany(
                    "insert into message_text (rowid, text) values (?, ?)",
                    [(r[0], r[4]) for r in fresh],
                )
                self._evict()
                self._db.execute("commit")
            except sqlite3.Error as exc:  # a full disk, a read-only folder: name the file
                if self._db.in_transaction:
                    self._db.execute("rollback")
                raise StorageError.writing(self.path, exc) from exc
        return len(fresh)

    def _evict(self) -> None:
        count, size = self._db.execute(
            "select count(*), coalesce(sum(bytes), 0) from messages"
        ).fetchone()
        evicted = 0
        while count > self.max_messages or size > self.max_bytes:
            over = max(count - self.max_messages, 1)
            oldest = self._db.execute(
                "select position, bytes from messages order by position limit ?", (over,)
            ).fetchall()
            if not oldest:
                break
            last = oldest[-1][0]
            self._db.execute("delete from messages where position <= ?", (last,))
            self._db.execute("delete from message_text where rowid <= ?", (last,))
            count -= len(oldest)
            size -= sum(b for _, b in oldest)
            evicted += len(oldest)
        if evicted:
            self._db.execute(
                "insert into meta values ('evicted', ?) "
                "on conflict(key) do update set value = value + excluded.value",
                (evicted,),
            )

    def search(self, query: str, *, max_tokens: int) -> list[tuple[int, Message]]:
        """The best-matching archived messages for ``query``, within ``max_tokens``.

        Terms (words, codes such as ``ORD-7781``, amounts) are matched as phrases, any of
        them; messages are ranked by bm25 and returned in conversation order. A message
        larger than the cap alone is shortened in the middle.
        """
        terms = list(dict.fromkeys(_TERM.findall(query)))[:MAX_QUERY_TERMS]
        if not terms or max_tokens <= 0:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        with self._lock:
            ranked = self._db.execute(
                "select m.position, m.body from message_text t join messages m "
                "on m.position = t.rowid where message_text match ? "
                "order by bm25(message_text) limit 50",
                (match,),
            ).fetchall()
        chosen: list[tuple[int, Message]] = []
        used = 0
        for position, body in ranked:
            message = json.loads(body)
            cost = self.estimator.message(message)
            if cost > max_tokens and not chosen:
                text = message_text(message)
                keep = self.estimator.chars_for(max_tokens // 2, like=text)
                message = {"role": message.get("role"), "content": shorten_middle(text, keep)}
                cost = self.estimator.message(message)
            if used + cost > max_tokens:
                continue
            chosen.append((position, message))
            used += cost
        return sorted(chosen, key=lambda pair: pair[0])

    def stats(self) -> dict[str, Any]:
        """``messages``, ``bytes``, ``first`` and ``last`` position, ``evicted`` so far."""
        with self._lock:
            count, size, first, last = self._db.execute(
                "select count(*), coalesce(sum(bytes), 0), min(position), max(position) "
                "from messages"
            ).fetchone()
            row = self._db.execute("select value from meta where key = 'evicted'").fetchone()
        return {"messages": count, "bytes": size, "first": first, "last": last,
                "evicted": row[0] if row else 0}

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()


__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_MESSAGES", "Archive", "message_text"]
