"""Issue 23, "Summaries with content": the offline summary skips session headers and
greetings, keeps the informative sentences (facts, names, numbers, plans), and fits the
room it is given, so no caller cuts it in the middle."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mas.library.standard.offline import NOTHING_TO_KEEP, respond
from mas.library.standard.offline._lines import header_date, is_greeting
from mas.runtime.context import DEFAULT_ESTIMATOR, omission_marker

ASK = {"role": "system", "content": "Summarize the conversation turns below."}

SESSION_1 = """[Session 1 — 1:56 pm on 8 May, 2023]
Caroline: Hey Mel! Good to see you! How have you been?
Melanie: Hey Caroline! I'm swamped with the kids & work. What's up with you?
Caroline: I went to a LGBTQ support group yesterday and it was so powerful.
Melanie: Wow, that's cool, Caroline! What happened that was so awesome?
Melanie: I'm going to a pottery class with Priya Haddad next week.
Caroline: Thanks, Mel! Bye!"""

SESSION_2 = """[Session 2 — 10:37 am on 27 June, 2023]
Melanie: Hi!
Caroline: Hi Mel. I started researching adoption agencies in Boston; it has been a dream.
Melanie: That's great! I ran a charity race for mental health last Saturday."""


def summary(*texts: str, max_tokens: int | None = None, ask: dict | None = None) -> str:
    messages = [ask or ASK, *({"role": "user", "content": t} for t in texts)]
    return respond(messages, max_tokens=max_tokens).text


def test_headers_and_greetings_are_skipped_and_the_informative_lines_kept() -> None:
    text = summary(SESSION_1, SESSION_2)
    assert text.splitlines() == [
        "- [1:56 pm on 8 May, 2023] Caroline: I went to a LGBTQ support group yesterday "
        "and it was so powerful.",
        "- Melanie: I'm going to a pottery class with Priya Haddad next week.",
        "- [10:37 am on 27 June, 2023] Caroline: Hi Mel. I started researching adoption "
        "agencies in Boston; it has been a dream.",
        "- Melanie: That's great! I ran a charity race for mental health last Saturday.",
    ]


def test_a_speaker_line_is_kept_whole_as_the_conversation_said_it() -> None:
    # A label is a speaker when it opens two lines or more; the line's greeting stays
    # with its detail, so the summary quotes the line and a search finds it again.
    text = summary("Caroline: Hi Mel! My new address is 4 Elm Road, Oslo.\n"
                   "Melanie: Great! See you soon.\nCaroline: Bye!\nMelanie: Bye!")
    assert text == "- Caroline: Hi Mel! My new address is 4 Elm Road, Oslo."


def test_a_summary_of_a_summary_keeps_its_lines_whole_and_their_dates() -> None:
    # The running summary is folded again with newer turns: each dated line opens its
    # session again, so the dates survive and the speakers' lines are not cut up.
    first = summary(SESSION_1, SESSION_2)
    again = summary(first, "[Session 3 — 9:00 am on 2 July, 2023]\n"
                    "Caroline: Hi! I adopted a dog called Biscuit in Boston on Friday.")
    assert again.splitlines() == [*first.splitlines(),
                                  "- [9:00 am on 2 July, 2023] Caroline: Hi! I adopted a dog "
                                  "called Biscuit in Boston on Friday."]


def test_when_the_room_is_short_the_date_moves_with_the_lines_left() -> None:
    text = summary(SESSION_1, SESSION_2, max_tokens=30)
    assert text == ("- [1:56 pm on 8 May, 2023] Melanie: I'm going to a pottery class with "
                    "Priya Haddad next week.")


def test_a_conversation_of_greetings_only_keeps_nothing() -> None:
    assert summary("[Session 4 — 2 pm on 9 May, 2023]\nMel: Hi!\nCaroline: Hey Mel, how are"
                   " you?\nMel: Good to see you!\nCaroline: Thanks, bye!") == NOTHING_TO_KEEP


def test_the_identifiers_a_re_ask_lists_outrank_the_other_lines() -> None:
    # The identifier check's re-ask: quoting what it lists beats keeping the best details.
    material = "\n".join(f"Parcel P-{1000 + n} weighs {n + 1} kg." for n in range(30))
    plain = summary(material, max_tokens=30)
    asked = summary(material, max_tokens=30, ask={
        "role": "system", "content": "Summarize. The summary must quote each of these "
        "identifiers exactly as written: P-1003; P-1004."})
    assert "P-1003" not in plain and "P-1003" in asked and "P-1004" in asked


def test_header_dates() -> None:
    assert header_date("[Session 3 — 1:56 pm on 8 May, 2023]") == (
        True, "1:56 pm on 8 May, 2023")
    assert header_date("## Session 12") == (True, None)
    assert header_date("DATE: 2023-05-08") == (True, "2023-05-08")
    assert header_date("On 8 May 2023 I went to the park.") == (False, None)
    assert header_date("Session notes: the order ORD-1 shipped") == (False, None)
    # how the LoCoMo reader heads a session: who takes part closes it
    assert header_date("Session 1, 1:56 pm on 8 May, 2023 (Caroline and Melanie)") == (
        True, "1:56 pm on 8 May, 2023")
    assert header_date("Session 3 (bought a car)") == (False, None)


def test_greetings_with_names_are_small_talk_and_statements_are_not() -> None:
    for text in ("Hi!", "Hey Mel, good to see you!", "Thanks, Caroline!", "Good morning.",
                 "Wow, that's so cool!", "Take care, bye!"):
        assert is_greeting(text), text
    for text in ("Hi, I moved to Oslo.", "Good news: the refund R-7 came.", "I adopted a dog."):
        assert not is_greeting(text), text


_DENSE = st.sampled_from([
    "Order ORD-7781 costs $1,250.00.", "Meet at 14:30 on 2023-05-08.", "Henrik Dubois called.",
    "Ship 15 kg to /var/log/a.b.", "Invoice INV-2024-0042 is due.", "Hi!", "[Session 2]",
    "Priya said the code is RC-7186; the total is 99.90 EUR.", "é" * 30 + " 123",
])


@settings(max_examples=60, deadline=None)
@given(st.lists(_DENSE, min_size=1, max_size=60), st.integers(min_value=8, max_value=400))
def test_the_summary_fits_its_room_so_no_caller_cuts_it(pieces: list[str], room: int) -> None:
    # The summarizer cuts a reply over its room in the middle, and the offline handler cuts
    # one over max_tokens at the end: an extractive summary never needs either.
    text = summary("\n".join(f"{p} (#{i})" for i, p in enumerate(pieces)), max_tokens=room)
    assert text == NOTHING_TO_KEEP or DEFAULT_ESTIMATOR.text(text) <= room
    assert omission_marker(0).strip()[:5] not in text


def test_every_session_keeps_a_line_before_any_session_loses_its_last() -> None:
    # A session's date is an identifier the check looks for: cutting whole sessions first
    # would leave it to the appended section, and that section to a cut of the prose.
    sessions = [f"[Session {n} — {n}:15 pm on {n} May, 2023]\n" + "\n".join(
        f"Mel: I painted a large {colour} picture of the old {place} and its lighthouse."
        for colour in ("red", "blue", "green", "grey"))
        for n, place in enumerate(("harbour", "bridge", "castle", "market", "station"), 1)]
    text = summary(*sessions, max_tokens=150)
    assert all(f"{n}:15 pm on {n} May, 2023" in text for n in range(1, 6))
    assert DEFAULT_ESTIMATOR.text(text) <= 150
