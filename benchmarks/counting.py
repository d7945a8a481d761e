"""The one token counter every strategy and peer is measured with, and the fake summarizer.

The counter is characters / 4 (rounded up, per text field) plus 3 tokens per message:
mas-lab's :class:`~mas.runtime.context.TokenEstimator` with ``message_overhead=3`` and no
per-call overhead. Peers get the same numbers through adapters that convert their
message objects to OpenAI dicts first.

:class:`FakeSummarizer` is a benchmark-only double of a summarizer *model*: it answers
instantly, counts its calls and their input tokens (with the shared counter), records the
largest request, and returns an extractive summary (every planted ``FACT-`` code it saw,
plus a fixed sentence), capped at the output limit it was given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mas.runtime.context import TokenEstimator
from mas.runtime.protocols import ModelReply, Usage

COUNTER = TokenEstimator(message_overhead=3, tool_call_overhead=0)
"""chars/4 + 3 per message, for everyone."""

BUDGET = 8_000
"""Request budget in tokens, for everyone."""

SUMMARIZER_WINDOW = 16_000
"""Input window of the fake summarizer model."""

_FACT = re.compile(r"FACT-\d{4}")


def count(messages: list[dict[str, Any]]) -> int:
    """Tokens of a list of OpenAI chat dicts with the shared counter."""
    return COUNTER.messages(messages)


@dataclass
class FakeSummarizer:
    """Counts summarizer calls and input tokens; answers with the facts it saw."""

    calls: int = 0
    input_tokens: int = 0
    largest_request: int = 0
    over_window: int = 0
    window: int = SUMMARIZER_WINDOW
    facts_seen: set[str] = field(default_factory=set)

    def answer(self, texts: list[str], tokens: int, max_tokens: int | None) -> str:
        """Record one call of ``tokens`` input tokens and return its summary text."""
        self.calls += 1
        self.input_tokens += tokens
        self.largest_request = max(self.largest_request, tokens)
        self.over_window += int(tokens > self.window)
        facts = sorted({f for text in texts for f in _FACT.findall(text)})
        self.facts_seen.update(facts)
        summary = f"Summary {self.calls}: the user asked about orders and invoices; " \
                  f"references to remember: {', '.join(facts) or 'none'}."
        limit = (max_tokens or 512) * 4
        return summary[:limit]

    # -- mas-lab's SummaryEngine protocol --------------------------------------------

    def summarize_messages(
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """The out-of-band summary call mas-lab's ``llm`` summarizer makes."""
        tokens = count(messages) + COUNTER.tools(tools)
        texts = [m["content"] for m in messages if isinstance(m.get("content"), str)]
        text = self.answer(texts, tokens, max_tokens)
        return ModelReply(text=text, usage=Usage(tokens, COUNTER.text(text)), model=model)
