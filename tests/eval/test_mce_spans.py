"""Run folders as MCE span rows: every message exactly once, in order (no MCE needed)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mas.library.eval.mce.spans import otel_rows
from mas.library.eval.run import SessionRun

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


@st.composite
def transcripts(draw: Any) -> list[dict[str, Any]]:
    """User turns, each answered; some answers call a tool whose result comes back."""
    messages: list[dict[str, Any]] = []
    for turn in range(draw(st.integers(min_value=1, max_value=8))):
        messages.append({"role": "user", "content": draw(text)})
        if draw(st.booleans()):
            call = f"c{turn}"
            messages.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": call, "type": "function",
                 "function": {"name": "lookup", "arguments": json.dumps({"n": turn})}}]})
            messages.append({"role": "tool", "tool_call_id": call, "name": "lookup",
                             "content": draw(text)})
        messages.append({"role": "assistant", "content": draw(text)})
    if draw(st.booleans()):  # the session stopped before answering its last turn
        messages.append({"role": "user", "content": draw(text)})
    return messages


def _index(key: str) -> int:
    found = re.search(r"\.(\d+)\.", key)
    return int(found.group(1)) if found else -1


@given(transcripts())
def test_every_message_lands_once_and_in_order(messages: list[dict[str, Any]]) -> None:
    run = SessionRun(path=Path("unused"), session_id="s-1", model="offline/default",
                     messages=messages)
    rows = otel_rows(run, max_tool_chars=0)
    chats = [r for r in rows if r["SpanName"] == "openai.chat"]
    tools = [r for r in rows if r["SpanName"].endswith(".tool")]
    unanswered = messages[-1]["role"] != "assistant"
    assert len(chats) == sum(m["role"] == "assistant" for m in messages) + unanswered
    assert len(tools) == sum(m["role"] == "tool" for m in messages)
    replayed: list[tuple[str, str]] = []
    for row in chats:
        attributes = row["SpanAttributes"]
        prompts = sorted((k for k in attributes if k.startswith("gen_ai.prompt.")
                          and k.endswith(".content")), key=_index)
        replayed += [(attributes[k.replace(".content", ".role")], attributes[k]) for k in prompts]
        if "gen_ai.completion.0.content" in attributes:
            replayed.append(("assistant", attributes["gen_ai.completion.0.content"]))
    assert replayed == [(m["role"], m["content"]) for m in messages]
    # timestamps order the spans; ids are unique; every row belongs to the session
    stamps = [r["Timestamp"] for r in rows]
    assert stamps == sorted(stamps) and len({r["SpanId"] for r in rows}) == len(rows)
    assert {r["SpanAttributes"]["session.id"] for r in rows} == {"s-1"}


def test_tool_results_are_clipped_like_the_native_material() -> None:
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c", "function": {"name": "dump", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c", "content": "x" * 10_000},
                {"role": "assistant", "content": "done"}]
    rows = otel_rows(SessionRun(path=Path("unused"), session_id="s", messages=messages),
                     max_tool_chars=100)
    [tool] = [r for r in rows if r["SpanName"] == "dump.tool"]
    output = json.loads(tool["SpanAttributes"]["traceloop.entity.output"])["output"]
    assert len(output) < 200 and "characters omitted" in output
    assert json.loads(tool["SpanAttributes"]["traceloop.entity.input"]) == {"arguments": "{}"}
