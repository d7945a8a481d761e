"""Skill content, which no strategy ever compacts (spec 000, "Skill content is never compacted").

An ``activate_skill`` result is recognised by its ``<skill_content name="…">`` wrapper.
When a strategy folds or drops a prefix of history, each skill's latest block is kept as
its own ``system`` row after the summary, and the summarizer sees
``[skill content retained verbatim: <name>]`` in place of the body.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from mas.runtime.protocols import Message

SKILL_MARKER = "<skill_content"
"""Cheap substring test run before the regular expression."""

_BLOCK = re.compile(
    r"<skill_content\s+name\s*=\s*([\"'])(?P<name>[^\"']+)\1[^>]*>.*?</skill_content>",
    re.DOTALL,
)


def placeholder(name: str) -> str:
    """The text the summarizer sees instead of a skill body."""
    return f"[skill content retained verbatim: {name}]"


def _text(content: Any) -> str | None:
    return content if isinstance(content, str) else None


def has_skill(message: Message) -> bool:
    """True if the message's text content contains a skill block (cheap pre-check first)."""
    text = _text(message.get("content"))
    return text is not None and SKILL_MARKER in text and _BLOCK.search(text) is not None


def skill_blocks(message: Message) -> list[tuple[str, str]]:
    """``(name, block)`` for each ``<skill_content>`` block in the message, in order."""
    text = _text(message.get("content"))
    if text is None or SKILL_MARKER not in text:
        return []
    return [(m.group("name"), m.group(0)) for m in _BLOCK.finditer(text)]


def mask_skills(message: Message) -> Message:
    """The message with each skill block replaced by its placeholder (same dict if none)."""
    text = _text(message.get("content"))
    if text is None or SKILL_MARKER not in text:
        return message
    masked = _BLOCK.sub(lambda m: placeholder(m.group("name")), text)
    return message if masked == text else {**message, "content": masked}


def skill_row(block: str) -> Message:
    """The retained ``system`` row carrying one skill block verbatim."""
    return {"role": "system", "content": block}


def latest_blocks(
    messages: Iterable[Message], into: dict[str, str] | None = None
) -> dict[str, str]:
    """Each skill's latest block among ``messages``, updating ``into`` (name -> block).

    A later block for a name replaces the earlier one and moves it to the end, so the
    mapping's order is the order in which each skill was last activated.
    """
    found = {} if into is None else into
    for message in messages:
        for name, block in skill_blocks(message):
            found.pop(name, None)
            found[name] = block
    return found
