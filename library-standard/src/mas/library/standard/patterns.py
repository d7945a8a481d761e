"""Patterns for identifiers in untrusted text, each scanning in time linear in its input.

Shared by the ``standard`` identifier extractor and the offline model (issue 26, item 1).
Python's ``re`` backtracks, so a pattern is linear only when no start position makes it
read a long stretch and then fail, again and again. Text full of ``HUGE-HUGE-…`` made the
old code pattern do exactly that from every word (20 KB took 0.85 s, 40 KB 8.1 s). The
patterns here avoid it in one of three ways, said at each:

- a start is tried only where a run of the pattern's characters begins (a look-behind for
  those characters), so a failed attempt reads its run once, not once per position in it;
- what a start can read is bounded (a code has at most eight parts);
- no two neighbouring quantifiers can take the same character, so a failing match is not
  split every possible way (``\\d{2,}[A-Z0-9]*`` could split a digit run so).

Python 3.11's atomic groups and possessive quantifiers would do the same more briefly,
but the distributions support Python 3.10. Each pattern's identifier is its group 1 when
it has a group, else the whole match (:func:`span_of`).

Speed (issue 22): ``re`` skips ahead in C to the next possible start only when a pattern
*opens with* a character class or a literal; a pattern that opens with ``\\b`` or a
look-behind is instead tried in full at every position of the text. So each pattern here
opens with the class of its first character, and the guard that used to stand before that
character is a look-behind one character wider after it (``(?<!\\w.)`` after the first
character is ``\\b`` before it). The matches are the same; the scan reads a tool result
several times faster.

The patterns that open with a digit are still tried at every digit, and JSON tool output
is full of digits that start no date, time or unit. They share a *gate*,
:data:`DIGIT_FORMS`, a shorter pattern that every one of their matches contains (a named
date holds a month name instead): a text it does not find is not scanned for them, and one
pass of it over a tool result costs about half of the three scans it saves.
"""

from __future__ import annotations

import re

CURRENCIES = ("$", "€", "£", "¥", "USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD")
"""The currency symbols and codes an amount carries."""

URL = re.compile(r"https?://[^\s\"'<>()\[\]{}]+[^\s\"'<>()\[\]{}.,;:!?]")
"""``http(s)://`` and what follows up to white space or a bracket, without trailing
punctuation. Starts only at the literal; a start that reads to the end of its run ends
there with a match (the run holds the literal's own letters), so nothing is read twice."""

EMAIL = re.compile(r"(?<![\w.+-])[.+-]*(\w[\w.+-]*@[\w-]+(?:\.[\w-]+)+)\b")
"""An e-mail address. Tried only where a run of address characters begins: every start
inside the run reaches the same ``@`` and domain, so the first decides for all."""

CODE = re.compile(r"[A-Z](?<!\w.)[A-Z0-9]{1,9}(?:-[A-Z0-9]+){0,6}-\d\d[A-Z\d]*\b")
"""A code: capitals, then up to eight dash-separated parts, the last starting with two
digits (``ORD-7781``, ``INV-2024-0042``). The bound on parts bounds what each start reads."""

AMOUNT = re.compile(
    r"[$€£¥]\s?\d[\d,]*(?:\.\d+)?"
    r"|(?<![\w,])\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|JPY|CHF|CAD|AUD)\b"
)
"""An amount with a currency symbol before or a code after it. A number before a code is
tried only where its run of digits and commas begins."""

PATH = re.compile(
    r"(?<![\w/.\\-])(?:[A-Za-z]:\\|~/|\.{1,2}/|/)?(?:[\w.-]+[/\\])+[\w-]+\.[A-Za-z0-9]{1,8}\b"
)
"""A file path ending in a file name with an extension (``/etc/app.conf``,
``C:\\logs\\app.log``). Never started inside a run of path characters, back-slashes
included."""

_SPACE = r"[^\S\r\n]+"
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\b"
)
_ORDINAL = r"(?:st|nd|rd|th)?\b"
_YEAR = rf"(?:,?{_SPACE}\d{{4}}\b)?"

# A month name after its first letter (each branch guarded by that letter), in _MONTH's
# order: DATE consumes the first character before it knows which form it reads.
_MONTH_REST = (
    r"(?:(?<=J)(?:an(?:uary)?|une?|uly?)|(?<=F)eb(?:ruary)?|(?<=M)(?:ar(?:ch)?|ay)"
    r"|(?<=A)(?:pr(?:il)?|ug(?:ust)?)|(?<=S)ep(?:t(?:ember)?)?|(?<=O)ct(?:ober)?"
    r"|(?<=N)ov(?:ember)?|(?<=D)ec(?:ember)?)\b"
)

DATE = re.compile(
    r"[\dADFJMNOS](?:"
    r"(?<=\d)(?<![\w./-].)(?:\d{3}-\d\d-\d\d|\d{3}/\d\d?/\d\d?|\d?[/.]\d\d?[/.]\d{4})(?![/.-]?\d)"
    rf"|(?<=\d)(?<!\w.)\d?{_ORDINAL}(?:{_SPACE}of)?{_SPACE}{_MONTH}{_YEAR}"
    rf"|(?<!\w.){_MONTH_REST}{_SPACE}(?:\d\d?{_ORDINAL}{_YEAR}|\d{{4}}\b))"
)
"""A date: ``2023-05-08``, ``2023/5/8``, ``08/05/2023``, ``8 May 2023``, ``8th of May``,
``8 May, 2023``, ``May 8, 2023``, ``May 2023`` (month names capitalised, so the verb
"may" is not one). Every start reads a bounded stretch or one run of spaces."""

_AM_PM = r"(?:[ap]\.m\.|[AaPp][Mm]\b)"
TIME = re.compile(
    rf"\d(?<![\d:].)\d?(?::\d\d(?::\d\d)?(?!\d)(?:[^\S\r\n]?{_AM_PM})?|[^\S\r\n]?{_AM_PM})"
)
"""A time of day: ``14:30``, ``14:30:05``, ``1:56 pm``, ``9am``, ``10 a.m.``."""

UNIT = re.compile(
    r"\d(?<!\w.)\d*(?:[.,]\d+)?\s?(?:%|(?:kg|mg|km|cm|mm|ms|GB|MB|KB|TB|GiB|MiB|KiB|kWh|kW|"
    r"MHz|GHz|Hz|px|mph|min|sec|hours?|days?|weeks?|months?|years?)(?![\w]))"
)
"""A number with a unit (``15 kg``, ``3.5 GB``, ``20%``). Starts only before a digit at a
word boundary, and each start reads one number."""

MONTH_PREFIXES = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                  "Dec")
"""What every month name :data:`DATE` reads begins with."""

MONTH_PREFIX = re.compile("|".join(MONTH_PREFIXES))
"""Any of :data:`MONTH_PREFIXES`: one pass over a text instead of one per month (a
tool result's gate for named dates, issue 22)."""

DIGIT_FORMS = re.compile(
    r"\d(?=[-/.:\s%A-Za-z])"
    r"(?:[-/.:]\d|\s?(?:[ap]\.m|[AaPp][Mm]|%|kg|mg|km|cm|mm|ms|[GMKT]i?B|kW|[MG]?Hz|px|mph"
    r"|min|sec|hour|day|week|month|year))"
)
"""A digit before what a numeric date, a time or a unit goes on with: a separator and a
digit (``2023-05-08``, ``8.5.2023``, ``14:30``), am/pm, or a unit's first letters. Every
numeric :data:`DATE`, every :data:`TIME` and every :data:`UNIT` match holds one. The
look-ahead holds the first character of every alternative: a digit followed by another
digit or a comma (most digits of JSON output) fails on one class test instead of trying
each unit in turn, which made the gate 2.5 times faster on the regime's tool results."""

QUOTED_NAME = re.compile(r"[\"“']([A-Z][\w&.'-]*(?:\s+[A-Z][\w&.'-]*){0,5})[\"”']")
"""A proper name in quotes (``"Blue Harbor Logistics"``), at most six words: a start
reads at most six words."""


def identifier_group(pattern: re.Pattern[str]) -> int:
    """Which group of ``pattern``'s matches is the identifier: 1 if it has one, else 0."""
    return 1 if pattern.groups else 0


def span_of(match: re.Match[str]) -> tuple[int, int]:
    """Where the identifier of ``match`` is (:func:`identifier_group`)."""
    return match.span(identifier_group(match.re))


def substitute(pattern: re.Pattern[str], phrase: str, text: str) -> str:
    """``text`` with every identifier ``pattern`` finds replaced by ``phrase`` (only the
    identifier: what a pattern reads around it stays)."""

    def replace(match: re.Match[str]) -> str:
        start, stop = span_of(match)
        whole = match.group(0)
        return whole[: start - match.start()] + phrase + whole[stop - match.start():]

    return pattern.sub(replace, text)
