"""Registers ``keyword_digest``: a summarizer that needs no model.

It follows :class:`mas.runtime.protocols.Summarizer`: ``summarize(request, engine)``
returns a :class:`~mas.runtime.protocols.SummaryResult`. The running summary is the
previous one plus the new lines, trimmed from the front to ``max_chars``.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mas.runtime import hookimpl
from mas.runtime.protocols import SummaryEngine, SummaryRequest, SummaryResult

_NUMBER = re.compile(r"\d")


class KeywordDigestParams(BaseModel):
    """Params of ``keyword_digest``."""

    model_config = ConfigDict(extra="forbid")

    keywords: list[str] = Field(default_factory=list, description="Lines with these are kept.")
    max_chars: int = Field(default=2000, ge=100, description="Longest summary kept.")


class KeywordDigest:
    """Keeps the folded lines that carry a number or a keyword."""

    calls_model = False

    def __init__(self, params: KeywordDigestParams, ctx: Any) -> None:
        self.params = params
        self.keywords = [k.lower() for k in params.keywords]

    def _keep(self, line: str) -> bool:
        lowered = line.lower()
        return bool(_NUMBER.search(line)) or any(k in lowered for k in self.keywords)

    def summarize(self, request: SummaryRequest, engine: SummaryEngine | None) -> SummaryResult:
        """The previous summary plus every kept line of the folded messages."""
        lines = [request.previous_summary] if request.previous_summary else []
        for message in request.messages:
            content = message.get("content")
            if isinstance(content, str):
                role = message.get("role", "?")
                lines += [f"{role}: {line.strip()}" for line in content.splitlines()
                          if line.strip() and self._keep(line)]
        text = "\n".join(lines)[-self.params.max_chars:] or "(nothing to keep)"
        return SummaryResult(text=text, model=None, model_source="keyword_digest")


@hookimpl
def mas_register_summarizers(registry: Any) -> None:
    """Register ``keyword_digest``."""
    registry.register("keyword_digest", KeywordDigest, params=KeywordDigestParams)
