"""Issue 10, item 5: folded messages are archived in the session's store, bounded, and an
opt-in ``recall_context`` tool brings them back — through the real offline model."""

from __future__ import annotations

from pathlib import Path

import pytest

from mas.runtime import Runtime
from mas.runtime.context.archive import Archive
from mas.runtime.errors import MasError
from mas.runtime.session.recall import ARCHIVE_FILE, RECALL_TOOL

FACT = "The warehouse door code is KX-5521."
FILLER = "Noted, thanks. " + "We talked about shipping schedules and nothing else. " * 12


def play(session, turns: int = 30) -> list[str]:
    answers = [session.send(FACT).answer]
    answers += [session.send(f"Turn {i}. {FILLER}").answer for i in range(turns)]
    answers.append(session.send("What is the warehouse door code?").answer)
    return answers


def test_the_archive_keeps_originals_searchable_bounded_and_once() -> None:
    archive = Archive(max_messages=3)
    messages = [{"role": "user", "content": "My order id is ORD-7781."},
                {"role": "assistant", "content": "Noted."}]
    assert archive.add(0, messages) == 2
    assert archive.add(0, messages) == 0, "a resumed session re-folding writes nothing twice"
    found = archive.search("ORD-7781", max_tokens=100)
    assert found.positions[0] == 0 and found.blocks[0].lines == {0: messages[0]["content"]}
    assert archive.search("what was my order id", max_tokens=100).positions[0] == 0
    assert archive.search('"; drop table messages; --', max_tokens=100).blocks == []
    archive.add(2, [{"role": "user", "content": f"m{i}"} for i in range(2)])
    stats = archive.stats()
    assert stats["messages"] == 3 and stats["evicted"] == 1 and stats["first"] == 1


def test_a_large_message_comes_back_shortened_within_the_cap() -> None:
    archive = Archive()
    archive.add(0, [{"role": "tool", "tool_call_id": "c", "content": "ZQ-1 " + "x" * 40_000}])
    found = archive.search("ZQ-1", max_tokens=200)
    assert found.tokens <= 200 and "omitted" in found.text()


def test_recall_brings_back_a_fact_the_summary_lost(make_session, tmp_path: Path) -> None:
    """The drop summarizer keeps nothing; with recall the offline model searches the
    archive when the fact is not in its prompt, and answers from it."""
    runtime = Runtime.create()
    events = []
    runtime.add_listener(events.append)
    session = make_session(
        window=3000, params="{keep_turns: 2, summarizer: drop, recall: true}",
        runtime=runtime, state=tmp_path / "run" / "session.json",
    )
    assert RECALL_TOOL in [t.name for t in session.tools]
    answers = play(session)
    assert "KX-5521" in answers[-1]
    recalls = [e for e in events if e.name == "recall"]
    assert recalls and recalls[-1].data["found"] >= 1
    assert set(recalls[-1].data) == {"questions", "terms", "found", "messages", "tokens",
                                     "budget"}, "counts only, no text"
    view = session.inspect_context()
    assert view.archive["messages"] >= 2 and (tmp_path / "run" / ARCHIVE_FILE).is_file()
    assert view.accounting["dropped"]["messages"] > 0 and view.accounting["cut"]["messages"] == 0


def test_the_tool_is_offered_once_something_has_left_the_request(make_session) -> None:
    # Before the first fold there is nothing to find, and its schema would take room
    # from the history the request could keep.
    session = make_session(window=3000, params="{keep_turns: 2, summarizer: drop, recall: true}")

    def offered() -> bool:
        request = session.last_request
        return RECALL_TOOL in [t["function"]["name"] for t in (request.tools or [])]

    session.send(FACT)
    assert not offered() and session.inspect_context().archive["messages"] == 0
    turns = 0
    while session.inspect_context().archive["messages"] == 0:
        session.send(f"Turn {turns}. {FILLER}")
        turns += 1
        assert turns < 30, "never folded"
    session.send("What is the warehouse door code?")
    assert offered() and "KX-5521" in session.send("What is the warehouse door code?").answer


def test_offering_recall_does_not_move_the_trigger(make_session) -> None:
    # The schema counts against the history's hard limit, never its soft trigger: recall
    # on or off, the same conversation first folds at the same turn, at the same trigger.
    def run(params: str) -> tuple[list[int], list[int]]:
        session = make_session(window=3000, params=params)
        compacted, triggers = [], []
        for turn in range(24):
            result = session.send(f"Turn {turn}. {FILLER}")
            compacted.append(result.compactions)
            request = session.last_request
            triggers.append(request.budget.soft_trigger)
            assert request.accounting.cut.messages == 0
            assert request.budget.retrigger <= request.budget.history_hard_limit
        if "recall: true" in params:  # offered, its schema within the hard limit
            assert RECALL_TOOL in [t["function"]["name"] for t in request.tools]
            assert 0 < request.budget.trigger_exempt <= request.budget.fixed.tools
        return compacted, triggers

    without, with_recall = run("{keep_turns: 2, summarizer: drop}"), run(
        "{keep_turns: 2, summarizer: drop, recall: true}")
    assert sum(without[0]) >= 2, "the conversation must fold again once recall is offered"
    assert with_recall[1] == without[1]
    assert with_recall[0].index(1) == without[0].index(1)


def test_without_recall_the_fact_is_gone_and_no_tool_is_offered(make_session) -> None:
    session = make_session(window=3000, params="{keep_turns: 2, summarizer: drop}")
    assert RECALL_TOOL not in [t.name for t in session.tools]
    assert "KX-5521" not in play(session)[-1]
    assert session.inspect_context().archive["messages"] > 0, "archived even without recall"


def test_archive_off_keeps_nothing(make_session) -> None:
    session = make_session(window=3000,
                           params="{keep_turns: 2, summarizer: drop, archive: {enabled: false}}")
    play(session, 5)
    assert session.archive is None and session.inspect_context().archive is None


def test_a_planted_archive_symlink_is_refused(make_session, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    target = tmp_path / "elsewhere.sqlite"
    target.write_text("keep me")
    (folder / ARCHIVE_FILE).symlink_to(target)
    with pytest.raises(MasError, match="symbolic link"):
        make_session(window=3000, params="{keep_turns: 2, recall: true}",
                     state=folder / "session.json")
    assert target.read_text() == "keep me"


def test_recall_params_are_validated(make_session) -> None:
    with pytest.raises(MasError, match="recall_max_tokens"):
        make_session(params="{recall: true, recall_max_tokens: 3}")


def test_an_archive_that_cannot_be_written_names_its_file(tmp_path: Path) -> None:
    """A database that refuses writes (a full disk, a read-only file) is a one-line
    StorageError naming the file, not a raw sqlite3 traceback."""
    from mas.runtime.errors import StorageError

    archive = Archive(tmp_path / ARCHIVE_FILE)
    # Root ignores file permissions; SQLite's own switch makes every write fail as a
    # read-only database does.
    archive._db.execute("pragma query_only = on")
    with pytest.raises(StorageError, match=ARCHIVE_FILE):
        archive.add(0, [{"role": "user", "content": "x"}])
    assert archive.stats()["messages"] == 0, "nothing half-written"
