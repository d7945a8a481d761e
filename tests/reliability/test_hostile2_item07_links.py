"""Symlinks are not followed and hard links not written through (issue 26, item 7).

``serve`` does not read a ``transcript.json`` symlinked outside ``--runs``; an
``events.jsonl`` or session journal hard-linked to a file elsewhere is replaced by a copy
of its own before it is appended to or cut on resume, so the other file never changes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mas.runtime.control import SessionTree
from mas.runtime.events import Event, JsonlEventSink
from mas.runtime.paths import (
    UnreadableFileError,
    UnsafePathError,
    open_append,
    read_regular,
    truncate_own,
)
from mas.runtime.session import STATE, TRANSCRIPT
from mas.runtime.session.run_folder import trim_events
from mas.runtime.session.store import STATE_VERSION


def test_a_symlinked_transcript_outside_the_runs_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps({"error": "PrivateKind: secret text"}))
    folder = tmp_path / "runs" / "a"
    folder.mkdir(parents=True)
    (folder / STATE).write_text(json.dumps({"version": STATE_VERSION, "session_id": "s1"}))
    (folder / TRANSCRIPT).symlink_to(outside)
    status = SessionTree(tmp_path / "runs").session_status("s1")
    assert status["error_kind"] == "UnreadableTranscript"
    assert "PrivateKind" not in json.dumps(status)
    with pytest.raises(UnreadableFileError, match="is a symbolic link"):
        read_regular(folder / TRANSCRIPT, 1000, follow_symlinks=False)


def test_a_hard_linked_events_file_is_replaced_not_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"mine": true}\n')
    events = tmp_path / "run" / "events.jsonl"
    events.parent.mkdir()
    os.link(outside, events)
    sink = JsonlEventSink(events)
    sink(Event("session.turn", {"turn": 1}))
    assert outside.read_text() == '{"mine": true}\n'
    lines = events.read_text().splitlines()
    assert lines[0] == '{"mine": true}' and json.loads(lines[1])["event"] == "session.turn"
    assert os.stat(events).st_nlink == 1 and os.stat(outside).st_nlink == 1


def test_open_append_breaks_a_hard_link_to_a_journal(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_bytes(b"kept\n")
    journal = tmp_path / "session.journal"
    os.link(outside, journal)
    fd = open_append(journal)
    try:
        os.write(fd, b"appended\n")
    finally:
        os.close(fd)
    assert outside.read_bytes() == b"kept\n"
    assert journal.read_bytes() == b"kept\nappended\n"
    assert not list(tmp_path.glob(".session.journal.*")), "no temporary copy left behind"


def test_cutting_a_hard_linked_file_leaves_the_other_whole(tmp_path: Path) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b'{"event": "a"}\n{"event": "b"}\n')
    events = tmp_path / "events.jsonl"
    os.link(outside, events)
    assert trim_events(events, 0) == len(outside.read_bytes())
    assert events.read_bytes() == b""
    assert outside.read_bytes() == b'{"event": "a"}\n{"event": "b"}\n'
    (tmp_path / "target").write_bytes(b"keep")
    link = tmp_path / "symlinked"
    link.symlink_to(tmp_path / "target")
    with pytest.raises(UnsafePathError):
        truncate_own(link, 0)
    assert (tmp_path / "target").read_bytes() == b"keep"
