"""The ``standard`` identifier extractor: what a summary must not paraphrase away.

A summary that says "the assistant noted the order ID" has lost the order ID. Before
``summarising`` commits a summary it asks an extractor for the identifiers of the folded
messages and checks each one appears in the summary verbatim (docs/context.md,
"Identifier check"). This extractor finds, in message text and tool-call arguments:

- URLs and e-mail addresses;
- codes: capitals, a dash and digits (``ORD-7781``, ``RC-7186``, ``INV-2024-0042``);
- amounts with a currency (``$1,250.00``, ``€30``, ``99.90 EUR``);
- file paths (``/etc/app.conf``, ``src/mas/cli.py``, ``C:\\logs\\app.log``);
- dates (``2023-05-08``, ``8 May 2023``, ``May 8, 2023``, ``8 May, 2023``);
- times (``14:30``, ``1:56 pm``);
- numbers with a unit (``15 kg``, ``3.5 GB``, ``20%``, ``250 ms``);
- proper names in quotes (``"Blue Harbor Logistics"``);
- people's and places' names without quotes (``Priya Haddad``, ``New York``, ``Mel`` in
  "Hey Mel"), by the rule of :mod:`mas.library.standard.names`.

Every scan is linear in its text (:mod:`mas.library.standard.patterns`), and a family is
not scanned at all where a cheaper test shows it cannot occur (a literal it needs, or a
gate: dates, times and units share one pass over the digits). Skill blocks are
masked first (they are retained verbatim anyway). The result is capped at
``max_identifiers`` so a huge tool result cannot make the check unbounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from mas.library.standard import patterns
from mas.library.standard.names import names_in
from mas.runtime.context import mask_skills
from mas.runtime.protocols import BindContext, Message

Gate = Callable[[str], bool]
"""A cheap test of a whole text: ``False`` only when the text holds no span it guards."""


@dataclass(frozen=True)
class Family:
    """One kind of identifier: how to find its spans, the literals one of which every span
    holds (none: always scanned), and gates one of which every text holding a span passes
    (none: no gate). A text without the literals, or that every gate turns away, is not
    scanned for the family: a substring test, or one short pattern shared by several
    families, is far cheaper than the family's own pass over a 60k-character tool result."""

    name: str
    spans: Callable[[str], Iterator[tuple[int, int]]]
    needs: tuple[str, ...] = ()
    gates: tuple[Gate, ...] = ()

    def may_occur(self, text: str, passed: dict[Gate, bool] | None = None) -> bool:
        """Whether ``text`` can hold a span of this family (``False``: it holds none).

        :param passed: each gate's verdict on ``text`` so far, shared by the families
            scanning the same text, so that a gate several families have runs once.
        """
        if self.needs and not any(literal in text for literal in self.needs):
            return False
        if not self.gates:
            return True
        verdicts = {} if passed is None else passed
        for gate in self.gates:
            verdict = verdicts.get(gate)
            if verdict is None:
                verdict = verdicts[gate] = gate(text)
            if verdict:
                return True
        return False


def _pattern(pattern: re.Pattern[str]) -> Callable[[str], Iterator[tuple[int, int]]]:
    """The spans function of a pattern: its identifier group in each match (the group
    :func:`~mas.library.standard.patterns.span_of` names, looked up once, not per match:
    a tool result yields thousands)."""
    group = patterns.identifier_group(pattern)

    def spans(text: str) -> Iterator[tuple[int, int]]:
        return (match.span(group) for match in pattern.finditer(text))

    return spans


def _has_month_name(text: str) -> bool:
    return patterns.MONTH_PREFIX.search(text) is not None


def _has_digit_form(text: str) -> bool:
    return patterns.DIGIT_FORMS.search(text) is not None


FAMILIES: tuple[Family, ...] = (
    Family("url", _pattern(patterns.URL), ("://",)),
    Family("email", _pattern(patterns.EMAIL), ("@",)),
    Family("code", _pattern(patterns.CODE), ("-",)),
    Family("amount", _pattern(patterns.AMOUNT), patterns.CURRENCIES),
    Family("path", _pattern(patterns.PATH), ("/", "\\")),
    Family("date", _pattern(patterns.DATE), gates=(_has_month_name, _has_digit_form)),
    Family("time", _pattern(patterns.TIME), gates=(_has_digit_form,)),
    Family("unit", _pattern(patterns.UNIT), gates=(_has_digit_form,)),
    Family("quoted_name", _pattern(patterns.QUOTED_NAME), ("\"", "“", "'")),
    Family("name", names_in),
)
"""The families, most specific first: where two overlap the earlier one wins (a URL
over the path inside it, a date over the month name in it)."""


class StandardExtractorParams(BaseModel):
    """Params of the ``standard`` identifier extractor."""

    model_config = ConfigDict(extra="forbid")

    max_identifiers: int = Field(
        default=200, ge=1, description="Identifiers checked per fold at most (oldest first)."
    )


class StandardIdentifierExtractor:
    """Extractor for codes, amounts, dates, times, units, e-mails, URLs, paths and names."""

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
    """Identifiers of one text, in order; a span overlapping an earlier family's is skipped.

    Which characters are taken is kept in one byte per character, so each span is checked
    and marked in time proportional to its length: linear in the text, however many
    identifiers it holds.
    """
    taken: bytearray | None = None
    found: list[tuple[int, str]] = []
    passed: dict[Gate, bool] = {}
    for family in FAMILIES:
        if not family.may_occur(text, passed):
            continue
        if taken is None:
            # The first family with spans overlaps nothing: a family's own spans never
            # overlap one another, so they are taken without a check (most texts have
            # one family; a tool result's thousands of codes skip a test each).
            spans = list(family.spans(text))
            if spans:
                taken = bytearray(len(text))
                for start, stop in spans:
                    taken[start:stop] = b"\x01" * (stop - start)
                found += [(start, text[start:stop].strip()) for start, stop in spans]
            continue
        for start, stop in family.spans(text):
            if taken.find(1, start, stop) >= 0:
                continue
            taken[start:stop] = b"\x01" * (stop - start)
            found.append((start, text[start:stop].strip()))
    found.sort()
    return [value for _, value in found]


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
