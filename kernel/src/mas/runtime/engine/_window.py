"""A request the provider found too long: read its numbers, and cut the request to fit.

LiteLLM maps every provider's "context length exceeded" answer to
``ContextWindowExceededError``. OpenAI's message names the window and the tokens
requested; llama.cpp's body names ``n_prompt_tokens`` and ``n_ctx``; some say neither.
:func:`shrink_factor` turns whatever was said into the share of the request to keep, and
:func:`shrink` cuts the longest message contents (their middles, marked) to that share.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from mas.runtime.errors import ModelCallError
from mas.runtime.protocols import Message

CUT_MARK = "\n[... {n} characters cut to fit the model's window ...]\n"
"""Stands where the middle of a message was cut, so the model (and a reader) sees the gap."""

_OPENAI = re.compile(r"maximum context length is (\d+) tokens.*?requested (\d+) tokens"
                     r"(?: \((\d+) in the messages, (\d+) in the completion\))?", re.S)
_LLAMACPP_PROMPT = re.compile(r"n_prompt_tokens['\"]?\s*[:=]\s*(\d+)")
_LLAMACPP_CTX = re.compile(r"n_ctx['\"]?\s*[:=]\s*(\d+)")

_MARK_ROOM = len(CUT_MARK.format(n=10**9))

HEADROOM = 0.9
"""Aim this far below the provider's limit: its count of the cut request is not known."""


class WindowExceededError(ModelCallError):
    """The provider refused a request as longer than the model's window.

    :ivar window: the window the provider named, ``None`` when it did not say.
    :ivar requested: tokens the request needed by the provider's count (prompt plus
        completion for OpenAI, prompt alone for llama.cpp), ``None`` when not said.
    :ivar completion: completion tokens included in ``requested`` (0 when not said).
    """

    def __init__(self, message: str, *, window: int | None = None,
                 requested: int | None = None, completion: int = 0) -> None:
        super().__init__(message)
        self.window = window
        self.requested = requested
        self.completion = completion

    @property
    def prompt_tokens(self) -> int | None:
        """The provider's count of the prompt, when it said."""
        return None if self.requested is None else self.requested - self.completion


def parse_overflow(text: str) -> tuple[int | None, int | None, int]:
    """``(window, requested, completion)`` found in a provider's overflow message."""
    found = _OPENAI.search(text)
    if found:
        completion = int(found.group(4)) if found.group(4) else 0
        return int(found.group(1)), int(found.group(2)), completion
    prompt, ctx = _LLAMACPP_PROMPT.search(text), _LLAMACPP_CTX.search(text)
    if prompt and ctx:
        return int(ctx.group(1)), int(prompt.group(1)), 0
    return None, None, 0


def shrink_factor(error: WindowExceededError) -> float:
    """Share of the prompt to keep: from the provider's numbers, else one half."""
    if error.window and error.requested and error.requested > error.window:
        room = error.window - error.completion
        prompt = error.requested - error.completion
        if room > 0 and prompt > 0:
            return max(0.05, min(0.95, HEADROOM * room / prompt))
    return 0.5


@dataclass(frozen=True)
class Shrunk:
    """A cut request: the messages to send and how many characters were removed."""

    messages: list[Message]
    cut_chars: int
    cut_messages: int


def shrink(messages: list[Message], factor: float) -> Shrunk:
    """Keep about ``factor`` of the request's text by cutting the longest contents.

    Every message is kept (so tool-call pairs stay whole); a content longer than a common
    cap keeps its head and tail around :data:`CUT_MARK`. The cap is the largest that
    brings the total under ``factor`` of the original (water filling).
    """
    lengths = [len(m["content"]) if isinstance(m.get("content"), str) else 0 for m in messages]
    total = sum(lengths)
    target = math.floor(total * factor)
    if total == 0 or target >= total:
        return Shrunk(list(messages), 0, 0)
    cap = _cap(sorted(lengths, reverse=True), target)
    out: list[Message] = []
    cut_chars = cut_messages = 0
    # The mark takes room too: what is kept plus the mark stays within the cap.
    keep = max(0, cap - _MARK_ROOM)
    for message, length in zip(messages, lengths, strict=True):
        removed = length - keep
        if length <= cap or removed <= _MARK_ROOM:
            out.append(message)  # cutting this one would not make the request shorter
            continue
        content = str(message["content"])
        head = keep // 2
        mark = CUT_MARK.format(n=removed)
        out.append({**message, "content": content[:head] + mark + content[length - (keep - head):]})
        cut_chars += removed
        cut_messages += 1
    return Shrunk(out, cut_chars, cut_messages)


def _cap(desc: list[int], target: int) -> int:
    """Largest per-message length ``c`` with ``sum(min(len, c)) <= target``."""
    rest = sum(desc)
    for index, length in enumerate(desc):
        rest -= length
        # Messages before ``index`` are capped at ``c``; the others stay as they are.
        cap = (target - rest) // (index + 1)
        following = desc[index + 1] if index + 1 < len(desc) else 0
        if cap >= following:
            return max(0, min(cap, length))
    return 0
