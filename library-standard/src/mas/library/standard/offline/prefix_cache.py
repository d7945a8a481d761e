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
run in the process from warming a later one. Nothing is written by this module: the
session stores the export in its own folder.

**The export is content-addressed**, so that the session's journal, which stores only the
entries that changed since its previous line, writes what a turn added and not the
remembered requests again (each holds the whole window). A remembered request is a tree:
its messages (*rows*, keyed by a digest of their content) cut into runs wherever a row's
key falls on a boundary (one in :data:`FANOUT`), each run a node keyed by the digest of its
children's keys, and those nodes cut the same way, up to one root. Where a run is cut
depends only on the rows in it, so two requests that share a run of messages anywhere
(the prefix a turn extends, the middle a sliding window keeps) share its nodes, and an
unchanged node keeps its key from save to save: a turn that appends messages, or drops
some at the front, or edits one in the middle, adds its new rows and about one node per
level (logarithmic in the window). Each conversation's own entry is small: its requests as
tool digest, tool tokens, root and length, and the conversation before it in recency.
The keys are computed once per request, when it is remembered.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from itertools import chain
from typing import Any, NamedTuple

from mas.library.standard.offline._text import content_text
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR
from mas.runtime.protocols import Message

log = logging.getLogger(__name__)

EXPORT_VERSION = 2
"""Format of :meth:`PrefixCache.export`; another version is ignored on restore (cold)."""

FANOUT = 8
"""Expected children of a node of an exported request (see the module docstring)."""

ROW, NODE, CONVERSATION = "r/", "n/", "c/"
"""Key prefixes of an export's entries: a message, a node of a request, a conversation."""

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
    keys: tuple[str, ...] = ()
    """Per message, its key in an export (a digest of the row)."""
    root: str | None = None
    """The key of the request's root node in an export (``None``: no messages)."""
    nodes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The request's nodes in an export: key and children's keys, the root last."""


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
    return _keyed(_digest(_dumps(tools or [])), DEFAULT_ESTIMATOR.tools(tools), rows)


def _keyed(tools: str, tool_tokens: int, rows: tuple[Row, ...]) -> Snapshot:
    """The snapshot of these rows with its export keys (a function of the rows alone)."""
    keys = tuple(ROW + _digest(f"{digest}\x1f{tokens}\x1f{text}") for digest, text, tokens in rows)
    nodes: list[tuple[str, tuple[str, ...]]] = []
    level = list(keys)
    while level:
        runs = list(_runs(level))
        if len(runs) == len(level) > 1:
            runs = [tuple(level)]  # no run got longer than one: one node, so levels shrink
        level = []
        for children in runs:
            nodes.append((NODE + _digest("\x1f".join(children)), children))
            level.append(nodes[-1][0])
        if len(level) == 1:
            break
    return Snapshot(tools, tool_tokens, rows, keys, nodes[-1][0] if nodes else None,
                    tuple(nodes))


def _runs(keys: list[str]) -> Iterator[tuple[str, ...]]:
    """``keys`` cut after each key on a boundary: where depends on the keys alone."""
    start = 0
    for end, key in enumerate(keys, 1):
        if int(key[-4:], 16) % FANOUT == 0:
            yield tuple(keys[start:end])
            start = end
    if start < len(keys):
        yield tuple(keys[start:])


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

        Independent entries, content-addressed (see the module docstring), so a saver
        that stores only the entries that changed stores what the last turn added: its
        new messages (``r/<key>``: digest of the message JSON, text, tokens), its new
        nodes (``n/<key>``: the children's keys) and the small entry of its conversation
        (``c/<conversation>``: the conversation before it in recency, least recently used
        first, and its requests as tools digest, tool tokens, root key and length). An
        entry no remembered request uses any more is left out. Message JSON is kept only
        as digests, since only its equality counts.
        """
        with self._lock:
            mine = [(key[1], list(snaps)) for key, snaps in self._seen.items()
                    if key[0] == session]
        if not mine:
            return None
        entries: dict[str, Any] = {}
        after = None
        for conversation, snaps in mine:
            for snap in snaps:
                if snap.root is None or snap.root in entries:
                    continue  # no messages, or the same request twice
                for key, row in zip(snap.keys, snap.rows, strict=True):
                    entries.setdefault(key, list(row))
                for key, children in snap.nodes:
                    entries.setdefault(key, list(children))
            entries[CONVERSATION + conversation] = {
                "version": EXPORT_VERSION, "after": after,
                "requests": [[snap.tools, snap.tool_tokens, snap.root, len(snap.rows)]
                             for snap in snaps]}
            after = CONVERSATION + conversation
        return entries

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


def _parse(state: dict[str, Any]) -> list[tuple[str, list[Snapshot]]]:
    """The conversations of an export, least recently used first; raises on anything not
    in its shape (and on a key that is not its content's digest)."""
    conversations: dict[str, dict[str, Any]] = {}
    children: dict[str, list[str]] = {}
    rows: dict[str, Row] = {}
    for key, entry in state.items():
        if isinstance(entry, dict) and entry.get("version") != EXPORT_VERSION:
            raise ValueError(f"format version {entry.get('version')!r}, "
                             f"expected {EXPORT_VERSION}")
        if key.startswith(CONVERSATION) and isinstance(entry, dict):
            conversations[key] = entry
        elif key.startswith(NODE) and isinstance(entry, list):
            children[key] = [str(child) for child in entry]
        elif key.startswith(ROW) and isinstance(entry, list):
            digest, text, tokens = entry
            rows[key] = (str(digest), str(text), int(tokens))
        else:
            raise ValueError(f"unexpected entry {key[:40]!r}")
    expanded: dict[str, tuple[Row, ...]] = {}

    def expand(key: str, depth: int = 0) -> tuple[Row, ...]:
        if key in rows:
            return (rows[key],)
        if key not in expanded:
            if depth > 64:
                raise ValueError("nodes nested too deep")
            expanded[key] = tuple(chain.from_iterable(expand(child, depth + 1)
                                                      for child in children[key]))
        return expanded[key]

    restored = []
    for key in _recency(conversations):
        snaps = []
        for tools, tool_tokens, root, length in conversations[key]["requests"]:
            snap = _keyed(str(tools), int(tool_tokens), expand(str(root)) if root else ())
            if snap.root != root or len(snap.rows) != int(length):
                raise ValueError(f"a request of {key[:40]!r} does not match its key")
            snaps.append(snap)
        restored.append((key[len(CONVERSATION):], snaps))
    return restored


def _recency(conversations: dict[str, dict[str, Any]]) -> list[str]:
    """The conversations' keys in the order their ``after`` links give."""
    following: dict[Any, str] = {}
    for key, entry in conversations.items():
        after = entry["after"]
        if after in following or (after is not None and after not in conversations):
            raise ValueError(f"conversation {key[:40]!r} follows {str(after)[:40]!r}")
        following[after] = key
    order: list[str] = []
    while (after := order[-1] if order else None) in following:
        order.append(following[after])
    if len(order) != len(conversations):
        raise ValueError("conversations out of order")
    return order
