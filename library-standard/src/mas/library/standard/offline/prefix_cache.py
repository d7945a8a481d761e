"""A simulated provider prefix cache, so offline runs show cache rates and cached cost.

Providers bill the longest prefix a request shares with recent requests at the cached
rate. This keeps, per conversation, its last few requests; a new request's cached tokens
are, against the best of them: nothing if the tool schemas differ (they come first);
otherwise the tool schemas, every leading message that is identical (counted with the
kernel's estimator), and the common character prefix of the first differing message's
text divided by characters per token. The result is capped at the prompt tokens.

A conversation is identified by the engine that sent it (its *owner*: session id and
per-engine trace id), the model and the first message (the system prompt). Keying by
engine is a deliberate departure from a real provider, where two sessions sending the same
system prompt share a prefix: sessions run concurrently, so a shared cache would make each
session's hit rate depend on how the threads interleaved, and an earlier run in the same
process would warm the next one. Per engine, requests arrive in order and the rates are a
function of the inputs alone. Memory is bounded (least recently used first).

**Across a kill.** A real provider's cache lives on its side and outlives a client crash;
this one lives in the client's process. So that a resumed session sees what it would
have seen uninterrupted, an owner's conversations can be exported (:meth:`PrefixCache.export`)
and put back under another owner (:meth:`PrefixCache.restore`): the agent session saves
the export with every committed turn (``provider_state`` in ``session.json``) and restores
it into its new engine before its first call after a resume. What the interrupted turn
sent is therefore forgotten with the turn itself: the replayed turn gets exactly the hits
it gets in an uninterrupted run (a real provider would remember the lost attempt for a
few minutes and give the replay more). The export is keyed by conversation, not owner, so
the new engine's fresh trace id still keeps concurrent sessions apart and keeps an earlier
run in the process from warming a later one. The export has one entry per conversation
so that the session's journal can store only the entries a turn changed. Nothing is
written by this module: the session stores the export in its own folder.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from typing import Any, NamedTuple

from mas.library.standard.offline._text import content_text
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR
from mas.runtime.protocols import Message

log = logging.getLogger(__name__)

EXPORT_VERSION = 1
"""Format of :meth:`PrefixCache.export`; another version is ignored on restore (cold)."""

Row = tuple[str, str, int]
"""One message of a remembered request: digest of its JSON, its text, estimated tokens."""


class Snapshot(NamedTuple):
    """What the cache remembers of one request (digests where only equality matters)."""

    tools: str
    """Digest of the tools JSON."""
    tool_tokens: int
    """Estimated tokens of the tool schemas."""
    rows: tuple[Row, ...]
    """Per message: digest of its JSON, its text, its estimated tokens."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def snapshot(messages: list[Message], tools: list[dict[str, Any]] | None) -> Snapshot:
    """What the cache remembers of a request (a copy: later edits of the list don't leak)."""
    rows = tuple(
        (_digest(_dumps(m)), content_text(m.get("content")), DEFAULT_ESTIMATOR.message(m))
        for m in messages
    )
    return Snapshot(_digest(_dumps(tools or [])), DEFAULT_ESTIMATOR.tools(tools), rows)


def shared_tokens(new: Snapshot, old: Snapshot) -> int:
    """Estimated tokens of the longest prefix two requests share."""
    if new.tools != old.tools:
        return 0
    tokens = new.tool_tokens
    for (json_a, text_a, size), (json_b, text_b, _) in zip(new.rows, old.rows, strict=False):
        if json_a == json_b:
            tokens += size
            continue
        common = len(os.path.commonprefix([text_a, text_b]))
        return tokens + common // DEFAULT_ESTIMATOR.chars_per_token
    return tokens


def conversation_key(model: str, messages: list[Message]) -> str:
    """Which of an owner's conversations a request probes: its model and first message."""
    first = _dumps(messages[:1])
    return hashlib.sha256(f"{model}\x1f{first}".encode()).hexdigest()


class PrefixCache:
    """Recent requests per conversation and the cached-token count of a new one.

    :param per_conversation: requests remembered per conversation.
    :param conversations: conversations remembered in all.
    """

    def __init__(self, per_conversation: int = 4, conversations: int = 256) -> None:
        self.per_conversation = per_conversation
        self.conversations = conversations
        self._seen: OrderedDict[tuple[str, str], list[Snapshot]] = OrderedDict()
        self._lock = threading.Lock()

    def probe(self, model: str, messages: list[Message], tools: list[dict[str, Any]] | None,
              prompt_tokens: int, session: str = "") -> int:
        """Cached tokens of this request; then remember it for later requests.

        :param session: the sending engine (its owner string); requests of other owners
            never count.
        """
        new = snapshot(messages, tools)
        key = (session, conversation_key(model, messages))
        with self._lock:
            earlier = self._seen.pop(key, [])
            shared = max((shared_tokens(new, old) for old in earlier), default=0)
            self._seen[key] = [*earlier, new][-self.per_conversation:]
            self._evict()
        return min(prompt_tokens, shared)

    def export(self, session: str) -> dict[str, Any] | None:
        """The conversations of owner ``session`` as JSON-ready data (``None``: none).

        One independent entry per conversation, so a saver can store only the entries
        that changed (a turn touches one or two; a compaction that changes the first
        message leaves the old conversation as it was). Each entry holds its rank among
        the owner's conversations (least recently used first), its requests and their
        texts, each text once; message JSON is kept only as digests, since only its
        equality counts.
        """
        with self._lock:
            mine = [(key[1], list(snaps)) for key, snaps in self._seen.items()
                    if key[0] == session]
        if not mine:
            return None
        return {conversation: _entry(rank, snaps)
                for rank, (conversation, snaps) in enumerate(mine)}

    def restore(self, session: str, state: dict[str, Any] | None) -> None:
        """Make owner ``session``'s conversations exactly those of an :meth:`export`.

        What the owner held before is dropped (also with ``state`` ``None``). A state in
        another format is ignored with a warning: the owner starts cold, as after a
        provider restart, rather than the session failing.
        """
        try:
            restored = _parse(state) if state is not None else []
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
            log.warning("offline prefix cache: saved state not restored (%s); the resumed "
                        "session starts with a cold cache", exc)
            restored = []
        with self._lock:
            for key in [k for k in self._seen if k[0] == session]:
                del self._seen[key]
            for conversation, snaps in restored:
                self._seen[(session, conversation)] = snaps[-self.per_conversation:]
            self._evict()

    def clear(self) -> None:
        """Forget every conversation (a cold provider cache)."""
        with self._lock:
            self._seen.clear()

    def _evict(self) -> None:
        while len(self._seen) > self.conversations:
            self._seen.popitem(last=False)


def _entry(rank: int, snaps: list[Snapshot]) -> dict[str, Any]:
    texts: dict[str, int] = {}
    requests = [[snap.tools, snap.tool_tokens,
                 [[digest, texts.setdefault(text, len(texts)), tokens]
                  for digest, text, tokens in snap.rows]]
                for snap in snaps]
    return {"version": EXPORT_VERSION, "rank": rank, "texts": list(texts), "requests": requests}


def _parse(state: dict[str, Any]) -> list[tuple[str, list[Snapshot]]]:
    """The conversations of an export, least recently used first; raises on anything not
    in its shape."""
    conversations = []
    for conversation, entry in state.items():
        if entry.get("version") != EXPORT_VERSION:
            raise ValueError(f"format version {entry.get('version')!r}, "
                             f"expected {EXPORT_VERSION}")
        texts = [str(text) for text in entry["texts"]]
        snaps = [Snapshot(str(tools), int(tool_tokens),
                          tuple((str(digest), _text(texts, index), int(tokens))
                                for digest, index, tokens in rows))
                 for tools, tool_tokens, rows in entry["requests"]]
        conversations.append((int(entry["rank"]), str(conversation), snaps))
    return [(conversation, snaps) for _, conversation, snaps in sorted(conversations)]


def _text(texts: list[str], index: Any) -> str:
    position = int(index)
    if not 0 <= position < len(texts):
        raise IndexError(f"text {position} of {len(texts)}")
    return texts[position]
