"""mas-ctl serve --stdio: JSON-RPC 2.0 ids, error codes, batches and notifications.

The end-to-end tests drive the real ``mas-ctl serve`` process through the one client the
kernel ships (:class:`mas.runtime.control.StdioClient`) over run folders written by
``mas-ctl run`` on the offline model; the property test checks the dispatcher itself.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mas.runtime.control import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    NO_MODEL_CALL,
    PARSE_ERROR,
    SESSION_NOT_FOUND,
    Dispatcher,
    RpcError,
    SessionTree,
    StdioClient,
)
from mas.runtime.session import STATE, load_state, save_state

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {name: runner}
spec:
  models: [{id: main, model: offline/default, context_window: 2500, max_tokens: 200}]
  context_manager: {type: summarising, params: {keep_turns: 2}}
"""
MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))


@pytest.fixture
def runs(write: Callable[[str, str], Path], mas_ctl: Callable[..., Any], tmp_path: Path) -> Path:
    """A runs root with two finished sessions (one nested deeper) and one without a call."""
    agent = write("agent.yaml", AGENT)
    turns = tmp_path / "turns.jsonl"
    turns.write_text("\n".join(json.dumps(t) for t in ["My code is K-77.", "What is my code?"]))
    root = tmp_path / "runs"
    for folder in (root / "a", root / "deep" / "b"):
        assert mas_ctl("run", agent, "--input", turns, "--out", folder).code == 0
    fresh = dict(load_state(root / "a" / STATE), session_id="fresh", context_usage=None, turns=0)
    save_state(root / "c" / STATE, fresh)
    return root


@pytest.fixture
def client(runs: Path) -> Iterator[StdioClient]:
    """The real server over ``runs``."""
    with StdioClient([MAS_CTL, "serve", "--stdio", "--runs", str(runs)]) as rpc:
        yield rpc


def _ids(runs: Path) -> dict[str, str]:
    return {p.parent.name: load_state(p)["session_id"] for p in runs.rglob(STATE)}


def test_methods_answer_with_results(client: StdioClient, runs: Path) -> None:
    ids = _ids(runs)
    listing = client.call("list_sessions")
    assert sorted(s["folder"] for s in listing["sessions"]) == ["a", "c", "deep/b"]
    assert listing["unreadable"] == []
    by_folder = {s["folder"]: s for s in listing["sessions"]}
    assert by_folder["deep/b"]["session_id"] == ids["b"]
    assert by_folder["a"] == {"session_id": ids["a"], "agent": "runner", "model": "offline/default", "turns": 2, "folder": "a"}

    view = client.call("inspect_context", session_id=ids["a"])
    assert view["session_id"] == ids["a"] and view["turns"] == 2
    assert "context_window" in view["window_source"] and 0 < view["window"] <= 2500
    assert view["llm_calls"] == 2 and view["estimated_prompt_tokens"] > 0

    status = client.call("session_status", session_id=ids["b"])
    assert status == {
        "session_id": ids["b"], "agent": "runner", "model": "offline/default", "folder": "deep/b",
        "turns": 2, "compactions": 0, "llm_calls": 2, "cost": status["cost"], "cost_status": "ok",
        "finished": True, "failed": False, "error_kind": None,
        "degraded": False, "degradation": {},
    }
    assert client.close() == 0


def test_application_errors_have_codes_and_data(client: StdioClient) -> None:
    with pytest.raises(RpcError) as missing:
        client.call("inspect_context", session_id="nope")
    assert missing.value.code == SESSION_NOT_FOUND
    assert missing.value.data == {"session_id": "nope", "unreadable": 0}
    with pytest.raises(RpcError) as fresh:
        client.call("inspect_context", session_id="fresh")
    assert fresh.value.code == NO_MODEL_CALL and "no model call" in fresh.value.message
    assert client.call("session_status", session_id="fresh")["finished"] is False


@pytest.mark.parametrize(
    ("line", "code", "text"),
    [
        ("not json", PARSE_ERROR, "Parse error"),
        ('{"jsonrpc": "2.0", "method": "list_sessions", "id": 1', PARSE_ERROR, "Parse error"),
        ("[]", INVALID_REQUEST, "empty batch"),
        ("7", INVALID_REQUEST, "not an object"),
        ('{"method": "list_sessions", "id": 1}', INVALID_REQUEST, 'jsonrpc must be "2.0"'),
        ('{"jsonrpc": "2.0", "method": 5, "id": 1}', INVALID_REQUEST, "method 5"),
        ('{"jsonrpc": "2.0", "method": "list_sessions", "id": [1]}', INVALID_REQUEST, "id [1]"),
        ('{"jsonrpc": "2.0", "method": "explode", "id": 1}', METHOD_NOT_FOUND, "'explode'"),
        ('{"jsonrpc": "2.0", "method": "inspect_context", "id": 1}', INVALID_PARAMS, "session_id: required"),
        ('{"jsonrpc": "2.0", "method": "inspect_context", "params": {"session_id": 3}, "id": 1}', INVALID_PARAMS, "session_id: must be a str (got 3)"),
        ('{"jsonrpc": "2.0", "method": "inspect_context", "params": {"sid": "x"}, "id": 1}', INVALID_PARAMS, "sid: unknown"),
        ('{"jsonrpc": "2.0", "method": "inspect_context", "params": ["a", "b"], "id": 1}', INVALID_PARAMS, "at most 1"),
        ('{"jsonrpc": "2.0", "method": "list_sessions", "params": "x", "id": 1}', INVALID_REQUEST, "params must be an object or array"),
    ],
)
def test_protocol_errors_use_the_standard_codes(client: StdioClient, line: str, code: int, text: str) -> None:
    client.send_line(line)
    reply = client.read_reply()
    assert reply["jsonrpc"] == "2.0" and reply["error"]["code"] == code, reply
    assert text in reply["error"]["message"]
    # A request whose id could be read is answered under that id; otherwise under null.
    unread = code == PARSE_ERROR or text in ("empty batch", "not an object", "id [1]")
    assert reply["id"] == (None if unread else 1)


def test_the_specifications_examples_of_invalid_requests(client: StdioClient) -> None:
    # Section 7 of the JSON-RPC 2.0 specification: an object that is not a valid Request is
    # answered with -32600 under id null even without an id; only a valid Request without
    # an id is a notification, which gets nothing back.
    invalid = {"code": INVALID_REQUEST}
    client.send_line('{"jsonrpc": "2.0", "method": 1, "params": "bar"}')
    assert _code(client.read_reply()) == (invalid, None)
    client.send_line('{"foo": "boo"}')
    assert _code(client.read_reply()) == (invalid, None)
    client.send_line(json.dumps([
        {"jsonrpc": "2.0", "method": "list_sessions", "id": "1"},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "list_sessions", "params": 5},
    ]))
    first, *errors = client.read_reply()
    assert first["id"] == "1" and "sessions" in first["result"]
    assert [_code(e) for e in errors] == [(invalid, None), (invalid, None)]
    client.send_line(json.dumps([{"jsonrpc": "2.0", "method": "notify_sum", "params": [1, 2]},
                                 {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}]))
    assert client.call("list_sessions")["unreadable"] == []  # the notification batch got nothing


def _code(reply: dict[str, Any]) -> tuple[dict[str, int], Any]:
    return {"code": reply["error"]["code"]}, reply["id"]


def test_invalid_utf8_is_a_parse_error_not_a_crash(client: StdioClient) -> None:
    stdin = client._process.stdin
    assert stdin is not None
    stdin.buffer.write(b'{"jsonrpc": "2.0", "method": "\xff", "id": 1}\n')
    stdin.flush()
    assert client.read_reply()["error"]["code"] == PARSE_ERROR
    assert client.call("list_sessions")["unreadable"] == []


def test_batch_and_notifications(client: StdioClient, runs: Path) -> None:
    ids = _ids(runs)
    replies = client.batch([
        ("session_status", {"session_id": ids["a"]}),
        ("inspect_context", ["nope"]),          # by-position params
        ("explode", None),
    ])
    assert replies[0]["result"]["turns"] == 2
    assert replies[1]["error"]["code"] == SESSION_NOT_FOUND
    assert replies[2]["error"]["code"] == METHOD_NOT_FOUND
    assert replies[2]["error"]["data"] == {"methods": ["inspect_context", "list_sessions", "session_status"]}

    # Notifications get no reply, even when they fail, alone or as a whole batch; a mixed
    # batch answers only its requests, and an invalid member gets its own error.
    client.notify("list_sessions")
    client.notify("explode")
    client.send_line(json.dumps([{"jsonrpc": "2.0", "method": "list_sessions"}]))
    client.send_line(json.dumps([
        {"jsonrpc": "2.0", "method": "list_sessions"},
        {"jsonrpc": "2.0", "method": "session_status", "params": {"session_id": ids["b"]}, "id": "s"},
        1,
    ]))
    mixed = client.read_reply()
    assert [r["id"] for r in mixed] == ["s", None]
    assert mixed[0]["result"]["folder"] == "deep/b" and mixed[1]["error"]["code"] == INVALID_REQUEST
    client.send_line("")  # blank lines are ignored
    assert client.call("session_status", session_id=ids["a"])["finished"] is True
    assert client.close() == 0 and client.stderr == ""


def test_unreadable_sessions_are_listed_not_skipped(client: StdioClient, runs: Path) -> None:
    (runs / "torn").mkdir()
    (runs / "torn" / STATE).write_text("{not json")
    listing = client.call("list_sessions")
    assert listing["unreadable"] == [{"folder": "torn", "reason": "SessionStateError"}]
    with pytest.raises(RpcError) as missing:
        client.call("session_status", session_id="gone")
    assert missing.value.data["unreadable"] == 1


def test_symlinked_session_files_outside_the_root_are_not_read(runs: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    save_state(outside / STATE, {"session_id": "secret", "turns": 0})
    (runs / "link").symlink_to(outside, target_is_directory=True)
    listing = SessionTree(runs).list_sessions()
    assert "secret" not in [s["session_id"] for s in listing["sessions"]]


def test_a_failed_session_reports_its_error_kind_only(runs: Path) -> None:
    transcript = runs / "a" / "transcript.json"
    record = json.loads(transcript.read_text())
    transcript.write_text(json.dumps({**record, "error": "ProviderError: key sk-live-123 refused"}))
    status = SessionTree(runs).session_status(_ids(runs)["a"])
    assert status["failed"] is True and status["error_kind"] == "ProviderError"
    assert "sk-live" not in json.dumps(status)


def test_session_status_says_whether_the_session_degraded(
    runs: Path, write: Callable[[str, str], Path], mas_ctl: Callable[..., Any], tmp_path: Path
) -> None:
    # A real degraded session: every offline reply is longer than max_reply_chars, so each
    # of the two turns is capped (replies_capped) and mas-ctl run ends degraded (exit 3).
    agent = write("capped.yaml", AGENT.replace("metadata: {name: runner}",
                                               "metadata: {name: capped}") +
                  "  budget: {max_reply_chars: 5}\n")
    turns = tmp_path / "turns.jsonl"
    assert mas_ctl("run", agent, "--input", turns, "--out", runs / "capped").code == 3
    capped = load_state(runs / "capped" / STATE)
    assert capped["degradation"]["counts"] == {"replies_capped": 2}
    # A notice alone (a recovered window overflow) is counted but does not degrade; a
    # reason quoting provider text never crosses the channel.
    noticed = runs / "a" / STATE
    save_state(noticed, {**load_state(noticed), "degradation": {
        "counts": {"window_overflows_recovered": 1},
        "reasons": {"window_overflows_recovered": "ProviderError: key sk-live-123 refused"}}})
    ids = _ids(runs)
    with StdioClient([MAS_CTL, "serve", "--stdio", "--runs", str(runs)]) as rpc:
        degraded = rpc.call("session_status", session_id=ids["capped"])
        notice = rpc.call("session_status", session_id=ids["a"])
        clean = rpc.call("session_status", session_id=ids["b"])
        assert rpc.close() == 0
    assert (degraded["degraded"], degraded["degradation"]) == (True, {"replies_capped": 2})
    assert degraded["failed"] is False and degraded["finished"] is True
    assert (notice["degraded"], notice["degradation"]) == (
        False, {"window_overflows_recovered": 1})
    assert "sk-live" not in json.dumps(notice)
    assert (clean["degraded"], clean["degradation"]) == (False, {})


def test_serve_needs_an_existing_runs_folder(mas_ctl: Callable[..., Any], tmp_path: Path) -> None:
    result = mas_ctl("serve", "--stdio", "--runs", tmp_path / "missing")
    assert result.code == 2 and "does not exist" in result.err


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_REQUESTS = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0"]), "method": st.sampled_from(["list_sessions", "session_status", "explode"])},
    optional={"id": st.integers() | st.text(max_size=4) | st.none(), "params": _JSON},
)


def _notification(message: Any) -> bool:
    # A valid Request object without an id; anything else that is not one is answered.
    return (isinstance(message, dict) and "id" not in message and message.get("jsonrpc") == "2.0"
            and isinstance(message.get("method"), str)
            and (message.get("params") is None or isinstance(message["params"], (list, dict))))


@given(message=st.one_of(_JSON, _REQUESTS, st.lists(_REQUESTS | _JSON, max_size=4)))
def test_every_reply_is_well_formed(message: Any) -> None:
    tree = SessionTree(Path("/nonexistent-runs-root"))
    reply = Dispatcher(tree.methods()).handle(message)
    requests = message if isinstance(message, list) and message else [message]
    expected = [m for m in requests if not _notification(m)]
    if not expected:
        assert reply is None  # notifications only: nothing at all goes back
        return
    replies = reply if isinstance(message, list) and message else [reply]
    assert len(replies) == len(expected)
    for one in replies:
        assert one["jsonrpc"] == "2.0" and "id" in one
        assert ("result" in one) != ("error" in one)
        if "error" in one:
            assert isinstance(one["error"]["code"], int) and one["error"]["message"]
