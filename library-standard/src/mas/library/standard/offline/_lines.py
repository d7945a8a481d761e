"""What the offline summary makes of a conversation's lines (docs/offline-model.md, rule 3).

Session headers (``[Session 3 — 1:56 pm on 8 May, 2023]``) are not kept as lines: their
date goes before the first line kept from their session. Speaker labels (``Caroline:``)
are not a ``key: value`` detail, and a speaker's line is kept whole. A line an earlier
summary opened with its session's date (``[1:56 pm on 8 May, 2023] Caroline: …``) starts
that session again. Greetings and small talk (``Hi!``, ``Hey Mel, good to see you``)
score nothing; statements with several content words, plans among them, score as facts
do. Every scan here is linear in its text, like every scan of untrusted text (issue 26,
item 1).
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import chain

from mas.library.standard import patterns
from mas.library.standard.names import names_in
from mas.library.standard.offline._text import keywords

_HEADER_TEXT = (
    "session conversation chat dialogue dialog day date time part meeting call transcript "
    "log entry week on at the of and from to started new"
)
HEADER_WORDS = frozenset(_HEADER_TEXT.split())
"""The words a header may hold besides dates, times and numbers."""

_LABELS = frozenset({"session", "conversation", "chat", "dialogue", "dialog", "date",
                     "transcript"})
_WORD = re.compile(r"[^\W_]+")
_MAX_HEADER = 160
"""Longest line taken for a header."""
_PARTICIPANTS = re.compile(r"\(([^()]*)\)$")
"""A header's closing parenthesis naming who takes part: ``(Caroline and Melanie)``."""

_PHATIC_TEXT = (
    "hi hey hello hiya howdy yo good great nice lovely glad happy awesome cool wow oh ah aw "
    "amazing fantastic wonderful morning afternoon evening night day see seeing hear hearing "
    "meet meeting talk talking chat chatting catch again soon later too you your me my we us "
    "it that this so such very really much lot lots thank thanks cheers bye goodbye take care "
    "welcome sure yes yeah yep ok okay alright right totally absolutely definitely haha lol "
    "hehe congrat congrats congratulation congratulations same here there how are is am was "
    "be been doing going thing things everything all what up long time hope well fine keep "
    "touch to for and the of in with have has had do did just back glad ll re ve"
)
PHATIC_WORDS = frozenset(_PHATIC_TEXT.split())
"""Words of greetings and small talk: a sentence of only these (and names) says nothing."""

_PLAN = re.compile(
    r"\b(?:going to|gonna|plan(?:s|ned|ning)?|will|'ll|next (?:week|month|year|time)|"
    r"tomorrow|want to|hope to|hoping to|thinking (?:of|about))\b",
    re.IGNORECASE,
)
_LABEL = re.compile(r"([A-Z][\w'’-]*(?: [A-Z][\w'’-]*){0,2}):\s+(?=\S)")
_DATED = re.compile(r"\[([^\[\]\n]{1,80})\] (?=\S)")
"""The date a summary writes before a session's first line: ``[1:56 pm on 8 May, 2023] ``."""
CONTENT_WORDS = 5
"""Content words that make a statement worth keeping without any identifier (twice as
many count twice)."""


def header_date(line: str) -> tuple[bool, str | None]:
    """Whether ``line`` is a session header, and the date/time text it gives (if any).

    A header holds dates, times, numbers and :data:`HEADER_WORDS` only, with a date, a time
    or a label word (``Session 3``, ``Date:``) among them, and may end naming who takes part
    in parentheses: ``[Session 3 — 1:56 pm on 8 May, 2023]`` and ``Session 3, 1:56 pm on
    8 May, 2023 (Caroline and Melanie)`` give ``1:56 pm on 8 May, 2023``.
    """
    if len(line) > _MAX_HEADER or line.endswith("?"):
        return False, None
    named = _PARTICIPANTS.search(line.rstrip())
    if named and all(w[0].isupper() or w == "and" for w in _WORD.findall(named.group(1))):
        line = line[: named.start()]
    spans = sorted(chain((m.span() for m in patterns.DATE.finditer(line)),
                         (m.span() for m in patterns.TIME.finditer(line))))
    rest, at = [], 0
    for start, stop in spans:
        rest.append(line[at:start])
        at = max(at, stop)
    rest.append(line[at:])
    words = [w.lower() for w in _WORD.findall(" ".join(rest))]
    if not all(w in HEADER_WORDS or w.isdigit() for w in words):
        return False, None
    if not spans:
        return bool(_LABELS.intersection(words)), None
    return True, line[spans[0][0]: spans[-1][1]]


def split_date(line: str) -> tuple[str | None, str]:
    """``(date, rest)`` of a line an earlier summary opened with its session's date; ``(None,
    line)`` for any other line, a bracket that holds no date among them."""
    dated = _DATED.match(line)
    if dated and (date := header_date(dated.group(1))[1]) is not None:
        return date, line[dated.end():]
    return None, line


def speaker_labels(texts: list[str]) -> frozenset[str]:
    """Labels (one to three capitalised words and a colon) that open two lines or more:
    the speakers of a rendered conversation."""
    counts: Counter[str] = Counter()
    for text in texts:
        for line in text.splitlines():
            found = _LABEL.match(split_date(line.strip().lstrip("-*• "))[1])
            if found:
                counts[found.group(1)] += 1
    return frozenset(label for label, count in counts.items() if count >= 2)


def split_speaker(line: str, speakers: frozenset[str]) -> tuple[str, str]:
    """``(speaker, utterance)`` of a line; an empty speaker when it has none."""
    found = _LABEL.match(line) if speakers else None
    if found and found.group(1) in speakers:
        return found.group(1), line[found.end():]
    return "", line


def is_greeting(utterance: str) -> bool:
    """Whether ``utterance`` is only greetings and small talk (names aside)."""
    pieces, at = [], 0
    for start, stop in names_in(utterance):
        pieces.append(utterance[at:start])
        at = stop
    pieces.append(utterance[at:])
    words = [w.lower() for w in _WORD.findall(" ".join(pieces))]
    return bool(words) and all(w in PHATIC_WORDS or len(w) == 1 for w in words)


def content_score(utterance: str) -> int:
    """0–3 for what a statement says without identifiers: 1 for :data:`CONTENT_WORDS`
    content words (small talk aside), 2 for twice as many, and 1 more for a plan."""
    count = len(keywords(utterance) - PHATIC_WORDS)
    score = (count >= CONTENT_WORDS) + (count >= 2 * CONTENT_WORDS)
    if count >= 2 and _PLAN.search(utterance):
        score += 1
    return score
