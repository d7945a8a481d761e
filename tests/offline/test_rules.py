"""The offline model's rules, called directly (no LiteLLM): what it can and cannot show."""

from __future__ import annotations

import json
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mas.library.standard.offline import DONT_KNOW, NOTHING_TO_KEEP, respond
from mas.library.standard.offline._summary import clause_around

SYSTEM = {"role": "system", "content": "You are a support agent."}
TOOLS = [{"type": "function", "function": {
    "name": "lookup_order", "parameters": {"type": "object", "properties": {}}}}]


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict:
    return {"role": "assistant", "content": text}


FACTS = [
    SYSTEM,
    user("Hi. My order ID is ORD-55120 and it cost 129.90 EUR."),
    assistant("Noted."),
    user("I like walking my dog on weekends."),
    assistant("Noted."),
]


@pytest.mark.parametrize(("question", "expected"), [
    ("What was my order ID?", "ORD-55120"),
    ("How much did it cost?", "129.90 EUR"),
])
def test_a_question_is_answered_from_a_fact_in_the_request(question, expected):
    answer = respond([*FACTS, user(question)])
    assert expected in answer.text and answer.rule == "question"


def test_a_fact_no_longer_in_the_request_is_not_known():
    trimmed = [SYSTEM, FACTS[3], FACTS[4], user("What was my order ID?")]
    answer = respond(trimmed)
    assert answer.text.startswith(DONT_KNOW)
    assert "order" in answer.text and "ORD-55120" not in answer.text


def test_the_latest_statement_of_a_fact_wins():
    messages = [*FACTS, user("Correction: my order ID is ORD-99001."), assistant("Noted."),
                user("What is my order ID?")]
    assert "ORD-99001" in respond(messages).text


def test_earlier_questions_and_dont_knows_are_not_facts():
    messages = [SYSTEM, user("What is my booking reference?"),
                assistant(f"{DONT_KNOW}: nothing in this conversation mentions booking."),
                user("What is my booking reference?")]
    assert respond(messages).text.startswith(DONT_KNOW)


def test_facts_in_the_system_message_and_tool_results_count():
    messages = [{"role": "system", "content": "Customer name: Grace Hopper"},
                user("Who is the customer? What is the customer name?")]
    assert "Grace Hopper" in respond(messages).text


def test_a_statement_is_acknowledged():
    assert respond([SYSTEM, user("I will travel next week.")]).text == "Noted."


RECALL = [{"type": "function", "function": {
    "name": "recall_context", "parameters": {"type": "object", "properties": {}}}}]
TRANSCRIPT = ("Session 4, 27 June 2023 (Caroline and Melanie)\n"
              "Caroline: Hey Mel, how was the camping trip?\n"
              "Melanie: Lovely, the kids roasted marshmallows by the lake.")


def test_a_pasted_transcript_ending_in_a_statement_is_noted_not_recalled_for():
    answer = respond([SYSTEM, user(TRANSCRIPT)], tools=RECALL)
    assert (answer.text, answer.tool_calls) == ("Noted.", [])


def test_a_question_on_the_last_line_is_still_asked_and_recalled_for():
    answer = respond([SYSTEM, user(TRANSCRIPT + "\nWhere did Caroline move from?")],
                     tools=RECALL)
    assert answer.rule == "recall" and answer.tool_calls


def test_a_transcript_ending_on_a_speakers_question_is_the_other_speakers_to_answer():
    ended = TRANSCRIPT + "\nCaroline: And did you see the lake at night?"
    answer = respond([SYSTEM, user(ended)], tools=RECALL)
    assert (answer.text, answer.tool_calls) == ("Noted.", [])
    # key: value lines name a different key each: no dialog, so the question stands
    facts = "Order: ORD-7781\nAmount: 142.50 EUR\nQuestion: what is the order?"
    assert respond([SYSTEM, user(facts)], tools=RECALL).rule != "statement"


def test_the_recall_query_is_the_question_in_its_own_words():
    answer = respond([SYSTEM, user(TRANSCRIPT + "\nWhere did Caroline move from? "
                                              "And what did Melanie roast?")], tools=RECALL)
    query = json.loads(answer.tool_calls[0]["function"]["arguments"])["query"]
    assert query == "Caroline move; Melanie roast", "each question, unstemmed, the chat left out"


def test_the_same_request_always_gets_the_same_answer():
    messages = [*FACTS, user("What was my order ID?")]
    assert respond(messages) == respond(json.loads(json.dumps(messages)))


# --- summaries ----------------------------------------------------------------------


def test_a_summary_request_keeps_identifiers_numbers_and_names_verbatim():
    messages = [*FACTS, user("Also, ship it to Maria Lopez at 4 Elm Road."), assistant("Noted."),
                user("Please summarize our conversation so far.")]
    answer = respond(messages)
    assert answer.rule == "summary" and answer.text.startswith("- ")
    assert "ORD-55120" in answer.text and "129.90 EUR" in answer.text
    assert "Maria Lopez" in answer.text and "4 Elm Road" in answer.text
    assert "walking my dog" not in answer.text
    assert "You are a support agent" not in answer.text  # the system prompt is not material


def test_the_out_of_band_summarizer_shape_reads_a_json_transcript():
    payload = json.dumps([
        {"role": "user", "content": "Invoice INV-2291 is overdue by 14 days."},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "[skill content retained verbatim: refunds]"},
        {"role": "user", "content": "the weather is nice"},
    ])
    messages = [{"role": "system", "content": "Summarize the older turns below."},
                {"role": "user", "content": payload}]
    text = respond(messages).text
    assert "INV-2291" in text and "14 days" in text
    assert "[skill content retained verbatim: refunds]" in text
    assert "weather" not in text


def test_a_summary_within_max_tokens_drops_the_oldest_details_first():
    turns = [SYSTEM]
    for n in range(30):
        turns += [user(f"Parcel P-{1000 + n} weighs {n + 1} kg."), assistant("Noted.")]
    turns.append(user("Summarize everything."))
    text = respond(turns, max_tokens=40).text
    assert len(text) <= 160
    assert "P-1029" in text and "P-1000" not in text


def test_a_conversation_without_details_gets_an_empty_summary():
    text = respond([SYSTEM, user("hello there"), assistant("Noted."), user("summarise")]).text
    assert text == NOTHING_TO_KEEP


def test_the_update_template_merges_the_previous_summary_and_new_json_turns():
    turns = json.dumps([{"role": "user", "content": "The refund R-778 was approved."},
                        {"role": "assistant", "content": "Noted."}])
    messages = [
        {"role": "system", "content": "Update the existing checkpoint with the new turns."},
        {"role": "user", "content": "Existing summary:\n- Order ORD-1 ships to Oslo.\n\n"
                                    f"New conversation turns (JSON):\n{turns}"},
    ]
    text = respond(messages).text
    assert text == "- Order ORD-1 ships to Oslo.\n- The refund R-778 was approved."


def test_a_replayed_update_keeps_the_earlier_summary_row_and_masks_skills():
    messages = [
        SYSTEM,
        {"role": "system",
         "content": "Summary of the earlier conversation:\n- Ticket T-9 is open."},
        {"role": "tool", "tool_call_id": "c1",
         "content": '<skill_content name="refunds">Refund limit 500 EUR.</skill_content>'},
        user("My seat is 14C."), assistant("Noted."),
        user("Stop here and do not call any tool. Summarize the conversation above."),
    ]
    text = respond(messages).text
    assert "Ticket T-9 is open." in text and "My seat is 14C." in text
    assert "[skill content retained verbatim: refunds]" in text
    assert "Refund limit" not in text and "support agent" not in text


# --- scripted tool calls --------------------------------------------------------------


def test_a_scripted_call_is_emitted_when_the_tool_is_offered():
    messages = [SYSTEM, user('Check my order.\nCALL lookup_order {"id": "ORD-55120"}')]
    answer = respond(messages, TOOLS)
    (call,) = answer.tool_calls
    assert call["function"] == {"name": "lookup_order", "arguments": '{"id": "ORD-55120"}'}
    assert call["id"].startswith("call_") and answer.text == ""
    assert respond(messages, TOOLS).tool_calls[0]["id"] == call["id"]


def test_after_the_result_the_answer_uses_it():
    first = respond([SYSTEM, user('CALL lookup_order {"id": "A"}')], TOOLS).tool_calls[0]
    messages = [SYSTEM, user('CALL lookup_order {"id": "A"}'),
                {"role": "assistant", "content": None, "tool_calls": [first]},
                {"role": "tool", "tool_call_id": first["id"], "content": "status: shipped"}]
    answer = respond(messages, TOOLS)
    assert answer.text == "lookup_order returned: status: shipped" and not answer.tool_calls


def test_several_scripted_calls_go_out_one_by_one():
    tools = [*TOOLS, {"type": "function", "function": {"name": "refund", "parameters": {}}}]
    script = user('CALL lookup_order {"id": "A"}\nCALL refund {"amount": 5}')
    first = respond([SYSTEM, script], tools).tool_calls[0]
    after_first = [SYSTEM, script, {"role": "assistant", "content": None, "tool_calls": [first]},
                   {"role": "tool", "tool_call_id": first["id"], "content": "found"}]
    second = respond(after_first, tools).tool_calls[0]
    assert second["function"]["name"] == "refund" and second["id"] != first["id"]
    done = [*after_first, {"role": "assistant", "content": None, "tool_calls": [second]},
            {"role": "tool", "tool_call_id": second["id"], "content": "refunded 5"}]
    assert respond(done, tools).text == "lookup_order returned: found\nrefund returned: refunded 5"


def test_a_scripted_call_to_a_missing_tool_is_refused_in_words():
    answer = respond([SYSTEM, user("CALL delete_everything {}")], TOOLS)
    assert answer.tool_calls == []
    assert answer.text == (
        "I can't call delete_everything: it is not among the available tools (lookup_order)."
    )


def test_bad_json_arguments_are_reported():
    answer = respond([SYSTEM, user("CALL lookup_order {id: A}")], TOOLS)
    assert answer.text == "I can't call lookup_order: its arguments are not valid JSON."


# --- judge --------------------------------------------------------------------------


def verdict(*messages: dict, response_format: dict | None = None) -> dict:
    return json.loads(respond(list(messages), response_format=response_format).text)


JUDGE = {"role": "system", "content": 'You are a judge. Answer in JSON: {"score": 0 or 1, '
         '"reasoning": "...", "evidence": "..."}'}


def test_expected_items_found_in_the_material_score_one():
    result = verdict(JUDGE, user("Expected: ORD-55120; 129.90\nTranscript:\nuser: my order is "
                                 "ORD-55120\nassistant: it cost 129.90"))
    assert result == {"score": 1, "reasoning": "all 2 expected item(s) appear in the material",
                      "evidence": ["ORD-55120", "129.90"]}


def test_a_missing_expected_item_scores_zero_and_is_named():
    result = verdict(JUDGE, user("Expected: ORD-55120; Maria\nTranscript:\nassistant: ORD-55120"))
    assert result["score"] == 0 and result["evidence"] == ["Maria"]


def test_without_expectations_a_dont_know_answer_fails():
    bad = verdict(JUDGE, user("Transcript:\nuser: order id?\nassistant: I don't know: nothing "
                              "in this conversation mentions id, order."))
    good = verdict(JUDGE, user("Transcript:\nuser: order id?\nassistant: ORD-55120"))
    (quote,) = bad["evidence"]
    assert bad["score"] == 0 and quote.startswith("assistant: I don't know")
    assert good == {"score": 1, "reasoning": "no reply admits missing information",
                    "evidence": []}


def test_a_likert_prompt_gets_five_or_one():
    system = {"role": "system", "content": 'Rate 1-5. Reply JSON {"score": n}.'}
    assert verdict(system, user("assistant: ORD-55120"))["score"] == 5
    assert verdict(system, user("assistant: I don't know"))["score"] == 1


def test_the_jury_request_shape_gets_a_usable_verdict():
    system = {"role": "system", "content": "You are one juror. Answer with a single JSON "
              "object and nothing else."}
    instructions = ('Criterion: InformationRetention\nScore on this scale: 0 or 1.\n'
                    'Reply with only this JSON object: {"score": <0 or 1>, "reasoning": "<...>", '
                    '"evidence": ["<short exact quote from the material>", ...]}')
    material = ("<<<MAS_JUDGED_MATERIAL>>>\n[1] user: my order is ORD-1\n[2] user: order?\n"
                "[3] assistant: I don't know: nothing in this conversation mentions order.\n"
                "<<<END_MAS_JUDGED_MATERIAL>>>")
    result = verdict(system, user(f"{instructions}\n\n{material}\n\n{instructions}"),
                     response_format={"type": "json_object"})
    assert result["score"] == 0
    assert result["evidence"] == [
        "[3] assistant: I don't know: nothing in this conversation mentions order."
    ]


def test_a_json_response_format_alone_selects_the_judge():
    result = verdict(user("Did the agent recall the amount?"),
                     response_format={"type": "json_object"})
    assert set(result) == {"score", "reasoning", "evidence"}


def test_enumerated_filler_collapses_and_identifiers_outlive_it():
    turns = [SYSTEM, user("My order id is ORD-7781."), assistant("Noted.")]
    for n in range(40):
        turns += [user(f"Question {n} about topic {n}. Detail 0: some text about topic {n}. "
                       f"Detail 1: some text about topic {n}."), assistant("Noted.")]
    turns.append(user("Please summarize."))
    text = respond(turns, max_tokens=60).text
    assert text.startswith("- My order id is ORD-7781.")
    assert "Detail 1:" not in text  # same template as "Detail 0: ..." of the same topic
    assert len(text) <= 240


# The clause finder offline/mini quotes with: it must pick exactly what a regular
# expression with a clause on either side of the identifier picks, without its
# scan from every start position (a long session's summary took seconds).
_CLAUSE = r'(?:[^".\[\]{}\n]|\.(?=\S))*'
_TEXT = st.text(alphabet='ab .-"[]{}\n\t\u2003', max_size=60)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(_TEXT, min_size=1, max_size=5), identifier=st.text("ab.-", max_size=4))
def test_clause_around_picks_what_the_clause_regex_picks(pieces: list[str], identifier: str) -> None:
    material = identifier.join(pieces)
    found = re.search(_CLAUSE + re.escape(identifier) + _CLAUSE, material)
    assert clause_around(material, identifier) == (found.group(0) if found else None)


def test_clause_around_stays_fast_on_a_long_session() -> None:
    material = " ".join(f"Room R-{i} is booked for the afternoon sync." for i in range(4000))
    # This thread's CPU time: time a loaded machine gives other processes does not count.
    started = time.thread_time()
    for i in range(3980, 4000):
        assert clause_around(material, f"R-{i}") == f" Room R-{i} is booked for the afternoon sync"
    assert clause_around(material, "R-99999") is None
    assert time.thread_time() - started < 0.5  # the regex: about 0.1 s per identifier here
