"""The ``llm`` and ``drop`` summarizers: spec 000 (model, instructions, bind log line),
spec 002 (prefix-cache-friendly request, only text kept), spec 004 (checkpoint, update
prompt, maxSummaryTokens) and the input bound by the summarizer model's window."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.library.standard.plugins.context.summarizer import _item_cost, _turns_json
from mas.runtime.context import DEFAULT_ESTIMATOR
from mas.runtime.protocols import Message, SummarizerError, SummaryRequest
from mas.runtime.spec.binding import Binding, bind

TURNS = [
    {"role": "user", "content": "Book Paris for 12 May"},
    {"role": "assistant", "content": "Booked, ref PX-42"},
]
SPEC_000_DEFAULT_MEANING = (
    "concisely",
    "key facts",
    "decisions",
    "identifier (names, IDs, numbers)",
    "plain prose, not a transcript",
)


def summarizer(recorder, ctx_factory, raw, **ctx):
    return bind("summarizer", Binding.model_validate(raw), ctx_factory(recorder.runtime, **ctx))


def test_bind_logs_model_source_agent_model_and_instructions(recorder, ctx_factory, caplog) -> None:
    """Spec 000 Logs table: `summarizer llm: model=… source=… agent_model=…
    instructions=default|override` on logger mas.library.standard.plugins.context.summarizer."""
    with caplog.at_level(logging.INFO, logger="mas.library.standard.plugins.context.summarizer"):
        summarizer(recorder, ctx_factory, "llm")
        summarizer(
            recorder,
            ctx_factory,
            {"type": "llm", "params": {"model": "gpt-4o-mini", "instructions": "One paragraph."}},
        )
    lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == "mas.library.standard.plugins.context.summarizer"
    ]
    assert lines == [
        "summarizer llm: model=gpt-4o source=agent agent_model=gpt-4o instructions=default",
        "summarizer llm: model=gpt-4o-mini source=override agent_model=gpt-4o "
        "instructions=override",
    ]


def test_default_prompt_is_spec_000s_and_input_is_json(
    recorder, ctx_factory, engine_double
) -> None:
    """Spec 000 "Trigger vs prompt": a system prompt plus JSON of older turns."""
    s = summarizer(recorder, ctx_factory, "llm")
    engine = engine_double()
    result = s.summarize(SummaryRequest(TURNS, window=128_000), engine)
    system, user = engine.calls[0]["messages"]
    for phrase in SPEC_000_DEFAULT_MEANING:
        assert phrase in system["content"]
    assert json.loads(user["content"].split("\n", 1)[1]) == [
        {"role": "user", "content": TURNS[0]["content"]},
        {"role": "assistant", "content": TURNS[1]["content"]},
    ]
    assert (result.text, result.model, result.model_source, result.llm_calls) == (
        "SUMMARY-1",
        "gpt-4o",
        "agent",
        1,
    )
    assert engine.calls[0]["tools"] is None


def test_instructions_override_and_empty_means_default(
    recorder, ctx_factory, engine_double
) -> None:
    """Spec 000: "Override with summarizer.params.instructions. Empty / omitted → default"."""
    engine = engine_double()
    summarizer(
        recorder, ctx_factory, {"type": "llm", "params": {"instructions": "Only cities."}}
    ).summarize(SummaryRequest(TURNS), engine)
    summarizer(recorder, ctx_factory, {"type": "llm", "params": {"instructions": "  "}}).summarize(
        SummaryRequest(TURNS), engine
    )
    assert engine.calls[0]["messages"][0]["content"] == "Only cities."
    assert "plain prose" in engine.calls[1]["messages"][0]["content"]


def test_checkpoint_style_asks_for_spec_004_sections(recorder, ctx_factory, engine_double) -> None:
    """Spec 004: Goal, Constraints & Preferences, Progress, Key Decisions, Next Steps,
    Critical Context; the update prompt merges new messages into the checkpoint."""
    s = summarizer(recorder, ctx_factory, {"type": "llm", "params": {"style": "checkpoint"}})
    engine = engine_double()
    s.summarize(SummaryRequest(TURNS), engine)
    s.summarize(SummaryRequest(TURNS, previous_summary="## Goal\nTrip"), engine)
    first, update = (
        engine.calls[0]["messages"][0]["content"],
        engine.calls[1]["messages"][0]["content"],
    )
    for section in (
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "## Key Decisions",
        "## Next Steps",
        "## Critical Context",
    ):
        assert section in first and section in update
    assert "compress older details" in update
    assert engine.calls[1]["messages"][1]["content"].startswith("Existing summary:\n## Goal\nTrip")


def test_replay_mode_is_prefix_cache_friendly(recorder, ctx_factory, engine_double) -> None:
    """Spec 002: replay the system prompt, tools and messages verbatim and append the
    instruction as a final user turn."""
    s = summarizer(recorder, ctx_factory, {"type": "llm", "params": {"request_mode": "replay"}})
    engine = engine_double()
    tools = [{"type": "function", "function": {"name": "book"}}]
    s.summarize(
        SummaryRequest(TURNS, system="You book trips.", tools=tools, window=128_000), engine
    )
    sent = engine.calls[0]
    assert sent["messages"][:3] == [{"role": "system", "content": "You book trips."}, *TURNS]
    assert sent["messages"][-1]["role"] == "user" and "Summarize" in sent["messages"][-1]["content"]
    assert sent["tools"] == tools


def test_replay_with_a_running_summary_replays_the_summary_row(
    recorder, ctx_factory, engine_double
) -> None:
    """Spec 002 replay after a first compaction: the summary row the agent saw comes first,
    then the folded turns, then the update instruction."""
    s = summarizer(recorder, ctx_factory, {"type": "llm", "params": {"request_mode": "replay"}})
    engine = engine_double()
    s.summarize(SummaryRequest(TURNS, previous_summary="Trip to Paris.", system="Sys"), engine)
    sent = engine.calls[0]["messages"]
    assert sent[0] == {"role": "system", "content": "Sys"}
    assert sent[1]["role"] == "system" and sent[1]["content"].endswith("Trip to Paris.")
    assert sent[2:4] == TURNS and "update it" in sent[-1]["content"]


def test_replay_too_large_for_the_window_falls_back_to_chunks(
    recorder, ctx_factory, engine_double
) -> None:
    s = summarizer(
        recorder,
        ctx_factory,
        {"type": "llm", "params": {"request_mode": "replay", "context_window": 2_000}},
    )
    engine = engine_double()
    turns = [{"role": "user", "content": "y" * 3_000} for _ in range(4)]
    result = s.summarize(SummaryRequest(turns, system="Sys"), engine)
    assert result.llm_calls == len(engine.calls) > 1
    assert engine.calls[0]["messages"][0]["content"] != "Sys"  # standalone, bounded


@pytest.mark.parametrize(
    "mode, kind", [("tool_calls", "tool_calls"), ("empty", "empty"), ("timeout", "timeout")]
)
def test_only_text_is_kept_and_bad_replies_raise(
    recorder, ctx_factory, engine_double, mode, kind
) -> None:
    """Issue 3: failure on timeout, empty text, text plus tool calls."""
    s = summarizer(recorder, ctx_factory, "llm")
    with pytest.raises(SummarizerError) as info:
        s.summarize(SummaryRequest(TURNS), engine_double(mode))
    assert info.value.kind == kind


def test_max_summary_tokens_caps_the_call_and_the_text(recorder, ctx_factory) -> None:
    """Spec 004 maxSummaryTokens."""
    from mas.runtime.protocols import ModelReply

    class Verbose:
        def __init__(self) -> None:
            self.max_tokens = None

        def summarize_messages(self, messages, *, model, tools=None, max_tokens=None):
            self.max_tokens = max_tokens
            return ModelReply(text="word " * 1_000)

    engine = Verbose()
    s = summarizer(recorder, ctx_factory, {"type": "llm", "params": {"max_summary_tokens": 50}})
    result = s.summarize(SummaryRequest(TURNS, window=128_000), engine)
    assert engine.max_tokens == 50
    assert len(result.text) <= 200 and "characters omitted" in result.text


def test_input_is_bounded_by_the_summarizer_models_window(
    recorder, ctx_factory, engine_double
) -> None:
    """Issue 3: "the input sent to the summarizer itself bounded by the summarizer model's
    window" — turns that do not fit one call go through the update prompt in chunks."""
    s = summarizer(
        recorder,
        ctx_factory,
        {"type": "llm", "params": {"context_window": 4_000, "max_summary_tokens": 500}},
    )
    engine = engine_double()
    turns = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i} " + "x" * 2_000}
        for i in range(20)
    ]
    result = s.summarize(SummaryRequest(turns), engine)
    assert result.llm_calls == len(engine.calls) > 1
    for call in engine.calls:
        text = "".join(m["content"] for m in call["messages"])
        assert len(text) / 4 <= 4_000 - 500
    assert engine.calls[1]["messages"][1]["content"].startswith("Existing summary:\nSUMMARY-1")
    assert result.text == f"SUMMARY-{len(engine.calls)}"


def test_a_fold_that_fits_the_first_call_beside_a_short_summary_makes_one_call(
    recorder, ctx_factory, engine_double
) -> None:
    # Issue 22: only a later call carries a summary of up to the output cap; the first
    # carries the running summary as it is, and what it leaves unused is folded there.
    s = summarizer(
        recorder,
        ctx_factory,
        {"type": "llm", "params": {"context_window": 4_000, "max_summary_tokens": 500}},
    )
    limit = 4_000 - 500 - 400  # the window, less the summary's room and the 10 % margin
    later, first = s._chunk_room("short", limit, 500), s._first_room("short", limit, 500)
    assert first > later + 400
    turn_tokens = DEFAULT_ESTIMATOR.text(_turns_json([{"role": "user", "content": "x" * 400}]))
    count = (later + 200) // turn_tokens
    turns = [{"role": "user", "content": "x" * 400} for _ in range(count)]
    assert later < DEFAULT_ESTIMATOR.text(_turns_json(turns)) <= first
    engine = engine_double()
    result = s.summarize(SummaryRequest(turns, previous_summary="short"), engine)
    assert result.llm_calls == len(engine.calls) == 1
    sent = "".join(m["content"] for m in engine.calls[0]["messages"])
    assert DEFAULT_ESTIMATOR.text(sent) <= 4_000 - 500


def test_drop_makes_no_call(recorder, ctx_factory, engine_double) -> None:
    """Spec 000: "summarizer: drop never calls an LLM"."""
    engine = engine_double()
    result = summarizer(recorder, ctx_factory, "drop").summarize(SummaryRequest(TURNS), engine)
    assert result.text is None and result.llm_calls == 0 and engine.calls == []


def test_json_tool_output_is_embedded_as_a_value_not_an_escaped_string(
    recorder, ctx_factory, engine_double
) -> None:
    """Issue 22: a tool result that is itself JSON is carried as that value, so its quotes
    are not escaped (JSON tool output grew by a quarter as a string); other text stays."""
    output = json.dumps({"rows": [{"id": 7, "ref": "ORD-48213", "note": "a \"b\""}]})
    turns = [*TURNS, {"role": "tool", "tool_call_id": "c1", "content": output},
             {"role": "tool", "tool_call_id": "c2", "content": "[not json"}]
    engine = engine_double()
    summarizer(recorder, ctx_factory, "llm").summarize(
        SummaryRequest(turns, window=128_000), engine)
    payload = engine.calls[0]["messages"][1]["content"].split("\n", 1)[1]
    rows = json.loads(payload)
    assert rows[2]["content"] == json.loads(output) and rows[3]["content"] == "[not json"
    assert '\\"ORD-48213\\"' not in payload and '"ORD-48213"' in payload


def test_a_remembered_cost_follows_a_content_replaced_in_the_message() -> None:
    # Issue 22: a fold's messages are costed once and the cost remembered per message
    # object; a dict whose content is then replaced must be costed afresh, not served the
    # old figure.
    message = {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"rows": [1] * 50})}
    first = _item_cost(message)
    assert first == DEFAULT_ESTIMATOR.text(_turns_json([message]))
    assert _item_cost(message) == first
    message["content"] = "short now"
    assert _item_cost(message) == DEFAULT_ESTIMATOR.text(_turns_json([message])) < first


_CONTENTS = st.one_of(
    st.none(), st.text(max_size=40),
    st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=8)),
                    max_size=4).map(json.dumps),
    st.just("[not json"), st.just('"just a string"'))


@given(st.lists(st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": _CONTENTS},
    optional={"name": st.text(min_size=1, max_size=6),
              "tool_calls": st.lists(st.fixed_dictionaries(
                  {"id": st.just("c1"), "function": st.fixed_dictionaries(
                      {"name": st.text(max_size=6), "arguments": st.text(max_size=12)})}),
                  max_size=2)}), max_size=5))
def test_the_call_is_joined_from_the_remembered_rows_as_json_would_write_it(
        messages: list[Message]) -> None:
    # Issue 22: each message is encoded once, for its cost, and the call is joined from
    # those rows; the text must be exactly what one json.dumps of the list gives.
    text = _turns_json(messages)
    assert text == json.dumps(json.loads(text), ensure_ascii=False)
    assert len(json.loads(text)) == len(messages)
    for message, row in zip(messages, json.loads(text), strict=True):
        assert row["role"] == message["role"]
        assert ("name" in row) == bool(message.get("name"))
    again = [dict(m) for m in messages]  # other objects: encoded afresh, the same text
    assert _turns_json(again) == text
    for message in again:
        message["tool_calls"] = [{"id": "c2", "function": {"name": "swap", "arguments": "{}"}}]
    assert all(row["tool_calls"][0]["name"] == "swap" for row in json.loads(_turns_json(again)))
