"""Token estimates: characters / 4 plus fixed overheads (spec 003, "Safety Margin").

This is a heuristic, not a provider tokenizer, and deliberately cheap. Plain prose runs
about four characters per token, but JSON, code, identifiers and non-Latin text run
denser: every UTF-8 byte that is not an ASCII letter, digit or space therefore counts as
one extra character. On JSON tool results that moves the median error against
``litellm.token_counter`` from a 25 % under-count to under 10 %, and leaves prose within
about 5 % (benchmarks/RESULTS.md). Provider-reported ``prompt_tokens`` is the better
measurement and is recorded separately after each call.

Per-message estimates are cached by :class:`~mas.runtime.context.history.History` (one
int per committed message), so a turn only estimates the messages it adds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from mas.runtime.context.identity_memo import IdentityMemo
from mas.runtime.protocols import Message

CHARS_PER_TOKEN = 4
"""Characters per estimated token."""

_SPARSE_BYTES = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
"""Bytes that count once; every other UTF-8 byte of a text counts as an extra character."""

MESSAGE_OVERHEAD = 4
"""Tokens charged per message for role and framing."""

TOOL_CALL_OVERHEAD = 0
"""Tokens charged per entry of an assistant's ``tool_calls`` beyond its name and arguments."""

TOOL_SCHEMA_OVERHEAD = 8
"""Tokens charged per function schema in the request's ``tools``."""

IMAGE_TOKENS = 765
"""Tokens charged per image part (a high-detail 512-pixel-tile image on OpenAI models)."""

MEMO_MIN_CHARS = 2_048
"""Texts this long or longer have their weight remembered (:func:`weight`)."""

MEMO_SIZE = 64
"""Long texts whose weight is remembered at once (then the memo starts afresh)."""

MESSAGE_MEMO_SIZE = 64
"""Messages whose estimate is remembered at once (:func:`message_tokens`)."""

_weights: IdentityMemo[int] = IdentityMemo(MEMO_SIZE)
_messages: IdentityMemo[int] = IdentityMemo(MESSAGE_MEMO_SIZE)


def weight(text: str) -> int:
    """``len(text)`` plus its dense bytes: what :meth:`TokenEstimator.text` divides.

    A tool result in flight is estimated on every request of its turn, twice (its fixed
    cost, the final trim) and once more when it is committed; encoding 60,000 characters
    each time was most of a sliding-window turn (issue 22). So the weight of a long text
    is remembered by the string object itself (a ``str`` cannot change).
    """
    size = len(text)
    if size < MEMO_MIN_CHARS:
        return size + len(text.encode("utf-8").translate(None, _SPARSE_BYTES))
    found = _weights.get(text)
    if found is not None:
        return found
    return _weights.put(text, size + len(text.encode("utf-8").translate(None, _SPARSE_BYTES)))


@dataclass(frozen=True)
class TokenEstimator:
    """Estimates tokens of text, messages and tool schemas.

    The constants are fields so a caller can calibrate them against provider usage.
    """

    chars_per_token: int = CHARS_PER_TOKEN
    message_overhead: int = MESSAGE_OVERHEAD
    tool_call_overhead: int = TOOL_CALL_OVERHEAD
    tool_schema_overhead: int = TOOL_SCHEMA_OVERHEAD
    image_tokens: int = IMAGE_TOKENS

    def text(self, text: str) -> int:
        """Tokens of a string: ``ceil((len + dense bytes) / chars_per_token)``."""
        if not text:
            return 0
        return math.ceil(weight(text) / self.chars_per_token)

    def chars_for(self, tokens: int, like: str | None = None) -> int:
        """How many characters fit in ``tokens`` (the inverse of :meth:`text`).

        :param like: the text being cut: its own density is used, so a cut of dense JSON
            keeps fewer characters than a cut of prose. Without it, prose is assumed.
        """
        chars = max(0, tokens) * self.chars_per_token
        if like:
            chars = chars * len(like) // weight(like)
        return chars

    def content(self, content: Any) -> int:
        """Tokens of a message ``content``: a string, a list of parts, or anything JSON."""
        if content is None:
            return 0
        if isinstance(content, str):
            return self.text(content)
        if isinstance(content, list):
            return sum(self._part(part) for part in content)
        return self.text(_dumps(content))

    def _part(self, part: Any) -> int:
        if isinstance(part, dict):
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("text"), str):
                return self.text(part["text"])
            if kind in ("image_url", "image", "input_image"):
                return self.image_tokens
        if isinstance(part, str):
            return self.text(part)
        return self.text(_dumps(part))

    def message(self, message: Message) -> int:
        """Tokens of one chat message: overhead, content, name, tool calls and call id."""
        content = message.get("content")
        # A string is most contents: estimated here, without the call through content().
        tokens = self.message_overhead + (
            self.text(content) if isinstance(content, str) else self.content(content))
        name = message.get("name")
        if isinstance(name, str):
            tokens += self.text(name)
        call_id = message.get("tool_call_id")
        if isinstance(call_id, str):
            tokens += self.text(call_id)
        calls = message.get("tool_calls")
        if calls:
            for call in calls:
                tokens += self.tool_call_overhead + self._call(call)
        return tokens

    def _call(self, call: Any) -> int:
        if not isinstance(call, dict):
            return self.text(_dumps(call))
        function = call.get("function") or {}
        if not isinstance(function, dict):
            return self.text(_dumps(call))
        arguments = function.get("arguments")
        args = arguments if isinstance(arguments, str) else _dumps(arguments or {})
        # The call id is not counted: tokenizers render a call as its name and arguments.
        return self.text(str(function.get("name") or "")) + self.text(args)

    def messages(self, messages: Iterable[Message]) -> int:
        """Sum of :meth:`message` over ``messages``."""
        return sum(self.message(m) for m in messages)

    def tools(self, tools: Iterable[dict[str, Any]] | None) -> int:
        """Tokens of the request's ``tools`` field: each schema as JSON plus overhead."""
        if not tools:
            return 0
        return sum(self.tool_schema_overhead + self.text(_dumps(tool)) for tool in tools)


def message_tokens(estimator: TokenEstimator, message: Message) -> int:
    """``estimator.message(message)``, remembered for the messages of the turn in flight.

    The current user message and each in-flight tool call and result are estimated on
    every request of their turn and once more when the turn is committed. The estimator,
    the content and the tool calls are the memo's witnesses: a message given another
    content or other tool calls (not equal ones) is estimated afresh. Like the estimates
    a :class:`~mas.runtime.context.History` keeps, it takes a sent message's content and
    tool calls as settled: they are not edited in place.
    """
    content, calls = message.get("content"), message.get("tool_calls")
    found = _messages.get(message, estimator, content, calls)
    if found is not None:
        return found
    return _messages.put(message, estimator.message(message), estimator, content, calls)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


DEFAULT_ESTIMATOR = TokenEstimator()
"""The estimator used when a caller does not pass its own."""
