"""Before a summary is committed: its identifiers checked and repaired, its size held.

:class:`IdentifierCheck` compares the identifiers of the folded messages and of the
previous summary (an update must not lose what earlier summaries kept) with the new
summary. In ``repair`` mode the summarizer is asked once more, with the missing
identifiers listed and only the phrases they stood in; whatever is still missing is
appended verbatim as a marked section — each identifier with the phrase it stood in —
so no identifier is lost to a paraphrase. ``warn`` counts without repairing; ``off``
skips the check.

:class:`SummaryFit` keeps the summary block within the room the context manager sized
the verbatim tail around, so what was folded is never cut by the final trim.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from mas.runtime.context import DEFAULT_ESTIMATOR, TokenEstimator, shorten_middle
from mas.runtime.protocols import (
    IdentifierExtractor,
    Message,
    Summarizer,
    SummaryEngine,
    SummaryRequest,
)

from ._base import summary_row
from .identifiers import missing_from

SECTION_HEAD = "\n\n[Identifiers kept verbatim by the identifier check]\n"
"""Opens the section of identifiers the summarizer left out (appended in repair mode)."""


@dataclass(frozen=True)
class CheckResult:
    """What the check found and did for one summary.

    :ivar text: the summary to commit (repaired when the mode is ``repair``).
    :ivar identifiers: identifiers of the folded range that were checked.
    :ivar found: present in the summarizer's first summary.
    :ivar repaired: added by the re-ask.
    :ivar appended: appended verbatim after the re-ask.
    :ivar missing: still absent from ``text`` (0 in repair mode unless the room forced
        the section short; counted, never silent).
    :ivar llm_calls: model calls the re-ask made.
    :ivar reask_error: why the re-ask failed, when it did.
    """

    text: str
    identifiers: int = 0
    found: int = 0
    repaired: int = 0
    appended: int = 0
    missing: int = 0
    llm_calls: int = 0
    reask_error: str | None = None
    wanted: tuple[str, ...] = ()

    def as_event(self, mode: str) -> dict[str, object]:
        """The ``summary.checked`` payload (counts only, never the identifiers)."""
        return {
            "mode": mode,
            "identifiers": self.identifiers,
            "found": self.found,
            "repaired": self.repaired,
            "appended": self.appended,
            "missing": self.missing,
            "llm_calls": self.llm_calls,
            "reask_error": self.reask_error,
        }


class IdentifierCheck:
    """Checks (and in ``repair`` mode repairs) a summary against its folded identifiers."""

    def __init__(
        self, mode: Literal["repair", "warn", "off"], extractor: IdentifierExtractor
    ) -> None:
        self.mode = mode
        self.extractor = extractor

    def run(
        self,
        folded: list[Message],
        text: str,
        request: SummaryRequest,
        summarizer: Summarizer,
        engine: SummaryEngine | None,
        section_room: int,
    ) -> CheckResult | None:
        """Check ``text`` against ``folded``; ``None`` when the mode is ``off``.

        :param section_room: tokens the appended section may take at most; identifiers
            that do not fit stay missing (and counted).
        """
        if self.mode == "off":
            return None
        earlier = [{"role": "system", "content": request.previous_summary}]
        wanted = self.extractor.extract(
            [*earlier, *folded] if request.previous_summary else folded
        )
        missing = missing_from(text, wanted)
        found = len(wanted) - len(missing)
        if not missing or self.mode == "warn":
            return CheckResult(
                text, len(wanted), found, missing=len(missing), wanted=tuple(wanted)
            )
        carriers = [*earlier, *folded] if request.previous_summary else folded
        text, still, calls, error = self._reask(
            carriers, text, wanted, missing, request, summarizer, engine
        )
        repaired = len(missing) - len(still)
        section, appended = self._section(carriers, still, section_room)
        text += section
        return CheckResult(
            text, len(wanted), found, repaired=repaired, appended=appended, llm_calls=calls,
            reask_error=error, wanted=tuple(wanted),
        )

    def _section(
        self, carriers: list[Message], missing: list[str], room: int
    ) -> tuple[str, int]:
        """The marked section and how many it lists: what people said first, tool output
        last, up to ``room`` tokens."""
        rank = {"user": 0, "assistant": 1, "system": 2}
        first: dict[str, int] = {}
        for message in carriers:
            for identifier in self.extractor.extract([message]):
                first.setdefault(identifier, rank.get(str(message.get("role")), 3))
        lines: list[str] = []
        used = DEFAULT_ESTIMATOR.text(SECTION_HEAD)
        phrase = _Phrases(carriers)
        for identifier in sorted(missing, key=lambda i: first.get(i, 3)):
            line = f"- {identifier}: {phrase(identifier)}"
            cost = DEFAULT_ESTIMATOR.text(line) + 1
            if used + cost > room:
                continue
            lines.append(line)
            used += cost
        return (SECTION_HEAD + "\n".join(lines) if lines else "", len(lines))

    def _reask(
        self,
        folded: list[Message],
        text: str,
        wanted: list[str],
        missing: list[str],
        request: SummaryRequest,
        summarizer: Summarizer,
        engine: SummaryEngine | None,
    ) -> tuple[str, list[str], int, str | None]:
        """One more summarizer call listing ``missing``, given the phrases they stood in
        (from the folded messages or the earlier summary); kept if it leaves fewer out."""
        # Only the phrases the missing identifiers stood in: a 60k-character tool result
        # that mentions one code costs the re-ask one sentence, not the whole result.
        sources: list[Message] = [
            {"role": "user", "content": "\n".join(map(_Phrases(folded), missing))}
        ]
        again = replace(
            request, messages=sources, previous_summary=text, must_include=tuple(missing)
        )
        try:
            result = summarizer.summarize(again, engine)
        except Exception as exc:  # the first summary stands; the section below repairs it
            return text, missing, 0, type(exc).__name__
        if result.text is None or not result.text.strip():
            return text, missing, result.llm_calls, None
        still = missing_from(result.text, wanted)
        if len(still) < len(missing):
            return result.text, still, result.llm_calls, None
        return text, missing, result.llm_calls, None


PHRASE_CHARS = 120
"""Longest phrase kept beside an appended identifier."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


class _Phrases:
    """The sentence an identifier first stood in, bounded to :data:`PHRASE_CHARS`.

    Each message is split into sentences once, on first need: a summary can miss
    hundreds of identifiers from the same long tool results.

    :param messages: where to look, in order.
    """

    def __init__(self, messages: list[Message]) -> None:
        self._texts = [m["content"] for m in messages if isinstance(m.get("content"), str)]
        self._sentences: dict[int, list[str]] = {}

    def __call__(self, identifier: str) -> str:
        """The phrase for ``identifier`` (the identifier itself where none holds it)."""
        for index, content in enumerate(self._texts):
            if identifier not in content:
                continue
            sentences = self._sentences.get(index)
            if sentences is None:
                sentences = self._sentences[index] = _SENTENCE_END.split(content)
            for sentence in sentences:
                if identifier in sentence:
                    sentence = " ".join(sentence.split()).removeprefix("- ")
                    if len(sentence) <= PHRASE_CHARS:
                        return sentence
                    at = max(0, sentence.index(identifier) - PHRASE_CHARS // 3)
                    return "..." + sentence[at : at + PHRASE_CHARS] + "..."
        return identifier


@dataclass(frozen=True)
class SummaryFit:
    """The room the summary block has in this request, and the history limit around it.

    :ivar room: tokens the summary row may take (the tail was sized around it).
    :ivar limit: the history hard limit of the request.
    """

    room: int
    limit: int

    def text_room(self, estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> int:
        """Tokens the summary *text* may take once the row's framing is counted."""
        return max(1, self.room - estimator.message(summary_row("")))

    def clip(self, text: str, estimator: TokenEstimator = DEFAULT_ESTIMATOR) -> str:
        """``text`` shortened (prose first, the identifier section last) to fit the room."""
        if estimator.message(summary_row(text)) <= self.room:
            return text
        prose, head, section = text.partition(SECTION_HEAD)
        tail = head + section
        room = self.text_room(estimator) - (estimator.text(tail) if tail else 0)
        if room <= 0:
            prose, tail, room = text, "", self.text_room(estimator)
        clipped = prose
        for _attempt in range(3):  # the marker and rounding can leave it a few tokens over
            over = estimator.text(clipped) - room
            if over <= 0:
                break
            keep = estimator.chars_for(max(estimator.text(clipped) - over, 1), like=clipped)
            clipped = shorten_middle(prose, min(keep, len(clipped) - 1))
        return clipped + tail
