"""A simulated provider prefix cache, so offline runs show cache rates and cached cost.

Providers bill the longest prefix a request shares with recent requests at the cached
rate. This keeps, per conversation, its last few requests; a new request's cached tokens
are, against the best of them: nothing if the tool schemas differ (they come first);
otherwise the tool schemas, every leading message that is identical (counted with the
kernel's estimator), and the common character prefix of the first differing message's
text divided by characters per token. The result is capped at the prompt tokens.

A conversation is identified by the engine that sent it (its session id and per-engine
trace id), the model and the first message (the system prompt). Keying by engine is a
deliberate departure from a real provider, where two sessions sending the same system
prompt share a prefix: sessions run concurrently, so a shared cache would make each
session's hit rate depend on how the threads interleaved, and an earlier run in the same
process would warm the next one. Per engine, requests arrive in order and the rates are a
function of the inputs alone. Memory is bounded (least recently used first).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from typing import Any

from mas.library.standard.offline._text import content_text
from mas.runtime.context.estimate import DEFAULT_ESTIMATOR
from mas.runtime.protocols import Message

Snapshot = tuple[str, tuple[tuple[str, str, int], ...]]
"""A remembered request: tools JSON, and per message (JSON, text, estimated tokens)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def snapshot(messages: list[Message], tools: list[dict[str, Any]] | None) -> Snapshot:
    """What the cache remembers of a request (a copy: later edits of the list don't leak)."""
    rows = tuple(
        (_dumps(m), content_text(m.get("content")), DEFAULT_ESTIMATOR.message(m))
        for m in messages
    )
    return _dumps(tools or []), rows


def shared_tokens(new: Snapshot, old: Snapshot) -> int:
    """Estimated tokens of the longest prefix two requests share."""
    if new[0] != old[0]:
        return 0
    tokens = DEFAULT_ESTIMATOR.tools(json.loads(new[0]))
    for (json_a, text_a, size), (json_b, text_b, _) in zip(new[1], old[1], strict=False):
        if json_a == json_b:
            tokens += size
            continue
        common = len(os.path.commonprefix([text_a, text_b]))
        return tokens + common // DEFAULT_ESTIMATOR.chars_per_token
    return tokens


def conversation_key(model: str, messages: list[Message], session: str = "") -> str:
    """Which cache a request probes: its session, its model and its first message."""
    first = _dumps(messages[:1])
    return hashlib.sha256(f"{session}\x1f{model}\x1f{first}".encode()).hexdigest()


class PrefixCache:
    """Recent requests per conversation and the cached-token count of a new one.

    :param per_conversation: requests remembered per conversation.
    :param conversations: conversations remembered in all.
    """

    def __init__(self, per_conversation: int = 4, conversations: int = 256) -> None:
        self.per_conversation = per_conversation
        self.conversations = conversations
        self._seen: OrderedDict[str, list[Snapshot]] = OrderedDict()
        self._lock = threading.Lock()

    def probe(self, model: str, messages: list[Message], tools: list[dict[str, Any]] | None,
              prompt_tokens: int, session: str = "") -> int:
        """Cached tokens of this request; then remember it for later requests.

        :param session: the sending session's id; requests of other sessions never count.
        """
        new = snapshot(messages, tools)
        key = conversation_key(model, messages, session)
        with self._lock:
            earlier = self._seen.pop(key, [])
            shared = max((shared_tokens(new, old) for old in earlier), default=0)
            earlier = [*earlier, new][-self.per_conversation:]
            self._seen[key] = earlier
            while len(self._seen) > self.conversations:
                self._seen.popitem(last=False)
        return min(prompt_tokens, shared)

    def clear(self) -> None:
        """Forget every conversation (a cold provider cache)."""
        with self._lock:
            self._seen.clear()
