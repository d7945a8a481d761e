"""The archive: what left the request, kept searchable for recall (DESIGN §11, §13).

Folded, dropped and cut messages leave the request, but not the session: the *original*
of each is stored under its absolute position, in SQLite (``archive.sqlite`` in the run
folder; in memory for a session without one). A context manager with an archive
attached stores what it folds; the session stores what the final trim cuts
(``stats()["cut"]``). The opt-in ``recall_context`` tool searches it (:meth:`Archive.search`).

Search works on *lines*: each message's text is indexed line by line under SQLite FTS5
with the Porter stemmer over ``unicode61`` (``excited``, ``excit`` and ``exciting`` meet),
ranked by bm25; what comes back is chosen by :mod:`mas.runtime.context.recalled`.

Retention is bounded: at most ``max_messages`` messages and ``max_bytes`` of message
JSON; past either, the oldest are evicted and counted (``stats()["evicted"]``).
Positions already stored are not stored again, so a resumed session re-folding the same
range, or a request cutting what the one before cut, writes nothing twice; nor are
positions older than the last eviction (they would only be evicted again). An archive
written before line indexing is re-indexed once when opened.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from itertools import chain, zip_longest
from pathlib import Path
from typing import Any

from mas.runtime.context.archive_query import is_word, phrase, questions, terms, variants
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR, TokenEstimator
from mas.runtime.context.recalled import Recalled, Selection
from mas.runtime.errors import StorageError
from mas.runtime.protocols import Message

DEFAULT_MAX_MESSAGES = 20_000
"""Messages an archive keeps at most (the oldest go first)."""

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""Bytes of message JSON an archive keeps at most."""

LINE_SLOTS = 1 << 16
"""Lines indexed per message (a line's row id is ``position * LINE_SLOTS + line``); the
lines past the last slot are indexed as part of the last one."""

RANKED_PER_QUESTION = 60
"""Ranked lines read per question before the budget picks among them."""

_SCHEMA = """
create table if not exists messages (
    position integer primary key,
    role text not null,
    body text not null,
    bytes integer not null
);
create virtual table if not exists lines using fts5(text, tokenize='porter unicode61');
create table if not exists meta (key text primary key, value integer not null);
create virtual table if not exists temp.query_words using fts5(word, tokenize='porter unicode61');
create virtual table if not exists temp.query_stems using fts5vocab(query_words, instance);
"""
# The per-message index of archives written before line indexing (re-indexed on open).
_OLD_INDEX = "message_text"


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


def message_lines(message: Message) -> list[str]:
    """The non-blank lines of :func:`message_text`, as indexed (at most :data:`LINE_SLOTS`)."""
    lines = [line.strip() for line in message_text(message).splitlines() if line.strip()]
    if len(lines) > LINE_SLOTS:
        lines[LINE_SLOTS - 1:] = ["\n".join(lines[LINE_SLOTS - 1:])]
    return lines


class Archive:
    """Messages that left the request in one session, searchable and bounded.

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
            self._reindex_old()
        except sqlite3.Error as exc:
            raise StorageError.writing(self.path, exc) from exc

    def _reindex_old(self) -> None:
        old = self._db.execute(
            "select 1 from sqlite_master where name = ?", (_OLD_INDEX,)).fetchone()
        if old is None:
            return
        self._db.execute("begin")
        self._db.execute(f"drop table {_OLD_INDEX}")
        for position, body in self._db.execute("select position, body from messages").fetchall():
            self._index(position, json.loads(body))
        self._db.execute("commit")

    def _index(self, position: int, message: Message) -> None:
        self._db.executemany(
            "insert into lines (rowid, text) values (?, ?)",
            [(position * LINE_SLOTS + n, line) for n, line in enumerate(message_lines(message))],
        )

    def add(self, start: int, messages: list[Message], *, cut: bool = False) -> int:
        """Store ``messages`` at absolute positions ``start``, ``start + 1``, ...

        :param cut: the final trim cut them (counted in ``stats()["cut"]``).
        :return: how many were new (positions already stored are skipped).
        """
        stop = start + len(messages)
        with self._lock:
            row = self._db.execute("select value from meta where key = 'horizon'").fetchone()
            # Older than what eviction removed: storing it again would only evict it again.
            start_new = max(start, row[0] if row else start)
            stored, = self._db.execute(
                "select count(*) from messages where position >= ? and position < ?",
                (start_new, stop)).fetchone()
            if stored >= stop - start_new:
                return 0  # the common case: a range cut again on the next request
            known = {p for (p,) in self._db.execute(
                "select position from messages where position >= ? and position < ?",
                (start_new, stop))}
            # Only the new ones are encoded: a session re-archives the same cut range on
            # every request that cuts it.
            fresh = []
            for position, message in enumerate(messages, start):
                if position >= start_new and position not in known:
                    body = json.dumps(message, ensure_ascii=False, default=str)
                    fresh.append((position, str(message.get("role", "")), body,
                                  len(body.encode("utf-8")), message))
            if not fresh:
                return 0
            try:
                self._db.execute("begin")
                self._db.executemany(
                    "insert into messages values (?, ?, ?, ?)", [r[:4] for r in fresh]
                )
                for row in fresh:
                    self._index(row[0], row[4])
                if cut:
                    self._count("cut", len(fresh))
                self._evict()
                self._db.execute("commit")
            except sqlite3.Error as exc:  # a full disk, a read-only folder: name the file
                if self._db.in_transaction:
                    self._db.execute("rollback")
                raise StorageError.writing(self.path, exc) from exc
        return len(fresh)

    def _count(self, key: str, value: int) -> None:
        self._db.execute(
            "insert into meta values (?, ?) "
            "on conflict(key) do update set value = value + excluded.value",
            (key, value),
        )

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
            self._db.execute("delete from lines where rowid < ?", ((last + 1) * LINE_SLOTS,))
            count -= len(oldest)
            size -= sum(b for _, b in oldest)
            evicted += len(oldest)
        if evicted:
            self._count("evicted", evicted)
            self._db.execute(
                "insert into meta values ('horizon', ?) "
                "on conflict(key) do update set value = max(value, excluded.value)",
                (last + 1,))

    def search(self, query: str, *, max_tokens: int) -> Recalled:
        """The lines that best match ``query``, with their context, within ``max_tokens``.

        ``query`` may hold several questions separated by ``;`` or new lines
        (:func:`~mas.runtime.context.archive_query.questions`); each is ranked on its
        own and their best lines are taken in turn. A question's terms match any of
        them (words through their stems, codes such as ``ORD-7781`` as phrases).
        """
        asked = [terms(q) for q in questions(query)]
        asked = [t for t in asked if t]
        if not asked or max_tokens <= 0:
            return Recalled()
        with self._lock:
            stems = self._stems(sorted({v for t in asked for term in t for v in variants(term)}))
            ranked = [self._ranked(_match(t, stems)) for t in asked]
        selection = Selection(max_tokens, self.estimator, self.lines_of)
        seen: set[int] = set()
        for rowid in chain.from_iterable(zip_longest(*ranked)):
            if rowid is None or rowid in seen:
                continue
            seen.add(rowid)
            selection.offer(*divmod(rowid, LINE_SLOTS))
            if selection.left <= 0:
                break
        return selection.finish(len(asked), sum(len(t) for t in asked))

    def _stems(self, words: list[str]) -> dict[str, str]:
        """Each word as the Porter stemmer indexes it (SQLite's own tokenizer, so a
        variant and a conversation word meet exactly when FTS5 would match them)."""
        self._db.execute("delete from query_words")
        self._db.executemany("insert into query_words (rowid, word) values (?, ?)",
                             list(enumerate(words)))
        found = {words[doc]: term for doc, term in self._db.execute(
            "select doc, term from query_stems")}
        self._db.execute("delete from query_words")
        return found

    def _ranked(self, match: str) -> list[int]:
        if not match:
            return []
        return [rowid for (rowid,) in self._db.execute(
            "select rowid from lines where lines match ? order by bm25(lines) limit ?",
            (match, RANKED_PER_QUESTION),
        )]

    def lines_of(self, position: int) -> tuple[str, list[str]] | None:
        """Role and lines of the archived message at ``position`` (``None``: not
        archived), as the search ranks and returns them."""
        with self._lock:
            row = self._db.execute(
                "select role, body from messages where position = ?", (position,)).fetchone()
        return (row[0], message_lines(json.loads(row[1]))) if row is not None else None

    def holds_messages(self) -> bool:
        """Whether any message is archived (one indexed lookup, not a count)."""
        with self._lock:
            row = self._db.execute("select exists(select 1 from messages)").fetchone()
        return bool(row[0])

    def stats(self) -> dict[str, Any]:
        """``messages``, ``bytes``, ``first`` and ``last`` position, ``evicted`` so far, and
        ``cut``: messages archived because the final trim cut them."""
        with self._lock:
            count, size, first, last = self._db.execute(
                "select count(*), coalesce(sum(bytes), 0), min(position), max(position) "
                "from messages"
            ).fetchone()
            meta = dict(self._db.execute("select key, value from meta").fetchall())
        return {"messages": count, "bytes": size, "first": first, "last": last,
                "evicted": meta.get("evicted", 0), "cut": meta.get("cut", 0)}

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()


def _match(asked: list[str], stems: dict[str, str]) -> str:
    """One question's FTS5 match: any of its terms, each stem searched once."""
    seen: set[str] = set()
    phrases = []
    for term in asked:
        for variant in variants(term):
            stem = stems.get(variant) if is_word(term) else variant
            if stem is None or stem in seen:
                continue
            seen.add(stem)
            phrases.append(phrase(variant))
    return " OR ".join(phrases)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_MESSAGES",
    "LINE_SLOTS",
    "Archive",
    "message_lines",
    "message_text",
]
