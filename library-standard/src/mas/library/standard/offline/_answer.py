"""What the offline model replies with, and the fixed texts its rules answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DONT_KNOW = "I don't know"
"""How every "not in my prompt" answer starts (the judge rule looks for it)."""

NOTHING_TO_KEEP = "Nothing specific to keep."
"""The summary of material without identifiers, numbers or names."""


@dataclass(frozen=True)
class Answer:
    """The offline model's reply: text and OpenAI ``tool_calls`` entries."""

    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    rule: str = ""
