"""Before a summary is committed: its identifiers checked and repaired, its size held.

:class:`IdentifierCheck` compares the identifiers the new summary must keep — those the
running summary already kept, and those of the newly folded messages — with the new
summary. Each folded message's identifiers are extracted once, when the message is
folded, with one ``extract([message])`` call; the running summary's are carried over as a
set (never re-extracted), so a check costs work proportional to what it folds and to the
identifiers it checks, never to the whole history.

``repair`` (the default) appends whatever is missing as a marked section — each
identifier with the phrase it stood in, what people said first and tool output last —
with no model call. ``reask`` first asks the summarizer once more, with the missing
identifiers listed and only the phrases they stood in, then appends what is still
missing. ``warn`` counts without repairing; ``off`` skips the check.

:class:`SummaryFit` keeps the summary block within the room the context manager sized
the verbatim tail around, so what was folded is never cut by the final trim.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from heapq import heapify, heappop, heappush
from typing import Literal

from mas.runtime.context import DEFAULT_ESTIMATOR, TokenEstimator, shorten_middle
from mas.runtime.context.estimate import weight
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

CheckMode = Literal["repair", "reask", "warn", "off"]
"""``identifier_check`` values: append (no call), re-ask then append, count only, none."""

DEFAULT_FOLD_LIMIT = 200
"""New identifiers checked per fold when the extractor states no ``max_identifiers``."""

_RANK = {"user": 0, "assistant": 1, "system": 2}
"""Which identifiers the section lists first: what people said, then the assistant, then
earlier summaries; tool output (and anything else) last."""

_KEPT = 2
"""The rank of an identifier the running summary already kept (it came from there)."""


@dataclass(frozen=True)
class CheckResult:
    """What the check found and did for one summary.

    :ivar text: the summary to commit (repaired when the mode is ``repair`` or ``reask``).
    :ivar identifiers: identifiers checked (the running summary's and the folded range's).
    :ivar found: present in the summarizer's first summary.
    :ivar repaired: added by the re-ask.
    :ivar appended: appended verbatim.
    :ivar missing: still absent from ``text`` (0 in repair mode unless the room forced
        the section short; counted, never silent).
    :ivar llm_calls: model calls the re-ask made.
    :ivar reask_error: why the re-ask failed, when it did.
    :ivar wanted: the identifiers checked, in order.
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


@dataclass
class FoldIdentifiers:
    """The identifiers one fold must keep, in order, and the rank of where each was first
    seen (0 user, 1 assistant, 2 system or the running summary, 3 tool output).

    :ivar wanted: the running summary's identifiers, then the folded messages' new ones.
    :ivar rank: per identifier, its :data:`_RANK` (tool output and the rest: 3).
    :ivar seen_at: per identifier of the folded messages, the offset of the message it was
        first extracted from (where its phrase is looked up first).
    """

    wanted: list[str] = field(default_factory=list)
    rank: dict[str, int] = field(default_factory=dict)
    seen_at: dict[str, int] = field(default_factory=dict)

    def add(self, identifier: str, rank: int, offset: int | None = None) -> bool:
        """Add ``identifier`` (first seen in folded message ``offset``) if new; ``True``
        when it was."""
        if identifier in self.rank:
            return False
        self.rank[identifier] = rank
        self.wanted.append(identifier)
        if offset is not None:
            self.seen_at[identifier] = offset
        return True


class IdentifierCheck:
    """Checks (and in ``repair`` / ``reask`` mode repairs) a summary against the
    identifiers it must keep.

    :param mode: the ``identifier_check`` param.
    :param extractor: the bound identifier extractor, called once per folded message.
    """

    def __init__(self, mode: CheckMode, extractor: IdentifierExtractor) -> None:
        self.mode = mode
        self.extractor = extractor
        # Per fold, the extractor's own bound (the standard one's ``max_identifiers``):
        # it is now called once per message, so the fold applies it across messages.
        limit = getattr(getattr(extractor, "params", None), "max_identifiers", None)
        self.limit = limit if isinstance(limit, int) and limit > 0 else DEFAULT_FOLD_LIMIT
        self._by_position: dict[int, list[str]] = {}

    def identifiers(
        self, folded: Sequence[Message], first: int, kept: Sequence[str]
    ) -> FoldIdentifiers:
        """What a summary of ``folded`` (absolute numbers from ``first``) must keep.

        ``kept`` (the running summary's set) comes first; then each folded message's
        identifiers, oldest first, up to :attr:`limit` new ones. A message is extracted
        once: a failed compaction that folds it again reads the cached result.
        """
        fold = FoldIdentifiers()
        for identifier in kept:
            fold.add(identifier, _KEPT)
        new = 0
        for offset, message in enumerate(folded):
            if new >= self.limit:
                break
            position = first + offset
            found = self._by_position.get(position)
            if found is None:
                found = self._by_position[position] = self.extractor.extract([message])
            rank = _RANK.get(str(message.get("role")), 3)
            for identifier in found:
                if new >= self.limit:
                    break
                new += fold.add(identifier, rank, offset)
        return fold

    def forget_before(self, position: int) -> None:
        """Drop the cached identifiers of messages numbered below ``position`` (folded)."""
        if self._by_position and min(self._by_position) < position:
            self._by_position = {p: v for p, v in self._by_position.items() if p >= position}

    def of_summary(self, text: str) -> list[str]:
        """A summary's identifiers, extracted from its text (a state saved before the
        running set was kept, or a summary written while the check was off)."""
        return self.extractor.extract([{"role": "system", "content": text}])

    def run(
        self,
        fold: FoldIdentifiers,
        carriers: list[Message],
        text: str,
        request: SummaryRequest,
        summarizer: Summarizer,
        engine: SummaryEngine | None,
        section_room: int,
        folded_from: int = 0,
    ) -> CheckResult | None:
        """Check ``text`` against ``fold``; ``None`` when the mode is ``off``.

        :param carriers: where the phrases come from: the previous summary (as a system
            row, when there is one) and the folded messages, in order.
        :param section_room: tokens the appended section may take at most; identifiers
            that do not fit stay missing (and counted).
        :param folded_from: index in ``carriers`` of the first folded message (the one
            ``fold``'s offsets count from).
        """
        if self.mode == "off":
            return None
        wanted = fold.wanted
        missing = missing_from(text, wanted)
        found = len(wanted) - len(missing)
        if not missing or self.mode == "warn":
            return CheckResult(
                text, len(wanted), found, missing=len(missing), wanted=tuple(wanted)
            )
        phrase = _Phrases(carriers, {i: folded_from + o for i, o in fold.seen_at.items()})
        still, calls, error = missing, 0, None
        if self.mode == "reask":
            text, still, calls, error = self._reask(
                phrase, text, wanted, missing, request, summarizer, engine
            )
        repaired = len(missing) - len(still)
        section, appended = _section(still, fold.rank, phrase, section_room)
        text += section
        return CheckResult(
            text, len(wanted), found, repaired=repaired, appended=appended, llm_calls=calls,
            reask_error=error, wanted=tuple(wanted),
        )

    def _reask(
        self,
        phrase: _Phrases,
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
        sources: list[Message] = [{"role": "user", "content": "\n".join(map(phrase, missing))}]
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


def _section(
    missing: list[str], rank: dict[str, int], phrase: _Phrases, room: int
) -> tuple[str, int]:
    """The marked section and how many identifiers it keeps: what people said first,
    tool output last, up to ``room`` tokens. An identifier that a phrase already listed
    holds (a date and a time of the same line) gets no line of its own. Once
    :data:`MISSES_IN_A_ROW` lines in a row have not fitted, no more phrases are looked
    up: the rest stay missing (and counted), unless a listed phrase holds them."""
    lines: list[str] = []
    misses = 0
    used = DEFAULT_ESTIMATOR.text(SECTION_HEAD)
    per_token = DEFAULT_ESTIMATOR.chars_per_token
    # The phrases taken, joined by a character no identifier holds, so that "does one of
    # them hold it" is one substring search: an identifier one of them holds is kept.
    listed = ""
    covered = 0
    for identifier in sorted(missing, key=lambda i: rank.get(i, 3)):
        if _JOIN not in identifier and identifier in listed:
            covered += 1
            continue
        # The line is the head and the phrase, and the phrase holds the identifier
        # (:meth:`_Phrases.holds`): when even that cannot fit, no phrase is looked up.
        # The room fills early, and a lookup reads a tool result up to the identifier.
        # Its length alone bounds its weight from below, so most of the identifiers a
        # full room turns away cost one comparison.
        holds = _Phrases.holds(identifier)
        if misses >= MISSES_IN_A_ROW or (
            used + (len(identifier) * (2 if holds else 1) + 4) // per_token + 1 > room
        ):
            continue
        least = weight(f"- {identifier}: ") + (weight(identifier) if holds else 0)
        if used + math.ceil(least / per_token) + 1 > room:
            continue
        said = phrase(identifier)
        line = f"- {identifier}: {said}"
        cost = DEFAULT_ESTIMATOR.text(line) + 1
        if used + cost > room:
            misses += 1
            continue
        misses = 0
        lines.append(line)
        listed += _JOIN + said
        used += cost
    return (SECTION_HEAD + "\n".join(lines) if lines else "", len(lines) + covered)


PHRASE_CHARS = 120
"""Longest phrase kept beside an appended identifier."""

MISSES_IN_A_ROW = 8
"""Lines in a row that do not fit the section's room before its phrases stop being looked
up. A nearly full room can still take a line whose phrase is short, but a lookup reads a
tool result up to the identifier: on the regime benchmark, a room left between the
shortest and the usual line looked up the phrase of nearly every identifier a fold
missed (18,764 lookups for 1,411 lines)."""

_JOIN = "\x00"
"""Between the phrases :func:`_section` has taken. Extracted from text, an identifier
holds none; one that did would get its own line rather than be matched across two."""

_SENTENCE_END = re.compile(r"\s(?:(?<=[.!?]\s)\s*|(?<=\n)\n*)")
"""White space after a sentence's end, or line breaks: ``(?<=[.!?])\\s+|\\n+``, written to
open with its first character's class so that ``re`` skips to white space in C."""


class _Phrases:
    """The sentence an identifier first stood in, bounded to :data:`PHRASE_CHARS`.

    Each message is split into sentences once, on first need: a summary can miss
    hundreds of identifiers from the same long tool results.

    :param messages: where to look, in order.
    :param seen_at: per identifier, the index in ``messages`` it was first extracted
        from, so the lookup starts there instead of testing every earlier message
        (hundreds of identifiers, each against every folded tool result).
    """

    def __init__(self, messages: list[Message], seen_at: dict[str, int] | None = None) -> None:
        self._texts = [m.get("content") for m in messages]
        self._seen_at = seen_at or {}
        self._sentences: dict[int, tuple[list[int], list[str]]] = {}
        self._folded: dict[tuple[int, int], str] = {}

    @staticmethod
    def holds(identifier: str) -> bool:
        """Whether the phrase of ``identifier`` is sure to contain it: one without white
        space other than single inner spaces (white space folding keeps it whole), not
        opening with ``-`` (the stripped ``- `` bullet cannot take part of it) and at
        most ``PHRASE_CHARS - PHRASE_CHARS // 3`` long (the window around it holds it)."""
        return (
            len(identifier) <= PHRASE_CHARS - PHRASE_CHARS // 3
            and not identifier.startswith("-")
            and " ".join(identifier.split()) == identifier
        )

    def __call__(self, identifier: str) -> str:
        """The phrase for ``identifier`` (the identifier itself where none holds it)."""
        hint = self._seen_at.get(identifier, 0)
        # The hinted message is where extraction found it, so it is almost always there;
        # the scan from the start stays for identifiers with no hint (the running
        # summary's) and for one found in a message's non-text parts.
        for index in (hint, *range(len(self._texts))) if hint else range(len(self._texts)):
            content = self._texts[index]
            if not isinstance(content, str):
                continue
            first = content.find(identifier)
            if first < 0:
                continue
            split = self._sentences.get(index)
            if split is None:
                split = self._sentences[index] = _split(content)
            starts, sentences = split
            # The first sentence holding it is the one its first occurrence falls in
            # (found by position, not by testing each sentence), unless that occurrence
            # straddles a sentence end: then the sentences are tested in order.
            number = bisect_right(starts, first) - 1
            offset = first - starts[number]
            if offset + len(identifier) > len(sentences[number]):
                offset = -1
                if identifier not in sentences[number]:
                    number = next((n for n, t in enumerate(sentences) if identifier in t), -1)
            if number < 0:
                continue
            return self._phrase(index, number, sentences[number], identifier, offset)
        return identifier

    def _phrase(self, index: int, number: int, raw: str, identifier: str, offset: int) -> str:
        """The phrase of sentence ``number`` of message ``index`` (``raw``) around the
        first occurrence of ``identifier`` (at ``offset`` in ``raw``; -1: unknown)."""
        # White space folded once per sentence: one 60k-character tool result is often
        # a single "sentence" holding hundreds of identifiers.
        key = (index, number)
        folded = self._folded.get(key)
        if folded is None:
            folded = self._folded[key] = " ".join(raw.split())
        sentence = folded.removeprefix("- ")
        # A line of an earlier summary's own section (``- ORD-1: <phrase>``) is found
        # first when the running summary is folded again: its head is not repeated.
        head, start = f"{identifier}: ", 0
        while sentence.startswith(head, start) and len(sentence) > start + len(head):
            start += len(head)
        sentence = sentence[start:]
        if len(sentence) <= PHRASE_CHARS:
            return sentence
        # Folding that kept the length moved no character, and an identifier without
        # white space occurs where it did: its first occurrence is known, not searched
        # for again through a long tool result.
        cut = len(folded) - len(sentence)
        known = offset >= cut and len(folded) == len(raw) and identifier.split() == [identifier]
        at = max(0, (offset - cut if known else sentence.index(identifier)) - PHRASE_CHARS // 3)
        return "..." + sentence[at : at + PHRASE_CHARS] + "..."


def _split(text: str) -> tuple[list[int], list[str]]:
    """``text``'s sentences (as ``_SENTENCE_END.split`` gives them) and where each starts."""
    starts, sentences, begin = [], [], 0
    for end in _SENTENCE_END.finditer(text):
        starts.append(begin)
        sentences.append(text[begin : end.start()])
        begin = end.end()
    starts.append(begin)
    sentences.append(text[begin:])
    return starts, sentences


UNRANKED = 3
"""The rank :meth:`SummaryFit.clip` gives an identifier whose rank is unknown (a state
saved before ranks were kept): that of tool output, valued least."""


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

    def clip(
        self,
        text: str,
        estimator: TokenEstimator = DEFAULT_ESTIMATOR,
        identifiers: Mapping[str, int] | None = None,
    ) -> str:
        """``text`` shortened to fit the room: whole lines of prose dropped, the identifier
        section kept.

        :param identifiers: what the summary was checked to keep, each with its rank as
            the section ranks them (0 said by people ... 3 tool output). Lines holding
            none of them that neither the section nor another kept line holds go first
            (the oldest first); then lines whose best-ranked such identifier ranks
            lowest, the ones holding the fewest such per token first; a line is cut in
            the middle only when it alone is over the room.
        """
        if estimator.message(summary_row(text)) <= self.room:
            return text
        prose, head, section = text.partition(SECTION_HEAD)
        tail = head + section
        room = self.text_room(estimator) - (estimator.text(tail) if tail else 0)
        if room <= 0:
            prose, tail, section, room = text, "", "", self.text_room(estimator)
        ranks = identifiers or {}
        own = {i: ranks[i] for i in missing_from(section, list(ranks))}
        kept = _whole_lines(prose, room, own, estimator)
        clipped = kept
        for _attempt in range(3):  # the marker and rounding can leave it a few tokens over
            over = estimator.text(clipped) - room
            if over <= 0:
                break
            keep = estimator.chars_for(max(estimator.text(clipped) - over, 1), like=clipped)
            clipped = shorten_middle(kept, min(keep, len(clipped) - 1))
        return clipped + tail


def _whole_lines(
    prose: str, room: int, ranks: Mapping[str, int], estimator: TokenEstimator
) -> str:
    """``prose`` without the lines it can best spare, down to ``room`` tokens or one line.

    A line's own identifiers are those of ``ranks`` no other kept line holds. Lines with
    none go first, the oldest first; then the line whose best-ranked own identifier ranks
    lowest, among equals the newest (the running summary's oldest lines carry what the
    conversation began with); lines over the whole room before any (they could only be
    kept cut). Each identifier's holders
    are found with ``str.find`` from line to line, and a line's worth changes only when an
    identifier it holds loses its last other holder, so the work is one pass over the
    prose per identifier plus a heap of the lines.
    """
    lines = prose.split("\n")
    # Each line's estimate plus one for its line break bounds the whole text's.
    cost = [estimator.text(line) + 1 for line in lines]
    folded = [" ".join(line.split()) for line in lines]
    joined = "\n".join(folded)
    starts = [0]
    for line in folded:
        starts.append(starts[-1] + len(line) + 1)
    holders: dict[str, list[int]] = {}
    rank: dict[str, int] = {}
    held: list[list[str]] = [[] for _ in lines]
    for identifier, identifier_rank in ranks.items():
        needle = " ".join(identifier.split())
        if not needle or needle in holders:
            continue
        rank[needle] = identifier_rank
        found = holders[needle] = []
        at = joined.find(needle)
        while at >= 0:
            number = bisect_right(starts, at) - 1
            found.append(number)
            held[number].append(needle)
            at = joined.find(needle, starts[number + 1])
    carriers = {needle: len(numbers) for needle, numbers in holders.items()}
    nothing = max(rank.values(), default=0) + 1
    best = [min((rank[i] for i in line if carriers[i] == 1), default=nothing) for line in held]
    alive = [True] * len(lines)

    def key(number: int) -> tuple[bool, int, int, int]:
        spare = best[number] == nothing  # holds no identifier of its own: oldest first
        return cost[number] <= room, -best[number], number if spare else -number, number

    heap = [key(n) for n in range(len(lines))]
    heapify(heap)
    used, left = sum(cost), len(lines)
    while used > room and left > 1:
        popped = heappop(heap)
        number = popped[3]
        if popped != key(number):  # it became the last holder of an identifier since
            heappush(heap, key(number))
            continue
        alive[number] = False
        used -= cost[number]
        left -= 1
        for needle in held[number]:
            carriers[needle] -= 1
            if carriers[needle] == 1:  # once per identifier: its holders read once
                last = next(n for n in holders[needle] if alive[n])
                best[last] = min(best[last], rank[needle])
    return "\n".join(line for line, kept in zip(lines, alive, strict=True) if kept)
