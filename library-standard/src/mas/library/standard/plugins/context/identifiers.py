"""The ``standard`` identifier extractor: what a summary must not paraphrase away.

A summary that says "the assistant noted the order ID" has lost the order ID. Before
``summarising`` commits a summary it asks an extractor for the identifiers of the folded
messages and checks each one appears in the summary verbatim (docs/context.md,
"Identifier check"). This extractor finds, in message text and tool-call arguments:

- codes: capitals, a dash and digits (``ORD-7781``, ``RC-7186``, ``INV-2024-0042``);
- amounts with a currency (``$1,250.00``, ``€30``, ``99.90 EUR``);
- numbers with a unit (``15 kg``, ``3.5 GB``, ``20%``, ``250 ms``);
- e-mail addresses and URLs;
- file paths (``/etc/app.conf``, ``src/mas/cli.py``, ``C:\\logs\\app.log``);
- proper names in quotes (``"Blue Harbor Logistics"``).

Skill blocks are masked first (they are retained verbatim anyway). The result is capped
at ``max_identifiers`` so a huge tool result cannot make the check unbounded.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from pydantic import BaseModel, ConfigDict, Field

from mas.runtime.context import mask_skills
from mas.runtime.protocols import BindContext, Message

_CURRENCIES = ("$", "€", "£", "¥", "USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD")

_FAMILIES: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...] = (
    (re.compile(r"https?://[^\s\"'<>()\[\]{}]+[^\s\"'<>()\[\]{}.,;:!?]"), ("://",)),
    (re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b"), ("@",)),
    (re.compile(r"\b[A-Z][A-Z0-9]{1,9}(?:-[A-Z0-9]+)*-\d{2,}[A-Z0-9]*\b"), ("-",)),
    (re.compile(
        r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?"
        r"|\b\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|JPY|CHF|CAD|AUD)\b"
    ), _CURRENCIES),
    (re.compile(
        r"\b\d+(?:[.,]\d+)?\s?(?:%|(?:kg|mg|km|cm|mm|ms|GB|MB|KB|TB|GiB|MiB|KiB|kWh|kW|"
        r"MHz|GHz|Hz|px|mph|min|sec|hours?|days?|weeks?|months?|years?)(?![\w]))"
    ), ()),  # \d is any Unicode digit: no cheap literal test
    # Never starting inside a run of path characters keeps a long word from being tried
    # at every position (quadratic on big results).
    (re.compile(
        r"(?<![\w/.-])(?:[A-Za-z]:\\|~/|\.{1,2}/|/)?(?:[\w.-]+[/\\])+[\w-]+\.[A-Za-z0-9]{1,8}\b"
    ), ("/", "\\")),
    (re.compile(r"[\"“']([A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*){0,5})[\"”']"), ("\"", "“", "'")),
)
"""One pattern per identifier family, most specific first (a URL before its path), each
with the literals one of which any match must contain (none: always scanned). A text with
none of them is not scanned for that family: a substring test is far cheaper than a regex
pass over a 60k-character tool result."""


class StandardExtractorParams(BaseModel):
    """Params of the ``standard`` identifier extractor."""

    model_config = ConfigDict(extra="forbid")

    max_identifiers: int = Field(
        default=200, ge=1, description="Identifiers checked per fold at most (oldest first)."
    )


class StandardIdentifierExtractor:
    """Regular-expression extractor for codes, amounts, units, e-mails, URLs, paths, names."""

    def __init__(self, params: StandardExtractorParams, ctx: BindContext | None = None) -> None:
        self.params = params

    def extract(self, messages: list[Message]) -> list[str]:
        """Distinct identifiers in ``messages``, in order of first appearance (capped)."""
        found: dict[str, None] = {}
        limit = self.params.max_identifiers
        for message in messages:
            for text in _texts(mask_skills(message)):
                for identifier in identifiers_in(text):
                    found.setdefault(identifier, None)
                    if len(found) >= limit:
                        return list(found)
        return list(found)


def identifiers_in(text: str) -> list[str]:
    """Identifiers of one text, in order; a match overlapping an earlier family's is skipped.

    Accepted spans are kept sorted, so each match is checked against its neighbours only
    (a 60k-character tool result full of numbers stays linear-ish, not quadratic).
    """
    starts: list[int] = []
    spans: list[tuple[int, int, str]] = []
    for pattern, needs in _FAMILIES:
        if needs and not any(literal in text for literal in needs):
            continue
        group = 1 if pattern.groups else 0
        for match in pattern.finditer(text):
            start, stop = match.span(group)
            at = bisect_left(starts, start)
            if at and spans[at - 1][1] > start:
                continue  # overlaps the span that begins before it
            if at < len(spans) and spans[at][0] < stop:
                continue  # overlaps the span that begins after it
            starts.insert(at, start)
            spans.insert(at, (start, stop, match.group(group).strip()))
    return [value for _, _, value in spans]


def missing_from(summary: str, identifiers: list[str]) -> list[str]:
    """The identifiers that ``summary`` does not quote (white space folded)."""
    folded = " ".join(summary.split())
    return [i for i in identifiers if " ".join(i.split()) not in folded]


def _texts(message: Message) -> list[str]:
    texts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        texts.extend(
            str(part.get("text")) for part in content if isinstance(part, dict) and part.get("text")
        )
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict):
            arguments = (call.get("function") or {}).get("arguments")
            if isinstance(arguments, str):
                texts.append(arguments)
    return texts
