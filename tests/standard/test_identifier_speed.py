"""Issue 22: the identifier check and the per-request estimates cost less, with the same
results.

The patterns were rewritten to open with their first character's class (so that ``re``
skips ahead in C instead of trying them at every position); their matches must be those
of the forms they replace, written out here. The phrase lookups, the appended section,
the long texts' estimates and the final trim's estimates each do less work, counted.
How much faster is measured by `make bench` (the regime's per-turn figures), never
asserted here.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mas.library.standard import names, patterns
from mas.library.standard.plugins.context import identifier_check
from mas.library.standard.plugins.context.identifier_check import _Phrases, _section
from mas.runtime.context import ContextPart, History, TokenEstimator, prepare_request
from mas.runtime.context.estimate import MEMO_MIN_CHARS, MEMO_SIZE, weight
from mas.runtime.protocols import Message

_SPACE = r"[^\S\r\n]+"
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\b"
)
_ORDINAL = r"(?:st|nd|rd|th)?\b"
_YEAR = rf"(?:,?{_SPACE}\d{{4}}\b)?"
_AM_PM = r"(?:[ap]\.m\.|[AaPp][Mm]\b)"
_PART = rf"{names._CAP}{names._LOW}+(?:{names._CAP}{names._LOW}+)*"
_WORD = rf"(?:{names._CAP}['’])?{_PART}(?:[-'’]{_PART})*(?!\w)"
_PARTICLES = "|".join(sorted(names.PARTICLES))

WRITTEN_OUT: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "code": (patterns.CODE,
             re.compile(r"\b[A-Z][A-Z0-9]{1,9}(?:-[A-Z0-9]+){0,6}-\d\d[A-Z\d]*\b")),
    "date": (patterns.DATE, re.compile(
        r"(?<![\w./-])(?:\d{4}-\d\d-\d\d|\d{4}/\d\d?/\d\d?|\d\d?[/.]\d\d?[/.]\d{4})"
        r"(?![/.-]?\d)"
        rf"|\b\d\d?{_ORDINAL}(?:{_SPACE}of)?{_SPACE}{_MONTH}{_YEAR}"
        rf"|\b{_MONTH}{_SPACE}(?:\d\d?{_ORDINAL}{_YEAR}|\d{{4}}\b)")),
    "time": (patterns.TIME, re.compile(
        rf"(?<![\d:])\d\d?(?::\d\d(?::\d\d)?(?!\d)(?:[^\S\r\n]?{_AM_PM})?|[^\S\r\n]?{_AM_PM})")),
    "unit": (patterns.UNIT, re.compile(
        r"\b\d+(?:[.,]\d+)?\s?(?:%|(?:kg|mg|km|cm|mm|ms|GB|MB|KB|TB|GiB|MiB|KiB|kWh|kW|"
        r"MHz|GHz|Hz|px|mph|min|sec|hours?|days?|weeks?|months?|years?)(?![\w]))")),
    "name_run": (names._RUN, re.compile(
        rf"(?<![\w'’-]){_WORD}(?: (?:(?:{_PARTICLES}) )?{_WORD})*")),
    "sentence_end": (identifier_check._SENTENCE_END, re.compile(r"(?<=[.!?])\s+|\n+")),
    "digit_forms": (patterns.DIGIT_FORMS, re.compile(
        r"\d(?:[-/.:]\d|\s?(?:[ap]\.m|[AaPp][Mm]|%|kg|mg|km|cm|mm|ms|[GMKT]i?B|kW|[MG]?Hz|px"
        r"|mph|min|sec|hour|day|week|month|year))")),
    "month_prefix": (patterns.MONTH_PREFIX, re.compile(
        r"Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec")),
}
"""Each rewritten pattern beside the form it replaces (the same matches, read slower)."""

TOKENS = [
    "May", "Mayor", "Jan", "January", "June", "July", "Sept", "Dec", "8", "12", "2023",
    "05", "-", "/", ".", ",", ":", " ", "  ", "\n", "\t", "am", "pm", "p.m.", "th", "of",
    "kg", "GB", "%", "ms", "hours", "ORD", "INV-", "A1", "X", "Priya", "Haddad", "O'Brien",
    "McDonald", "Jean-Luc", "Zoë", "da", "van", "The", "Hey", "Mel", "API", "I", "'", "’",
    "_", "x", "Ab", "Ёж", "١٢", "!", "?", "…", "(", "$", "1,250", "3.5",
]
"""Pieces of every form the patterns read, and of the guards around them."""


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map("".join))
def test_rewritten_patterns_match_what_the_written_out_forms_match(text: str) -> None:
    for name, (rewritten, written_out) in WRITTEN_OUT.items():
        assert _spans(rewritten, text) == _spans(written_out, text), name


class _Counted:
    """A phrase source that counts its lookups."""

    def __init__(self, phrases: _Phrases) -> None:
        self.phrases, self.calls = phrases, 0

    def __call__(self, identifier: str) -> str:
        self.calls += 1
        return self.phrases(identifier)


def test_the_section_looks_up_no_phrase_for_a_line_that_cannot_fit() -> None:
    result = " ".join(f"ORD-{n} shipped." for n in range(1000, 1300))
    missing = [f"ORD-{n}" for n in range(1000, 1300)]
    phrase = _Counted(_Phrases([{"role": "tool", "content": result}]))
    # Room for the section's head (15 tokens), the first line (10) and the next line's
    # head (5) but not its identifier: that line is over the room before its phrase is
    # known (the phrase holds the identifier), so no phrase is looked up for it.
    section, listed = _section(missing, {}, phrase, room=30)
    assert listed == 1 and phrase.calls == 1
    assert section.endswith("- ORD-1000: ORD-1000 shipped.")


def test_identifiers_of_one_phrase_share_its_line() -> None:
    # A session's date and time stand in one sentence: one line keeps both, and both
    # count as kept (the summary now quotes them).
    phrases = _Phrases([{"role": "user", "content": "We met at 19:40 on 9 April, 2023."}])
    section, kept = _section(["19:40", "9 April, 2023"], {}, phrases, room=100)
    assert kept == 2 and section.count("\n- ") == 1
    assert section.endswith("- 19:40: We met at 19:40 on 9 April, 2023.")


def test_a_phrase_from_an_earlier_section_line_does_not_repeat_its_head() -> None:
    # The running summary is folded again with its section: the identifier is found
    # first in its own line there, whose head must not pile up fold after fold.
    summary = {"role": "system", "content": "[Identifiers kept verbatim by the identifier "
               "check]\n- 4 years: 4 years: I've known these friends for 4 years."}
    assert _Phrases([summary])("4 years") == "I've known these friends for 4 years."


def test_a_long_sentence_phrase_is_cut_around_the_identifier() -> None:
    row = " ".join(f"ref ORD-{n} ok" for n in range(1000, 1400))  # one long "sentence"
    phrases = _Phrases([{"role": "tool", "content": row}])
    got = phrases("ORD-1300")
    at = row.index("ORD-1300") - 40
    assert got == "..." + row[at : at + 120] + "..."
    # White space folded: the occurrence is searched in the folded sentence.
    spaced = _Phrases([{"role": "tool", "content": row.replace(" ok", "  ok")}])
    folded = " ".join(row.replace(" ok", "  ok").split())
    at = folded.index("ORD-1300") - 40
    assert spaced("ORD-1300") == "..." + folded[at : at + 120] + "..."


class _Text(str):
    """A string that counts how often it is encoded (the estimate's work)."""

    encoded = 0

    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        _Text.encoded += 1
        return super().encode(*args, **kwargs)


def test_a_long_texts_weight_is_computed_once() -> None:
    text = _Text("tool output, 42 rows; " * 500)
    _Text.encoded = 0
    estimator = TokenEstimator()
    first = estimator.text(text)
    assert [estimator.text(text) for _ in range(5)] == [first] * 5
    assert _Text.encoded == 1
    short = _Text("x" * (MEMO_MIN_CHARS - 1))
    _Text.encoded = 0
    estimator.text(short), estimator.text(short)
    assert _Text.encoded == 2  # short texts are not remembered: encoding them is cheap


def test_weights_stay_right_when_the_memo_starts_afresh() -> None:
    texts = [f"{n:05d} " * (MEMO_MIN_CHARS // 6 + 1) + "é" * n for n in range(MEMO_SIZE * 3)]
    for _ in range(2):
        for text in texts:
            assert weight(text) == len(text) + len(
                text.encode("utf-8").translate(None, b"0123456789 "))


class _Counting(TokenEstimator):
    """An estimator that counts the messages it estimates, by identity."""

    def __init__(self) -> None:
        super().__init__()
        object.__setattr__(self, "seen", {})

    def message(self, message: Message) -> int:
        seen: dict[int, int] = self.seen  # type: ignore[attr-defined]
        seen[id(message)] = seen.get(id(message), 0) + 1
        return super().message(message)


def test_a_request_estimates_each_working_memory_message_once() -> None:
    from mas.library.standard.plugins.context.stack import StackContextManager, StackParams
    from mas.runtime import Runtime
    from mas.runtime.protocols import BindContext
    from mas.runtime.spec.model_ref import ModelChoice, ModelRow, ModelScope

    scope = ModelScope.build(agent_models=[ModelRow("main", "test/fake")])
    ctx = BindContext(runtime=Runtime.create(), agent_name="t", model_scope=scope,
                      turn_model=ModelChoice("test/fake", "spec.models[id=main]", "main"))
    cm = StackContextManager(StackParams(), ctx)
    estimator = _Counting()
    history = History([{"role": "user", "content": "hi"}], estimator=estimator)
    user: Message = {"role": "user", "content": "look it up"}
    call: Message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    result: Message = {"role": "tool", "tool_call_id": "c1", "content": "row " * 30_000}
    request = prepare_request(
        cm=cm, history=history, parts=[ContextPart("agent", "a", "You help.")],
        current_input=user, working_memory=[call, result], window=8_000, reserve=0)
    assert request.trim.shortened_in_flight == 1  # over budget: the trim ran on them
    seen = estimator.seen  # type: ignore[attr-defined]
    assert seen[id(user)] == 1 and seen[id(call)] == 1 and seen[id(result)] == 1
