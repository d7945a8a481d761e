"""Text helpers of the offline model: readable text of messages, sentences, keywords."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from mas.runtime.protocols import Message

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]*")
# Every pattern here reads untrusted prompt text, so each is linear in it (issue 26,
# item 1): a look-ahead over a run is tried only where the run begins (a look-behind for
# the run's own characters), never again from each position inside it.
_IDENTIFIER = re.compile(r"(?<![\w-])[A-Za-z0-9_\-]*\d")
_NAME_INSIDE = re.compile(r"(?<=[a-z0-9,;] )[A-Z][a-z]+")
_KEY_VALUE = re.compile(r"^\s*[\w .\-]{1,40}:\s*\S")
_SKILL = re.compile(r"\[skill content retained verbatim: [^\[\]]+\]|<skill_content\b")
_STRONG = re.compile(
    r"(?<![\w-])(?=[\w-]*[A-Za-z])(?=[\w-]*\d)|(?<!\d)\d+[.,:/\-]\d|\b\d{3,}\b"
)
_SMALL_NUMBER = re.compile(r"(?<![\w.,:/\-])\d{1,2}(?![\w.,:/\-]\d)\b")
_COPULA = re.compile(r"\b(is|are|was|were|equals|costs?|totals?)\b", re.IGNORECASE)

_STOPWORD_TEXT = (
    "a about above after again all also am an and any are as at be because been before being "
    "below between both but by can could did do does doing done for from further had has have "
    "having he her here hers him his how i if in into is it its itself just me more most my "
    "myself no nor not now of off on once only or other our ours out over own please remind "
    "same she should so some such tell than that the their them then there these they this "
    "those through to too under until up very was we were what when where which while who "
    "whom why will with would you your yours yourself recall remember know give say said "
    "earlier previous mentioned let lets much many "
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
SKILL_SCORE = 100
"""The score of a retained-skill marker: above any detail, so a summary always keeps it."""
"""Words a question shares with everything: never used to match facts."""


def content_text(content: Any) -> str:
    """Readable text of a message ``content`` (a string, a list of parts, or JSON)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def message_text(message: Message) -> str:
    """Readable text of one message; embedded one-line JSON transcripts (a summarizer's
    payload) are unpacked to their ``content`` strings."""
    text = content_text(message.get("content"))
    if "{" not in text:
        return text
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped[:1] in ("[", "{"):
            try:
                found = list(_contents(json.loads(stripped)))
            except ValueError:
                found = []
            if found:
                lines.extend(found)
                continue
        lines.append(line)
    return "\n".join(lines)


def _contents(data: Any) -> Iterator[str]:
    """Every ``content`` string inside a JSON document of messages (depth first)."""
    if isinstance(data, dict):
        tool = data.get("role") == "tool"
        for key, value in data.items():
            if key in ("content", "summary", "text") and isinstance(value, str):
                yield value
            elif key == "content" and isinstance(value, (dict, list)) and tool:
                # Tool output the summarizer embedded as a JSON value: its text, as the
                # message carried it.
                yield json.dumps(value, ensure_ascii=False)
            else:
                yield from _contents(value)
    elif isinstance(data, list):
        for item in data:
            yield from _contents(item)


def sentences(text: str) -> list[str]:
    """Lines, then sentences within lines; list bullets stripped, blanks dropped."""
    return [sentence for line in lines(text) for sentence in line_sentences(line)]


def lines(text: str) -> list[str]:
    """The non-blank lines of ``text``, list bullets stripped."""
    stripped = (line.strip().lstrip("-*• ").strip() for line in text.splitlines())
    return [line for line in stripped if line]


def line_sentences(line: str) -> list[str]:
    """The sentences of one line."""
    return [s.strip() for s in _SENTENCE_END.split(line) if s.strip()]


_IRREGULAR = {
    "paid": "pay", "bought": "buy", "sent": "send", "spent": "spend", "made": "make",
    "gave": "give", "given": "give", "took": "take", "taken": "take", "got": "get",
    "chose": "choose", "chosen": "choose", "left": "leave", "met": "meet", "sold": "sell",
    "told": "tell", "kept": "keep",
}


def _stem(word: str) -> str:
    """A deliberately tiny stemmer: possessive and plural ``s``, ``-ed``/``-ing``, a few
    irregular past forms. Enough for "paid"/"pay" and "orders"/"order", nothing more."""
    if word.endswith("'s"):
        word = word[:-2]
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    for suffix in ("ing", "ed"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2]:
                word = word[:-1]  # shipp -> ship
            return word
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def keywords(text: str) -> set[str]:
    """Lower-cased, lightly stemmed content words (stopwords and 1-letter words dropped)."""
    words = (_stem(w.lower()) for w in _WORD.findall(text))
    return {w for w in words if len(w) > 1 and w not in STOPWORDS}


def query_words(text: str) -> list[str]:
    """The content words of ``text`` in order, as written (the first of each, ignoring
    case): a search query, for a search that does its own stemming."""
    seen: dict[str, str] = {}
    for word in _WORD.findall(text):
        lower = word.lower()
        if len(lower) > 1 and lower not in STOPWORDS:
            seen.setdefault(lower, word)
    return list(seen.values())


def is_fact(sentence: str) -> bool:
    """A sentence that states something checkable: an identifier or number, a
    ``key: value`` line, a name inside the sentence, or an "X is Y" statement."""
    if sentence.endswith("?"):
        return False
    return bool(
        _IDENTIFIER.search(sentence)
        or _KEY_VALUE.match(sentence)
        or _NAME_INSIDE.search(sentence)
        or _COPULA.search(sentence)
    )


def detail_score(sentence: str) -> int:
    """How much a summary needs ``sentence`` (0: not at all).

    3 for a strong identifier (letters mixed with digits such as ``ORD-7781``, a number
    with a separator such as ``142.50`` or ``2026-01-05``, or 3+ digits), 3 for a name
    inside the sentence, 1 for a ``key: value`` line, 1 for a small number; a retained
    skill marker always wins. Questions score 0.
    """
    if _SKILL.search(sentence):
        return SKILL_SCORE
    if sentence.endswith("?"):
        return 0
    score = 0
    if _STRONG.search(sentence):
        score += 3
    if _NAME_INSIDE.search(sentence):
        score += 3
    if _KEY_VALUE.match(sentence):
        score += 1
    if _SMALL_NUMBER.search(sentence):
        score += 1
    return score


def template(sentence: str) -> str:
    """``sentence`` lower-cased with small numbers replaced: "Detail 3: …" and "Detail 4:
    …" share a template, "Parcel P-1000 …" and "Parcel P-1001 …" do not."""
    return _SMALL_NUMBER.sub("#", " ".join(sentence.lower().split()))
