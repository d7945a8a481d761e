"""Issue 23: recall that does not displace the conversation, and nothing cut is
unrecallable — through the real offline model and the session's store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mas.runtime import Runtime
from mas.runtime.context import BudgetSettings, ContextBudget, History, prepare_request
from mas.runtime.context.groups import pair_problems
from mas.runtime.protocols import ArchiveSettings, ManagedHistory
from mas.runtime.session.recall import ARCHIVE_FILE, RECALL_TOOL, SessionMemory

# Long enough that the recall result outweighs its stub (a shorter one is kept whole).
FACT = ("The warehouse door code is KX-5521. It opens the north loading bay beside the "
        "cold store, from six in the morning until ten at night on weekdays, and the "
        "alarm panel behind it needs the same code within thirty seconds.")
FILLER = "Noted, thanks. " + "We talked about shipping schedules and nothing else. " * 12
QUESTION = "What is the warehouse door code?"


def play(session: Any, turns: int = 30) -> list[str]:
    answers = [session.send(FACT).answer]
    answers += [session.send(f"Turn {i}. {FILLER}").answer for i in range(turns)]
    answers.append(session.send(QUESTION).answer)
    return answers


def recall_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ids = {c["id"] for m in messages for c in m.get("tool_calls") or []
           if c["function"]["name"] == RECALL_TOOL}
    return [m for m in messages if m.get("role") == "tool" and m.get("tool_call_id") in ids]


def test_a_recall_result_is_committed_as_a_stub_and_counted(make_session, tmp_path: Path) -> None:
    runtime = Runtime.create()
    events: list[Any] = []
    runtime.add_listener(events.append)
    state = tmp_path / "run" / "session.json"
    session = make_session(window=3000, params="{keep_turns: 2, summarizer: drop, recall: true}",
                           runtime=runtime, state=state)
    assert "KX-5521" in play(session)[-1]
    [committed] = recall_results(session.history.messages)
    [read] = recall_results(session.transcript)
    assert committed["content"].startswith("[recall_context result shown in turn 32 only")
    assert "KX-5521" in read["content"] and "KX-5521" not in committed["content"]
    assert not pair_problems(session.history.messages), "the call/result pair stays valid"
    counts = session.inspect_context().recall
    assert counts["calls"] == 1 and counts["found"] == 1 and counts["released"] > 0
    # The recall round: its budget excluded the result, so nothing folded or was cut.
    names = [e.name for e in events]
    after = names[len(names) - 1 - names[::-1].index("recall"):]
    assert "compaction.start" not in after
    assembled = [e for e in events if e.name == "context.assembled"][-1].data
    assert assembled["served_tokens"] > 0 and assembled["accounting"]["cut"]["messages"] == 0
    # Resumed from the journal: the same history, stub included; the transcript whole.
    resumed = make_session(window=3000, params="{keep_turns: 2, summarizer: drop, recall: true}",
                           state=state)
    assert resumed.history.messages == session.history.messages
    assert resumed.transcript == session.transcript
    assert resumed.inspect_context().recall == counts


def test_recall_is_sized_to_the_room_left(make_session) -> None:
    runtime = Runtime.create()
    events: list[Any] = []
    runtime.add_listener(events.append)
    session = make_session(window=1800, runtime=runtime,
                           params="{keep_turns: 2, summarizer: drop, recall: true}")
    play(session, 12)
    [recall] = [e.data for e in events if e.name == "recall"]
    request = session.last_request
    assert recall["tokens"] <= recall["budget"] < 2000
    assert session.inspect_context().recall["room_capped"] == 1
    assert request is not None and request.accounting is not None
    assert request.accounting.cut.messages == 0


def test_what_the_trim_cuts_is_archived_and_recalled(make_session, tmp_path: Path) -> None:
    """``stack`` bounded by no token limit keeps everything, so the final trim cuts: the cut
    goes to the archive."""
    session = make_session(window=2500, cm="stack", params="{recall: true, max_tokens: null}",
                           state=tmp_path / "run" / "session.json")
    answers = play(session, 20)
    view = session.inspect_context()
    assert view.archive is not None and view.archive["cut"] > 0
    assert view.archive["messages"] == view.archive["cut"], "stack folds nothing itself"
    assert (tmp_path / "run" / ARCHIVE_FILE).is_file()
    assert "KX-5521" in answers[-1]


class Tail:
    """A manager that does not archive: it sends the last two committed messages."""

    budget_settings = BudgetSettings()

    def manage_history(self, history: History, budget: ContextBudget,
                       **_: Any) -> ManagedHistory:
        start = max(history.end - 2, history.base)
        return ManagedHistory(messages=history.slice(start),
                              tokens=history.tokens_between(start, history.end))


def test_a_manager_without_an_archive_gets_one_from_the_session() -> None:
    memory = SessionMemory(Tail(), None, lambda data: None)
    assert memory.archive is None and memory.tool is None
    history = History([{"role": "user", "content": f"fact {i}: zebra-{i}"} for i in range(5)])
    request = prepare_request(cm=Tail(), history=history, window=100_000,
                              current_input={"role": "user", "content": "next"})
    assert memory.after_request(history, request) == 3
    assert memory.archive is not None and memory.archive.stats()["messages"] == 3
    assert memory.after_request(history, request) == 0, "each message archived once"
    assert memory.archive.search("zebra-1", max_tokens=100).positions[0] == 1


class ArchivingTail(Tail):
    """``Tail`` that archives and offers recall."""

    archive_settings = ArchiveSettings(recall=True)

    def attach_archive(self, archive: Any) -> None:
        self.archive = archive


def test_a_failed_recall_call_does_not_take_another_calls_stub() -> None:
    cm = ArchivingTail()
    memory = SessionMemory(cm, None, lambda data: None)
    assert memory.tool is not None and memory.archive is not None
    memory.archive.add(0, [{"role": "user", "content": "The locker code is KX-5521. " * 20}])
    history = History([{"role": "user", "content": "hello"}], base=1)
    request = prepare_request(cm=cm, history=history, window=8000,
                              current_input={"role": "user", "content": "code?"})
    calls = [{"id": i, "type": "function",
              "function": {"name": RECALL_TOOL, "arguments": a}}
             for i, a in (("bad", "{not json"), ("good", '{"query": "locker code"}'))]
    assistant = {"role": "assistant", "content": None, "tool_calls": calls}
    memory.begin_round(request, assistant)
    results = [{"role": "tool", "tool_call_id": c["id"],
                "content": memory.tool.invoke(c["function"]["arguments"])[0]} for c in calls]
    memory.track(calls, results, turn=2)
    assert memory.served_tokens > 0
    committed = memory.committed([assistant, *results])
    assert committed[1] == results[0], "the failed call's error stays as it was"
    assert committed[2]["content"].startswith("[recall_context result shown in turn 2 only")
    assert memory.counts.calls == 1 and memory.counts.released > 0


def test_a_recall_result_shorter_than_its_stub_is_committed_as_it_came() -> None:
    cm = ArchivingTail()
    memory = SessionMemory(cm, None, lambda data: None)
    assert memory.tool is not None and memory.archive is not None
    memory.archive.add(0, [{"role": "user", "content": "The locker code is KX-5521."}])
    history = History([{"role": "user", "content": "hello"}], base=1)
    request = prepare_request(cm=cm, history=history, window=8000,
                              current_input={"role": "user", "content": "code?"})
    calls = [{"id": "c1", "type": "function",
              "function": {"name": RECALL_TOOL, "arguments": '{"query": "locker code"}'}}]
    assistant = {"role": "assistant", "content": None, "tool_calls": calls}
    memory.begin_round(request, assistant)
    results = [{"role": "tool", "tool_call_id": "c1",
                "content": memory.tool.invoke(calls[0]["function"]["arguments"])[0]}]
    memory.track(calls, results, turn=2)
    assert "KX-5521" in results[0]["content"]
    assert memory.committed([assistant, *results]) == [assistant, *results], \
        "a stub would cost more than the text it stands for"
    assert memory.served_tokens == 0 and memory.counts.released == 0
