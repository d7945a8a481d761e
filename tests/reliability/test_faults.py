"""Fault matrix: whatever fails, nothing committed is lost.

Already covered elsewhere, and not repeated here:
- one ``manage_history`` call with a summarizer that raises / times out / returns empty /
  returns tool calls: tests/standard/test_summarising.py
  (``test_summarizer_failure_keeps_every_message_and_leaves_the_marker``);
- provider 429 with Retry-After, 500, a hang past the timeout, malformed bodies, 401 on a
  real 127.0.0.1 server: tests/engine/test_faults.py;
- a process killed mid-session with SIGKILL, then resumed: tests/session/test_run_cli.py
  (``test_killed_mid_session_resumes_without_losing_or_repeating_turns``);
- a plugin that fails at import is reported and the others load: tests/kernel/test_plugins.py.

Here the same faults run through whole agent sessions that save their state, and each
test checks that every committed turn survives, in memory and on disk.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from mas.runtime import Runtime, hookimpl
from mas.runtime.errors import MasError
from mas.runtime.protocols import SummarizerError, SummaryRequest, SummaryResult
from mas.runtime.session import load_state, open_session
from mas.runtime.spec.loader import load_manifest_set

AGENT = """
apiVersion: mas/v1
kind: Agent
metadata: {{name: faulty}}
spec:
  models: [{{id: main, model: offline/default, context_window: 2000, max_tokens: 100}}]
  context_manager:
    type: summarising
    params: {{keep_turns: 1, summarizer: {summarizer}}}
"""
FILLER = "a note about the weather, the trains and the shops " * 25


class FlakyParams(BaseModel):
    """How the flaky summarizer fails."""

    model_config = ConfigDict(extra="forbid")
    mode: Literal["raise", "timeout", "empty", "tool_calls", "bind"] = "raise"


class Flaky:
    """A summarizer that always fails the way ``mode`` says."""

    calls_model = True

    def __init__(self, params: FlakyParams, ctx: Any) -> None:
        if params.mode == "bind":
            raise ValueError("flaky cannot bind here")
        self.mode = params.mode
        self.calls = 0

    def summarize(self, request: SummaryRequest, engine: Any) -> SummaryResult:
        self.calls += 1
        if self.mode == "raise":
            raise RuntimeError("summary backend exploded")
        if self.mode == "timeout":
            raise TimeoutError("summary call hung")
        if self.mode == "empty":
            return SummaryResult(text="   ")
        raise SummarizerError("tool_calls", "the summary reply called 1 tool(s)")


class FlakyPlugin:
    """Registers ``flaky``."""

    @hookimpl
    def mas_register_summarizers(self, registry: Any) -> None:
        registry.register("flaky", Flaky, params=FlakyParams, description="Always fails")


class BrokenRegistration:
    """Its registration hook raises."""

    @hookimpl
    def mas_register_summarizers(self, registry: Any) -> None:
        raise RuntimeError("registration blew up")


def _session(tmp_path: Path, runtime: Runtime, summarizer: str, state: Path) -> Any:
    path = tmp_path / "agent.yaml"
    path.write_text(textwrap.dedent(AGENT.format(summarizer=summarizer)))
    manifests = load_manifest_set([path])
    return open_session(runtime, manifests.agents[0], manifests, state_path=state)


def _play(session: Any, turns: int, start: int = 0) -> list[str]:
    asked = [f"Turn {i}: my code is K-{1000 + i}. {FILLER}" for i in range(start, start + turns)]
    for text in asked:
        session.send(text)
    return asked


def _users(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "user"]


@pytest.mark.parametrize("mode, kind", [("raise", "exception"), ("timeout", "timeout"),
                                        ("empty", "empty"), ("tool_calls", "tool_calls")])
def test_a_failing_summarizer_never_loses_a_committed_turn(
    tmp_path: Path, register_plugin: Any, mode: str, kind: str
) -> None:
    runtime = register_plugin(FlakyPlugin(), "flaky")
    events: list[Any] = []
    runtime.add_listener(events.append)
    state = tmp_path / "session.json"
    session = _session(tmp_path, runtime, f"{{type: flaky, params: {{mode: {mode}}}}}", state)
    asked = _play(session, 8)
    failures = [e for e in events if e.name == "compaction.exception"]
    assert failures and {e.data["kind"] for e in failures} == {kind}
    assert _users(session.history.messages) == asked  # nothing folded, nothing lost
    saved = load_state(state)
    assert saved["turns"] == 8 and _users(saved["history"]["messages"]) == asked
    assert saved["context_manager"]["compaction_in_progress"] is True  # the crash marker
    resumed = _session(tmp_path, runtime, f"{{type: flaky, params: {{mode: {mode}}}}}", state)
    assert _users(resumed.history.messages) == asked and resumed.turns == 8


def test_a_plugin_failing_at_bind_is_a_clear_error_and_the_saved_session_survives(
    tmp_path: Path, register_plugin: Any
) -> None:
    runtime = register_plugin(FlakyPlugin(), "flaky")
    state = tmp_path / "session.json"
    asked = _play(_session(tmp_path, runtime, "drop", state), 3)
    before = state.read_bytes()
    with pytest.raises(Exception) as caught:
        _session(tmp_path, runtime, "{type: flaky, params: {mode: bind}}", state)
    assert "flaky cannot bind here" in str(caught.value)
    assert state.read_bytes() == before
    assert _users(load_state(state)["history"]["messages"]) == asked


def test_a_plugin_failing_at_registration_stops_start_up_before_any_state_is_touched(
    tmp_path: Path, register_plugin: Any
) -> None:
    state = tmp_path / "session.json"
    asked = _play(_session(tmp_path, Runtime.create(), "drop", state), 2)
    before = state.read_bytes()
    with pytest.raises(Exception, match="registration blew up"):
        runtime = register_plugin(BrokenRegistration(), "broken")
        _session(tmp_path, runtime, "drop", state)
    assert state.read_bytes() == before
    assert _users(load_state(state)["history"]["messages"]) == asked


def test_a_plugin_failing_at_import_does_not_stop_a_session_from_resuming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "session.json"
    asked = _play(_session(tmp_path, Runtime.create(), "drop", state), 2)
    site = tmp_path / "site"
    (site / "broken_pkg").mkdir(parents=True)
    (site / "broken_pkg" / "__init__.py").write_text("raise ImportError('missing dep')\n")
    info = site / "mas_broken-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mas-broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[mas]\nbroken = broken_pkg\n")
    monkeypatch.syspath_prepend(str(site))
    runtime = Runtime.create()
    assert [f.entry_point for f in runtime.pm.failures] == ["broken"]
    session = _session(tmp_path, runtime, "drop", state)
    assert session.turns == 2
    more = _play(session, 1, start=2)
    assert _users(load_state(state)["history"]["messages"])[-1] == more[0]
    assert len(_users(load_state(state)["transcript"])) == 3 and _users(
        load_state(state)["transcript"])[:2] == asked


@pytest.mark.parametrize("where", ["file-as-folder", "proc"])
def test_an_unwritable_run_folder_fails_the_save_and_keeps_the_last_good_state(
    tmp_path: Path, where: str
) -> None:
    # chmod does not stop root (CI runs as root): use paths that fail for everyone.
    state = tmp_path / "session.json"
    session = _session(tmp_path, Runtime.create(), "drop", state)
    asked = _play(session, 2)
    good = state.read_bytes()
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder is expected")
    session.state_path = (blocker / "session.json") if where == "file-as-folder" \
        else Path("/proc/mas-lab-cannot-write-here/session.json")
    with pytest.raises(OSError):
        session.send("one more turn that cannot be saved")
    assert state.read_bytes() == good  # the last good state is whole and untouched
    assert _users(load_state(state)["history"]["messages"]) == asked
    assert _users(session.history.messages)[: len(asked)] == asked
    session.state_path = state  # the disk comes back: the next save carries every turn
    session.send("and the disk is back")
    assert _users(load_state(state)["transcript"])[-2:] == [
        "one more turn that cannot be saved", "and the disk is back"]


def test_record_events_into_an_impossible_folder_is_a_clear_os_error(tmp_path: Path) -> None:
    from mas.runtime.session import record_events

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OSError):
        record_events(Runtime.create(), blocker / "run", lambda: "s")
    assert issubclass(MasError, Exception)
