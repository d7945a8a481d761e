"""Issue 13 item 6: a provider error that quotes the prompt never puts prompt text into
events.jsonl; the stored error is kind, status and a bounded, masked, content-free line."""

from __future__ import annotations

import json
import traceback
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.runtime import Event, Runtime
from mas.runtime.errors import ModelCallError
from mas.runtime.secrets import MAX_MESSAGE, error_fields, reduce_message
from mas.runtime.session import record_events

PROMPT = "my locker code is zebra-violet-quasar-1187"


def _provider_failure() -> ModelCallError:
    try:
        raise ModelCallError(
            "model call to 'openai/gpt-4o-mini' failed on the first attempt (summary call): "
            f"BadRequestError: Error code: 400 - invalid content in messages[3]: '{PROMPT}'")
    except ModelCallError as exc:
        return exc


def test_item06_compaction_exception_is_stored_without_the_providers_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-quoted-key-0123456789")
    runtime = Runtime.create()
    close = record_events(runtime, tmp_path, lambda: "s1")
    exc = _provider_failure()
    # What the summarising manager emits when its summarizer fails.
    runtime.emit(Event("compaction.exception", {
        "kind": "exception", "llm_called": True, "messages_before": 9,
        "reason": f"{type(exc).__name__}: {exc} sk-quoted-key-0123456789",
        "stacktrace": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    }, "s1"))
    close()
    raw = (tmp_path / "events.jsonl").read_text()
    assert "zebra" not in raw and "sk-quoted-key" not in raw
    [event] = [json.loads(line) for line in raw.splitlines()]
    assert "stacktrace" not in event
    assert event["reason"] == ("ModelCallError: bad_request (HTTP 400); the provider's message "
                               "is not stored")
    assert event["messages_before"] == 9 and event["llm_called"] is True


def test_item06_error_fields_reads_the_status_from_the_chain() -> None:
    class ProviderError(Exception):
        status_code = 429

    try:
        try:
            raise ProviderError(f"slow down; you sent {PROMPT}")
        except ProviderError:
            raise ModelCallError(f"gave up: {PROMPT}") from None
    except ModelCallError as exc:
        fields = error_fields(exc)
    assert fields == {"error_kind": "rate_limit", "status": 429, "message":
                      "ModelCallError: rate_limit (HTTP 429); the provider's message is not stored"}


@given(st.text(max_size=5000))
def test_item06_a_reduced_message_is_bounded_and_keeps_no_words_of_the_input(text: str) -> None:
    reduced = reduce_message(text)
    assert len(reduced) <= MAX_MESSAGE
    name, tail = reduced.split(": ", 1)
    assert name == "Error" or name in text
    assert tail.split(" ")[0].rstrip(";") in {"bad_request", "authentication", "not_found", "timeout",
                                  "too_large", "rate_limit", "server", "connection", "budget",
                                  "exception"}


def test_item06_a_degraded_event_keeps_no_provider_words(tmp_path: Path) -> None:
    runtime = Runtime.create()
    close = record_events(runtime, tmp_path, lambda: "s1")
    exc = _provider_failure()
    runtime.emit(Event("degraded", {"kind": "compaction_failures", "count": 1, "total": 1,
                                    "reason": f"{type(exc).__name__}: {exc}"}, "s1"))
    runtime.emit(Event("degraded", {"kind": "budget_cuts", "count": 3, "total": 3,
                                    "reason": "3 messages (812 tokens) cut"}, "s1"))
    close()
    lines = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["reason"] for e in lines] == [
        "ModelCallError: bad_request (HTTP 400); the provider's message is not stored",
        "3 messages (812 tokens) cut"]  # the project's own words are kept
