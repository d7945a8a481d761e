"""``serve --stdio`` bounds every message and survives hostile lines (issue 26, item 5).

Line length, nesting depth, batch size, id and ``session_id`` length and reply size are
bounded, each answered with its standard JSON-RPC code; ``NaN``/``Infinity`` are not JSON
and never come back; after a 100,000-deep line the server still answers.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mas.runtime.control import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MAX_BATCH,
    MAX_DEPTH,
    MAX_ID_CHARS,
    MAX_LINE_BYTES,
    MAX_REPLY_BYTES,
    PARSE_ERROR,
    Dispatcher,
    Method,
    Param,
    SessionTree,
    StdioClient,
    serve,
)
from mas.runtime.spec.jsonl import nesting_depth

MAS_CTL = str(Path(sys.executable).with_name("mas-ctl"))
LIST = '{"jsonrpc": "2.0", "id": 7, "method": "list_sessions"}'


def dispatcher(tmp_path: Path, *extra: Method) -> Dispatcher:
    """The real methods over an empty runs root, plus ``extra``."""
    return Dispatcher([*SessionTree(tmp_path).methods(), *extra])


def replies(d: Dispatcher, *lines: bytes) -> list[Any]:
    """Serve ``lines`` and decode every reply line (each must be strict JSON)."""
    out = io.StringIO()
    serve(d, io.BytesIO(b"".join(line + b"\n" for line in lines)), out)
    return [json.loads(line, parse_constant=_not_json) for line in out.getvalue().splitlines()]


def _not_json(name: str) -> None:
    raise AssertionError(f"reply holds {name}")


def test_a_deep_line_is_a_parse_error_and_the_next_request_is_answered(tmp_path: Path) -> None:
    with StdioClient([MAS_CTL, "serve", "--stdio", "--runs", str(tmp_path)]) as client:
        client.send_line("[" * 100_000 + "]" * 100_000)
        deep = client.read_reply()
        assert deep["error"]["code"] == PARSE_ERROR
        assert f"more than {MAX_DEPTH}" in deep["error"]["message"]
        client.send_line(LIST)
        assert client.read_reply() == {"jsonrpc": "2.0", "id": 7,
                                       "result": {"sessions": [], "unreadable": []}}


def test_depth_up_to_the_bound_is_parsed(tmp_path: Path) -> None:
    params = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    at_bound = f'{{"jsonrpc": "2.0", "id": 1, "method": "list_sessions", "params": {params}}}'
    [reply] = replies(dispatcher(tmp_path), at_bound.encode())
    assert reply["error"]["code"] == INVALID_PARAMS  # parsed: the params are just wrong
    over = at_bound.replace(params, "[" + params + "]")
    [reply] = replies(dispatcher(tmp_path), over.encode())
    assert reply["error"]["code"] == PARSE_ERROR


def test_brackets_inside_strings_are_not_nesting() -> None:
    assert nesting_depth('{"a": "[[[[{{\\"[[", "b": [1, [2]]}') == 3


def test_a_long_line_is_refused_unread_and_the_next_is_answered(tmp_path: Path) -> None:
    long_line = b'{"id": "' + b"x" * MAX_LINE_BYTES + b'"}'
    fits = b'{"jsonrpc": "2.0", "id": 1, "method": "list_sessions", "params": {}}'
    fits = fits.ljust(MAX_LINE_BYTES)  # exactly at the bound: served
    too_long, at_bound, listed = replies(dispatcher(tmp_path), long_line, fits, LIST.encode())
    assert too_long == {"jsonrpc": "2.0", "id": None, "error": {
        "code": INVALID_REQUEST,
        "message": f"Invalid Request: line longer than {MAX_LINE_BYTES} bytes"}}
    assert at_bound["result"] == {"sessions": [], "unreadable": []}
    assert listed["id"] == 7


def test_nan_and_infinity_ids_are_refused_and_replies_stay_json(tmp_path: Path) -> None:
    lines = [LIST.replace("7", token).encode() for token in ("NaN", "Infinity", "-Infinity",
                                                              "1e400")]
    for reply in replies(dispatcher(tmp_path), *lines):
        assert reply["error"]["code"] == PARSE_ERROR
        assert reply["id"] is None


def test_a_batch_over_the_bound_is_one_invalid_request(tmp_path: Path) -> None:
    batch = json.dumps([json.loads(LIST)] * (MAX_BATCH + 1)).encode()
    [reply] = replies(dispatcher(tmp_path), batch)
    assert reply["error"]["code"] == INVALID_REQUEST
    assert f"batch of {MAX_BATCH + 1} requests, more than {MAX_BATCH}" in reply["error"]["message"]
    [answers] = replies(dispatcher(tmp_path), json.dumps([json.loads(LIST)] * MAX_BATCH).encode())
    assert len(answers) == MAX_BATCH


def test_long_ids_and_session_ids_are_not_echoed(tmp_path: Path) -> None:
    long_id = json.dumps({"jsonrpc": "2.0", "id": "i" * (MAX_ID_CHARS + 1),
                          "method": "list_sessions"})
    huge = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session_status",
                       "params": {"session_id": "s" * 500_000}})
    bad_id, bad_session = replies(dispatcher(tmp_path), long_id.encode(), huge.encode())
    assert (bad_id["id"], bad_id["error"]["code"]) == (None, INVALID_REQUEST)
    assert bad_session["error"]["code"] == INVALID_PARAMS
    assert len(json.dumps(bad_session)) < 300


def test_a_reply_over_the_bound_becomes_an_internal_error(tmp_path: Path) -> None:
    big = Method("big", (Param("n", int),), lambda n: "x" * n)
    odd = Method("odd", (), lambda: float("nan"))
    lines = [json.dumps({"jsonrpc": "2.0", "id": n, "method": "big", "params": [n]}).encode()
             for n in (1000, MAX_REPLY_BYTES)]
    small, too_big, nan = replies(dispatcher(tmp_path, big, odd), *lines,
                                  b'{"jsonrpc": "2.0", "id": 3, "method": "odd"}')
    assert small["result"] == "x" * 1000
    assert (too_big["id"], too_big["error"]["code"]) == (MAX_REPLY_BYTES, INTERNAL_ERROR)
    assert (nan["id"], nan["error"]["code"]) == (3, INTERNAL_ERROR)
    # In a batch the whole array is bounded: the items past the budget get the error.
    each = MAX_REPLY_BYTES // 3
    batch = json.dumps([{"jsonrpc": "2.0", "id": i, "method": "big", "params": [each]}
                        for i in range(4)]).encode()
    out = io.StringIO()
    serve(dispatcher(tmp_path, big), io.BytesIO(batch + b"\n"), out)
    assert len(out.getvalue()) <= MAX_REPLY_BYTES + 1
    answers = json.loads(out.getvalue())
    assert ["result" in a for a in answers] == [True, True, False, False]


@settings(max_examples=60, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=30))
def test_nesting_depth_matches_the_decoded_structure(value: Any) -> None:
    def depth(item: Any) -> int:
        if isinstance(item, list):
            return 1 + max((depth(i) for i in item), default=0)
        if isinstance(item, dict):
            return 1 + max((depth(i) for i in item.values()), default=0)
        return 0

    assert nesting_depth(json.dumps(value)) == depth(value)
