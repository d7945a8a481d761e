"""Issue 10, items 3 and 4: summaries are written from the originals, and checked (and
repaired) for the identifiers of what they fold; the extractor is a plugin kind."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mas.library.standard.offline._rules import respond
from mas.library.standard.plugins.context.identifier_check import (
    MISSES_IN_A_ROW,
    PHRASE_CHARS,
    SECTION_HEAD,
    _Phrases,
    _section,
)
from mas.library.standard.plugins.context.identifiers import FAMILIES, identifiers_in
from mas.runtime import hookimpl
from mas.runtime.context import DEFAULT_ESTIMATOR, ContextBudget, FixedCosts, History
from mas.runtime.errors import MasError
from mas.runtime.protocols import Message, ModelReply
from mas.runtime.spec.binding import Binding, bind

from .conftest import EngineDouble, Recorder, make_ctx

FACTS = (
    "My order is ORD-7781 and the refund case RC-7186. "
    "I paid $1,250.00 plus 99.90 EUR; the parcel weighs 15 kg and shipping took 20% more. "
    "Write to ana.silva@example.com, see https://example.com/orders/7781.html, "
    "the log is at /var/log/shop/app.log and the config in src/shop/settings.py. "
    'The carrier is "Blue Harbor Logistics".'
)


@pytest.mark.parametrize(
    "identifier",
    ["ORD-7781", "RC-7186", "$1,250.00", "99.90 EUR", "15 kg", "20%", "ana.silva@example.com",
     "https://example.com/orders/7781.html", "/var/log/shop/app.log", "src/shop/settings.py",
     "Blue Harbor Logistics"],
)
def test_the_standard_extractor_finds_each_family(identifier: str) -> None:
    assert identifier in identifiers_in(FACTS)


def test_plain_prose_has_no_identifiers() -> None:
    assert identifiers_in("The user asked for help with an order and we talked about it.") == []


# Issue 23: the identifiers conversations carry — names without quotes, dates, times.
@pytest.mark.parametrize(("text", "expected"), [
    ("Priya Haddad joined the call.", ["Priya Haddad"]),
    ("I met Henrik Dubois in New York last week.", ["Henrik Dubois", "New York"]),
    ("Caroline: Hey Mel! How are you?", ["Mel"]),
    ("I think Oslo is cold, and so does O'Brien.", ["Oslo", "O'Brien"]),
    ("We went with Leonardo da Vinci and Jean-Luc.", ["Leonardo da Vinci", "Jean-Luc"]),
    ("I love Priya's dog.", ["Priya"]),
    ("The Louvre was closed. Zoë met José in München.", ["Louvre", "José", "München"]),
    ("Good Morning Mel", ["Mel"]),
])
def test_names_without_quotes_are_found(text: str, expected: list[str]) -> None:
    assert identifiers_in(text) == expected


@pytest.mark.parametrize("text", [
    "The order shipped.", "I am here. I think so.", "Hello! Hello there.", "Hi, how are you?",
    "Thanks! Yes, sure.", "Oslo is cold.", "Zoë called.", "The API returns JSON.",
    "Then we left. When? Today.", "- Great job.\n> Nice work: Well done.",
])
def test_sentence_openers_and_common_words_are_not_names(text: str) -> None:
    # A single capitalised word that opens a sentence cannot be told from any other
    # opening word; common words are never names. Precision over recall.
    assert identifiers_in(text) == []


@pytest.mark.parametrize(("text", "expected"), [
    ("Due 2023-05-08, moved to 2023/5/9 and 08/05/2023.", ["2023-05-08", "2023/5/9", "08/05/2023"]),
    ("We met on 8 May 2023 and on May 8, 2023.", ["8 May 2023", "May 8, 2023"]),
    ("[Session 3 — 1:56 pm on 8 May, 2023]", ["1:56 pm", "8 May, 2023"]),
    ("On the 3rd of June and in March 2024.", ["3rd of June", "March 2024"]),
    ("Stand-up at 14:30, lunch at 12:05:30, call at 9am or 10 a.m.",
     ["14:30", "12:05:30", "9am", "10 a.m."]),
    ("Logged 2023-05-08T14:30:00Z.", ["2023-05-08", "14:30:00"]),
])
def test_dates_and_times_are_found(text: str, expected: list[str]) -> None:
    assert identifiers_in(text) == expected


@pytest.mark.parametrize("text", [
    "You may go at 5.", "It took 1:2 or 3:4 tries.", "Version 1.2.3 of 12345:678.",
    "The may-pole in march.", "Room 12 on floor 3.",
])
def test_numbers_that_are_not_dates_or_times_are_left_alone(text: str) -> None:
    assert identifiers_in(text) == []


def test_a_date_wins_over_the_month_name_and_a_path_over_the_date_in_it() -> None:
    assert identifiers_in("Filed in May: 8 May 2023, see 2023/05/08/report.pdf.") == [
        "May", "8 May 2023", "2023/05/08/report.pdf"]


FRAGMENTS = [*FACTS.split(" "), "x@y.io", "€30", "¥5", "C:\\logs\\app.log", "~/a/b.txt",
             "“Quoted Name”", "'Single Quote'", "٣ kg", "-", "/", "@", "://", "USD", " ", "\n"]


@settings(max_examples=300)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=40))
def test_a_family_is_skipped_only_when_no_match_of_it_could_exist(pieces: list[str]) -> None:
    # The literal prefilter is safe exactly when a text without the literals has no span
    # of the family to lose; the same text with each literal removed must then have none.
    text = " ".join(pieces)
    for family in FAMILIES:
        stripped = text
        for literal in family.needs:
            stripped = stripped.replace(literal, " ")
        if family.needs:
            assert list(family.spans(stripped)) == [], (family.name, stripped)


TIMED = ["8 May 2023", "May 8, 2023", "8th of May", "June 2024", "Sept 3", "2023-05-08",
         "2023/5/8", "08/05/2023", "8.5.2023", "14:30", "14:30:05", "1:56 pm", "9am", "10 a.m.",
         "7\u00a0PM", "15 kg", "3.5 GB", "20%", "٣ kg", "250 ms", "5\nkg", "12 hours", "4 MiB",
         "60 Hz", "3 GHz", "2 days", "1,5 km", "May", "Jan", "12.50", "18950", ":", "am"]


@settings(max_examples=300)
@given(st.lists(st.one_of(st.sampled_from(TIMED + FRAGMENTS), st.text(max_size=6)),
                max_size=30),
       st.sampled_from(["", " ", "\n", "-", "/", "."]))
def test_a_gate_turns_away_only_a_text_without_a_span_of_its_family(
    pieces: list[str], joint: str
) -> None:
    # Issue 22: date, time and unit are scanned only where their gate finds something;
    # the gate is safe exactly when every text holding a span passes it.
    text = joint.join(pieces)
    for family in FAMILIES:
        if family.gates and not family.may_occur(text):
            assert list(family.spans(text)) == [], (family.name, text)


def test_the_gated_families_still_find_dates_times_and_units_in_json() -> None:
    row = '{"id": 18950, "ref": "ORD-29857", "at": "2023-05-08 14:30", "size": "3.5 GB"}'
    assert identifiers_in(row) == ["ORD-29857", "2023-05-08", "14:30", "3.5 GB"]
    assert identifiers_in('{"id": 18950, "ref": "ORD-29857", "n": 562}') == ["ORD-29857"]


@pytest.mark.parametrize("long_before", [MISSES_IN_A_ROW - 1, MISSES_IN_A_ROW + 3])
def test_a_full_section_stops_looking_up_phrases_after_misses_in_a_row(
    long_before: int,
) -> None:
    # Issue 22: a room left between the shortest and the usual line looked up the phrase
    # of every identifier a fold missed; past MISSES_IN_A_ROW misfits the rest stay
    # missing without a lookup.
    codes = [f"LG-{n:04d}" for n in range(long_before + 1)]
    filler = " ".join(["padding words that make this sentence long"] * 4)
    tool = "\n".join(f"{code} {filler}." for code in codes) + "\nZZ-99 ok."
    phrase = _Phrases([{"role": "tool", "content": tool}])
    first_line = DEFAULT_ESTIMATOR.text(f"- {codes[0]}: {phrase(codes[0])}") + 1
    room = DEFAULT_ESTIMATOR.text(SECTION_HEAD) + first_line + 8  # a short line still fits
    text, kept = _section([*codes, "ZZ-99"], {}, phrase, room)
    assert codes[0] in text and codes[1] not in text
    assert ("ZZ-99" in text) is (long_before < MISSES_IN_A_ROW)
    assert kept == text.count("\n- ")


class ForgetfulEngine(EngineDouble):
    """A summarizer that paraphrases identifiers away, then quotes only what it is told."""

    def summarize_messages(
        self, messages: list[Message], *, model: str, tools: Any = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        super().summarize_messages(messages, model=model, tools=tools, max_tokens=max_tokens)
        system = str(messages[0].get("content"))
        if "must quote" in system:  # the re-ask: quote the first identifier listed only
            first = system.split("exactly as written: ", 1)[1].split("; ")[0].rstrip(".")
            return ModelReply(text=f"The user gave an order reference, {first}.", model=model)
        return ModelReply(text="The user gave an order reference and paid.", model=model)


def summarising(**params: Any) -> tuple[Any, Recorder]:
    rec = Recorder()
    params.setdefault("summarizer", {"type": "llm", "params": {"context_window": 100_000}})
    raw = {"type": "summarising", "params": {"keep_turns": 1, **params}}
    return bind("context_manager", Binding.model_validate(raw), make_ctx(rec.runtime)), rec


def history() -> History:
    turns = [[{"role": "user", "content": f"Turn {i}. " + (FACTS if i == 0 else "x" * 1600)},
              {"role": "assistant", "content": f"Noted {i}."}] for i in range(9)]
    return History([m for t in turns for m in t])


def budget(cm: Any) -> ContextBudget:
    return ContextBudget.compute(window=3_000, reserve=0, fixed=FixedCosts(system=10),
                                 settings=cm.budget_settings)


def test_reask_re_asks_once_then_appends_what_is_still_missing() -> None:
    # The re-ask is opt-in since issue 22 (the default repair makes no call).
    cm, rec = summarising(identifier_check="reask")
    engine = ForgetfulEngine()
    managed = cm.manage_history(history(), budget(cm), engine=engine)
    assert managed.compacted and len(engine.calls) == 2, "one summary call, one re-ask"
    reask = engine.calls[1]["messages"]
    assert "ORD-7781" in reask[0]["content"] and "must quote" in reask[0]["content"]
    [event] = rec.of("summary.checked")
    assert event.data["found"] == 0 and event.data["repaired"] == 1
    # The section gets half the summary's room; what does not fit is counted, not hidden.
    assert event.data["appended"] >= 3
    assert event.data["appended"] + event.data["missing"] == event.data["identifiers"] - 1
    summary = cm.state.summary
    assert "ORD-7781" in summary and SECTION_HEAD in summary
    section = summary.split(SECTION_HEAD, 1)[1]
    assert "- RC-7186: " in section and "refund case RC-7186" in section, "with its phrase"
    assert cm.state.identifiers["missing"] == event.data["missing"]


def test_warn_counts_without_repairing_and_off_skips_the_check() -> None:
    cm, rec = summarising(identifier_check="warn")
    engine = ForgetfulEngine()
    cm.manage_history(history(), budget(cm), engine=engine)
    [event] = rec.of("summary.checked")
    assert len(engine.calls) == 1 and event.data["missing"] == event.data["identifiers"] > 5
    assert SECTION_HEAD not in cm.state.summary
    cm, rec = summarising(identifier_check="off")
    cm.manage_history(history(), budget(cm), engine=ForgetfulEngine())
    assert rec.of("summary.checked") == [] and cm.state.summary is not None


def test_the_summary_is_written_from_the_originals_not_the_pruned_text() -> None:
    """Issue 10, item 3: pruning shapes what is sent verbatim, never what is summarized."""
    cm, _ = summarising(identifier_check="off")
    big = "Result: code ZX-4242 " + "y" * 30_000
    h = History([
        {"role": "user", "content": "Look it up."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "find", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": big},
        {"role": "assistant", "content": "Found it."},
        *[m for i in range(8) for m in ({"role": "user", "content": f"next {i} " + "u" * 1600},
                                        {"role": "assistant", "content": "ok"})],
    ])
    h.replace(2, {**h.message(2), "content": "[Old tool result content cleared]"})
    engine = EngineDouble()
    cm.manage_history(h, budget(cm), engine=engine)
    sent = " ".join(str(m.get("content")) for c in engine.calls for m in c["messages"])
    assert "ZX-4242" in sent and "[Old tool result content cleared]" not in sent
    assert h.original(2)["content"] == big


@pytest.mark.parametrize("request_mode", ["standalone", "replay"])
def test_user_instructions_govern_update_summaries_too(request_mode: str) -> None:
    """Issue 12, item 2: the update step wraps the user's instructions, never replaces them
    (in both request shapes: the instruction is the system prompt, or replay's last turn)."""
    cm, _ = summarising(
        identifier_check="off",
        summarizer={"type": "llm", "params": {"instructions": "Write in French.",
                                              "context_window": 100_000,
                                              "request_mode": request_mode}},
    )
    engine = EngineDouble()
    h = history()
    cm.manage_history(h, budget(cm), engine=engine)
    cm.commit(h)
    h.extend([m for i in range(6, 12) for m in (
        {"role": "user", "content": f"Turn {i}. " + "z" * 1600},
        {"role": "assistant", "content": "ok"})])
    cm.manage_history(h, budget(cm), engine=engine)
    assert len(engine.calls) == 2
    update = engine.calls[1]["messages"]
    update_prompt = (update[0] if request_mode == "standalone" else update[-1])["content"]
    assert "Write in French." in update_prompt and "existing summary" in update_prompt.lower()


def test_offline_mini_loses_identifiers_and_quotes_half_when_asked() -> None:
    material = [{"role": "system", "content": "Summarize the conversation turns below."},
                {"role": "user", "content": "Conversation turns (JSON):\n" + FACTS}]
    lossy = respond(material, max_tokens=500, model="mini").text
    assert "ORD-7781" not in lossy and "the reference" in lossy
    asked = [{**material[0], "content": material[0]["content"] + " The summary must quote "
              "each of these identifiers exactly as written: ORD-7781; 15 kg."}, material[1]]
    quoted = respond(asked, max_tokens=500, model="mini").text
    assert "ORD-7781" in quoted and "15 kg" not in quoted
    assert "ORD-7781" in respond(material, max_tokens=500).text, "offline/default keeps it"


class OnlyCodes:
    """A third party's extractor: only codes that start with TKT-."""

    def __init__(self, params: Any, ctx: Any) -> None:
        self.params = params

    def extract(self, messages: list[Message]) -> list[str]:
        return [w.strip(".,") for m in messages for w in str(m.get("content")).split()
                if w.startswith("TKT-")]


class ExtractorPlugin:
    @hookimpl
    def mas_register_identifier_extractors(self, registry: Any) -> None:
        registry.register("only_codes", OnlyCodes, description="TKT- codes only")


def test_a_plugin_replaces_the_extractor_through_the_registry(register_plugin) -> None:
    runtime = register_plugin(ExtractorPlugin(), "only-codes")
    assert "only_codes" in runtime.registries.identifier_extractor.names()
    raw = {"type": "summarising", "params": {
        "keep_turns": 1, "identifier_extractor": {"type": "only-codes"},
        "summarizer": {"type": "llm", "params": {"context_window": 100_000}}}}
    events: list[Any] = []
    runtime.add_listener(events.append)
    cm = bind("context_manager", Binding.model_validate(raw), make_ctx(runtime))
    h = History([m for i in range(9) for m in (
        {"role": "user", "content": f"Ticket TKT-{i}0 about ORD-{i}1 " + "w" * 1600},
        {"role": "assistant", "content": "ok"})])
    cm.manage_history(h, budget(cm), engine=EngineDouble())
    [checked] = [e for e in events if e.name == "summary.checked"]
    assert checked.data["identifiers"] >= 1
    assert "- TKT-00: " in cm.state.summary and "- ORD-01: " not in cm.state.summary


def test_an_unknown_extractor_is_a_one_line_error_naming_the_field() -> None:
    with pytest.raises(MasError) as info:
        summarising(identifier_extractor={"type": "nope"})
    assert "identifier_extractor" in str(info.value) and "standard" in str(info.value)


def _first_sentence(messages: list[Message], identifier: str) -> str:
    """The phrase rule stated directly: the first sentence holding it, whitespace folded."""
    for message in messages:
        content = message.get("content")
        if not isinstance(content, str):
            continue
        for sentence in re.split(r"(?<=[.!?])\s+|\n+", content):
            if identifier in sentence:
                sentence = " ".join(sentence.split()).removeprefix("- ")
                if len(sentence) <= PHRASE_CHARS:
                    return sentence
                at = max(0, sentence.index(identifier) - PHRASE_CHARS // 3)
                return "..." + sentence[at : at + PHRASE_CHARS] + "..."
    return identifier


_WORDS = st.sampled_from(["RC-7186", "BK-4471", "refund", "case", ".", "!", "\n", " ", "- ",
                          "x" * 90, "INV-0042.", "tool"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_WORDS, max_size=30).map("".join), max_size=4),
       st.lists(st.sampled_from(["RC-7186", "BK-4471", "INV-0042", "absent"]), max_size=6))
def test_phrases_split_each_message_once_and_give_the_first_sentence(
    texts: list[str], identifiers: list[str]
) -> None:
    messages: list[Message] = [{"role": "tool", "content": t} for t in texts]
    messages.insert(len(messages) // 2, {"role": "assistant", "content": None})
    phrase = _Phrases(messages)
    assert [phrase(i) for i in identifiers] == [_first_sentence(messages, i) for i in identifiers]


class CountingCodes(OnlyCodes):
    """:class:`OnlyCodes` that records what it was asked to read."""

    calls: list[list[str]] = []

    def extract(self, messages: list[Message]) -> list[str]:
        CountingCodes.calls.append([str(m.get("content")).split(" w")[0] for m in messages])
        return super().extract(messages)


class CountingPlugin:
    @hookimpl
    def mas_register_identifier_extractors(self, registry: Any) -> None:
        registry.register("counting_codes", CountingCodes, description="counts its calls")


def test_each_folded_message_is_read_once_and_the_running_set_survives_a_restore(
    register_plugin,
) -> None:
    """Issue 22: identifiers are extracted once per message, one message per call, and the
    running summary's set is carried (through to_state / load_state), never re-read."""
    runtime = register_plugin(CountingPlugin(), "counting-codes")
    raw = {"type": "summarising", "params": {
        "keep_turns": 1, "identifier_extractor": {"type": "counting-codes"},
        "summarizer": {"type": "llm", "params": {"context_window": 100_000}}}}
    CountingCodes.calls = []
    cm = bind("context_manager", Binding.model_validate(raw), make_ctx(runtime))
    h = History([m for i in range(9) for m in (
        {"role": "user", "content": f"Ticket TKT-{i}0 " + "w" * 1600},
        {"role": "assistant", "content": f"ok {i}"})])
    engine = ForgetfulEngine()
    cm.manage_history(h, budget(cm), engine=engine)
    cm.commit(h)
    first = list(CountingCodes.calls)
    assert first and all(len(call) == 1 for call in first), "one message per call"
    kept = cm.state.summary_identifiers
    assert kept and "TKT-00" in kept and all(i in cm.state.summary for i in kept)
    restored = bind("context_manager", Binding.model_validate(raw), make_ctx(runtime))
    restored.load_state(cm.to_state())
    h.extend([m for i in range(9, 18) for m in (
        {"role": "user", "content": f"Ticket TKT-{i}0 " + "w" * 1600},
        {"role": "assistant", "content": f"ok {i}"})])
    restored.manage_history(h, budget(restored), engine=engine)
    later = CountingCodes.calls[len(first):]
    assert later and not any(c[0].startswith("Summary") for c in later), "summary not re-read"
    read = [c[0] for c in CountingCodes.calls]
    assert len(read) == len(set(read)), "no message read twice"
    checked = restored.state.identifiers["identifiers"] - cm.state.identifiers["identifiers"]
    assert checked >= len(kept) + 1, "the carried set is checked with the new codes"
    assert all(i in restored.state.summary for i in restored.state.summary_identifiers)


_TEXTS = st.lists(st.lists(st.sampled_from(
    ["ORD-7781", "RC-7186", "15 kg", "$30", "and", "the", "INV-0042", " ", ". "]),
    max_size=12).map(" ".join), min_size=1, max_size=8)


@settings(max_examples=150, deadline=None)
@given(_TEXTS, st.integers(1, 6), st.integers(0, 3))
def test_per_message_extraction_finds_what_one_call_over_the_range_finds(
    texts: list[str], limit: int, first: int
) -> None:
    """Issue 22: one extract call per message (cached by position), capped across the fold,
    wants what one call over the folded range wanted, in the same order."""
    from mas.library.standard.plugins.context.identifier_check import IdentifierCheck
    from mas.library.standard.plugins.context.identifiers import (
        StandardExtractorParams,
        StandardIdentifierExtractor,
    )

    extractor = StandardIdentifierExtractor(StandardExtractorParams(max_identifiers=limit))
    messages: list[Message] = [{"role": "user", "content": t} for t in texts]
    check = IdentifierCheck("repair", extractor)
    fold = check.identifiers(messages[first:], first, ())
    assert fold.wanted == extractor.extract(messages[first:])
    # The running set comes first and on top of the cap; the cached messages answer again.
    again = check.identifiers(messages[first:], first, ["KEPT-1"])
    assert again.wanted == ["KEPT-1", *fold.wanted]
    assert again.rank["KEPT-1"] == 2 and all(again.rank[i] == 0 for i in fold.wanted)
