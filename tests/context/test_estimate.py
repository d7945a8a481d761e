"""Spec 003: "The full request is estimated with a conservative characters / 4 heuristic
plus message/tool overhead" — and images and non-string content are handled."""

from __future__ import annotations

import json

from mas.runtime.context import TokenEstimator
from mas.runtime.context.estimate import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    TOOL_SCHEMA_OVERHEAD,
    message_tokens,
)
from mas.runtime.protocols import Message

EST = TokenEstimator()


def test_text_is_chars_over_four_rounded_up() -> None:
    assert EST.text("") == 0
    assert EST.text("abcd") == 1
    assert EST.text("abcde") == 2
    assert EST.text("x" * 400) == 100


def test_message_adds_a_per_message_overhead() -> None:
    assert EST.message({"role": "user", "content": "x" * 40}) == MESSAGE_OVERHEAD + 10
    assert EST.message({"role": "assistant", "content": None}) == MESSAGE_OVERHEAD


def test_image_parts_cost_a_fixed_amount_and_text_parts_their_length() -> None:
    message = {
        "role": "user",
        "content": [
            {"type": "text", "text": "x" * 8},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 10_000}},
        ],
    }
    assert EST.message(message) == MESSAGE_OVERHEAD + 2 + IMAGE_TOKENS


def test_non_string_content_is_estimated_from_its_json() -> None:
    content = {"answer": 42, "items": [1, 2, 3]}
    expected = EST.text(json.dumps(content, sort_keys=True))
    assert EST.content(content) == expected
    assert EST.content([{"type": "audio", "data": "zz"}]) > 0


def test_tool_calls_and_call_ids_are_counted() -> None:
    plain = {"role": "assistant", "content": ""}
    calling = {
        **plain,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"q": "x"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "lookup", "arguments": {"q": "y"}},
            },
        ],
    }
    assert EST.message(calling) > EST.message(plain) + 2 * 4
    result = {"role": "tool", "tool_call_id": "call_1", "content": "ok"}
    assert EST.message(result) == MESSAGE_OVERHEAD + EST.text("call_1") + 1


def test_tool_schemas_count_json_plus_overhead_each() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    one = TOOL_SCHEMA_OVERHEAD + EST.text(json.dumps(tool, sort_keys=True))
    assert EST.tools([tool]) == one
    assert EST.tools([tool, tool]) == 2 * one
    assert EST.tools(None) == 0


def test_chars_for_inverts_text() -> None:
    assert EST.text("x" * EST.chars_for(25)) == 25
    assert EST.chars_for(-3) == 0


class _Counting(TokenEstimator):
    """An estimator that counts the messages it estimates."""

    def __init__(self, **fields: int) -> None:
        super().__init__(**fields)
        object.__setattr__(self, "calls", [0])

    def message(self, message: Message) -> int:
        self.calls[0] += 1  # type: ignore[attr-defined]
        return super().message(message)


def test_a_message_in_flight_is_estimated_once_until_it_gets_another_content() -> None:
    est = _Counting()
    message: Message = {"role": "tool", "tool_call_id": "c1", "content": "rows " * 100}
    first = message_tokens(est, message)
    assert [message_tokens(est, message) for _ in range(3)] == [first] * 3
    assert est.calls == [1]  # type: ignore[attr-defined]
    message["content"] = "rows " * 400
    assert message_tokens(est, message) == TokenEstimator().message(message) > first
    assert est.calls == [2]  # type: ignore[attr-defined]
    other = _Counting(message_overhead=50)  # another estimator: its own estimate
    assert message_tokens(other, message) == message_tokens(est, message) + 46
