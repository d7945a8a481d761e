"""Agent sessions: turns, tools, skills, persistence, failures and inspect_context."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from mas.runtime import Runtime, hookimpl
from mas.runtime.context import ContextPart, pair_problems
from mas.runtime.errors import BudgetExceededError
from mas.runtime.session import AgentSession, Tool, load_state, write_atomic

FILLER = "background chatter about nothing in particular " * 30


def test_answers_from_what_is_in_the_request(make_session: Callable[..., AgentSession]) -> None:
    session = make_session()
    session.send("My order id is ORD-7781.")
    result = session.send("What was my order id?")
    assert "ORD-7781" in result.answer
    assert [m["role"] for m in result.messages] == ["user", "assistant"]
    assert session.turns == 2


def test_tool_calls_run_and_stay_paired(make_session: Callable[..., AgentSession]) -> None:
    seen: list[str] = []

    def lookup_order(order_id: str) -> str:
        """Look an order up."""
        seen.append(order_id)
        return f"order {order_id}: status shipped, carrier DHL"

    session = make_session(tools=[Tool.from_function(lookup_order)])
    result = session.send('CALL lookup_order {"order_id": "A-17"}')
    assert seen == ["A-17"]
    roles = [m["role"] for m in result.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert result.messages[1]["tool_calls"][0]["function"]["name"] == "lookup_order"
    assert "shipped" in result.answer
    assert pair_problems(session.history.messages) == []


def test_unknown_tool_and_bad_arguments_come_back_as_errors(make_session: Callable[..., AgentSession]) -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    tool = Tool.from_function(add)
    assert tool.invoke('{"a": 1, "b": 2}') == ("3", True)
    text, ok = tool.invoke('{"a": 1}')
    assert not ok and text.startswith("error: TypeError")
    assert tool.parameters == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }


def test_context_parts_hook_reaches_the_system_message(make_session: Callable[..., AgentSession]) -> None:
    def mas_collect_context_parts(agent_name: str, session_id: str) -> list[ContextPart]:
        return [ContextPart("memory", "memory/seed", f"Customer tier for {agent_name}: gold.",
                            placement="memory", pinned=True)]

    runtime = Runtime.create(plugins=[("memory", SimpleNamespace(
        mas_collect_context_parts=hookimpl(mas_collect_context_parts)))])
    session = make_session(runtime=runtime)
    result = session.send("What is the customer tier?")
    assert "gold" in result.answer
    system = result.request.messages[0]  # type: ignore[union-attr]
    assert system["role"] == "system" and "Customer tier for tester: gold." in system["content"]
    sections = [p["section_id"] for p in result.request.parts]  # type: ignore[union-attr]
    assert sections == ["agent/instructions", "memory/seed"]


def test_state_is_saved_and_restored(tmp_path: Path, make_session: Callable[..., AgentSession]) -> None:
    state = tmp_path / "session.json"
    first = make_session(state=state)
    first.send("The refund code is RF-2210.")
    first.send("Noted, thanks.")
    reopened = make_session(state=state)
    assert reopened.session_id == first.session_id
    assert reopened.turns == 2
    assert reopened.history.messages == first.history.messages
    assert reopened.engine.ledger.llm_calls == first.engine.ledger.llm_calls
    assert "RF-2210" in reopened.send("What is the refund code?").answer
    assert load_state(state)["turns"] == 3


def test_failed_turn_commits_nothing(tmp_path: Path, make_session: Callable[..., AgentSession]) -> None:
    """A failed model call never loses committed history (DESIGN §10)."""
    state = tmp_path / "session.json"
    session = make_session(state=state, calls=2)
    session.send("Remember the code ZX-9.")
    session.send("And the colour blue.")
    before_history = list(session.history.messages)
    before_file = state.read_bytes()
    with pytest.raises(BudgetExceededError, match="max_llm_calls"):
        session.send("What was the code?")
    assert session.history.messages == before_history
    assert state.read_bytes() == before_file
    assert session.turns == 2


def test_compaction_keeps_the_session_inside_its_window(make_session: Callable[..., AgentSession]) -> None:
    session = make_session(window=2000)
    session.send("The account number is ACC-55-1234.")
    for turn in range(12):
        result = session.send(f"Turn {turn}. {FILLER}")
        assert result.request is not None
        assert result.request.estimate <= result.request.budget.hard_budget
    assert session.compactions >= 1
    view = session.inspect_context()
    assert view.compactions == session.compactions
    assert view.estimated_prompt_tokens is not None and view.window == 2000
    assert view.prompt_tokens_total > view.estimated_prompt_tokens, "cumulative usage keeps every call"


def test_skill_activation_pins_the_body(tmp_path: Path, make_session: Callable[..., AgentSession]) -> None:
    skill = tmp_path / "skills" / "refunds" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("Refunds over 100 EUR need a manager approval code.")
    session = make_session()
    assert "activate_skill" in {t.name for t in session.tools}
    session.send('CALL activate_skill {"name": "refunds"}')
    result = session.send("Hello again.")
    system = result.request.messages[0]["content"]  # type: ignore[union-attr]
    assert "manager approval code" in system
    assert any(p["section_id"] == "skills/activated/refunds" for p in result.request.parts)  # type: ignore[union-attr]


def test_a_skill_saved_with_a_byte_order_mark_loads_without_it(
        tmp_path: Path, make_session: Callable[..., AgentSession]) -> None:
    skill = tmp_path / "skills" / "refunds" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_bytes(b"\xef\xbb\xbfRefunds need approval.")
    session = make_session(pin="false")
    result = session.send('CALL activate_skill {"name": "refunds"}')
    assert '<skill_content name="refunds">\nRefunds need approval.\n' in result.messages[2]["content"]


def test_skill_not_pinned_when_pin_activated_is_false(tmp_path: Path, make_session: Callable[..., AgentSession]) -> None:
    skill = tmp_path / "skills" / "refunds" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("Refunds need approval.")
    session = make_session(pin="false")
    result = session.send('CALL activate_skill {"name": "refunds"}')
    assert '<skill_content name="refunds">' in result.messages[2]["content"]
    follow = session.send("Hello.")
    assert "Refunds need approval." not in follow.request.messages[0]["content"]  # type: ignore[union-attr]
    assert any("Refunds need approval." in str(m.get("content")) for m in follow.request.messages[1:])  # type: ignore[union-attr]


def test_unknown_skill_is_a_tool_error(tmp_path: Path, make_session: Callable[..., AgentSession]) -> None:
    (tmp_path / "skills" / "a").mkdir(parents=True)
    (tmp_path / "skills" / "a" / "SKILL.md").write_text("x")
    session = make_session()
    result = session.send('CALL activate_skill {"name": "nope"}')
    assert "unknown skill 'nope'; available: a" in result.messages[2]["content"]


def test_inspect_context_never_contains_text(make_session: Callable[..., AgentSession]) -> None:
    secret = "SECRET-PLANTED-7731"

    def store(note: str) -> str:
        """Store a note."""
        return f"stored {note}"

    session = make_session(window=1500, tools=[Tool.from_function(store)])
    session.send(f"My password is {secret}. {FILLER}")
    session.send(f'CALL store {{"note": "{secret}"}}')
    for turn in range(6):
        session.send(f"Turn {turn}. {FILLER}")
    view = json.dumps(session.inspect_context().to_dict())
    assert secret not in view
    assert "password" not in view and "chatter" not in view
    assert json.loads(view)["turns"] == 8


def test_write_atomic_keeps_the_old_file_when_the_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    write_atomic(path, "old")

    def failing_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, "new")
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_third_party_summarizer_runs_in_a_session(make_session: Callable[..., AgentSession]) -> None:
    """The test plugin's `first_words` summarizer, bound by type string, folds old turns."""
    session = make_session(window=1500, params="{keep_turns: 1, summarizer: {type: first-words, params: {max_words: 4}}}")
    session.send("The parcel locker code is PL-3390 and it expires Friday.")
    for turn in range(8):
        result = session.send(f"Turn {turn}. {FILLER}")
    assert session.compactions >= 1
    assert session.engine.ledger.llm_calls == 9, "first_words makes no model call"
    sent = "\n".join(str(m.get("content")) for m in result.request.messages)  # type: ignore[union-attr]
    assert "user: The parcel locker code" in sent, "the summary row carries the first words"


class _Wordy:
    """A model provider whose tokenizer counts 1.5x the kernel's estimate."""

    @staticmethod
    def make() -> object:
        from mas.library.standard.offline.handler import OfflineLLM

        class WordyLLM(OfflineLLM):
            def answer(self, model, messages, optional_params, model_response, session=""):  # type: ignore[no-untyped-def]
                response = super().answer(model, messages, optional_params, model_response,
                                          session)
                response.usage.prompt_tokens = round(response.usage.prompt_tokens * 1.5)
                return response

        return WordyLLM()

    @hookimpl
    def mas_register_model_providers(self, registry) -> None:  # type: ignore[no-untyped-def]
        registry.register("wordy", self.make)


def test_calibration_scales_the_budget_by_the_learned_ratio(tmp_path: Path) -> None:
    """Issue 4 item 7: provider prompt_tokens vs the estimate, learned per model, optional."""
    from mas.runtime.session import open_session
    from mas.runtime.spec.loader import load_manifest_set

    runtime = Runtime.create(plugins=[("wordy", _Wordy())])
    views = {}
    for calibrate in (False, True):
        path = tmp_path / f"agent-{calibrate}.yaml"
        path.write_text(
            "apiVersion: mas/v1\nkind: Agent\nmetadata: {name: w}\nspec:\n"
            "  models: [{id: main, model: wordy/default, context_window: 6000, max_tokens: 300}]\n"
            f"  estimation: {{calibrate: {str(calibrate).lower()}, min_observations: 2}}\n"
        )
        manifests = load_manifest_set([path])
        session = open_session(runtime, manifests.agents[0], manifests)
        for turn in range(4):
            result = session.send(f"Turn {turn}. {FILLER}")
        views[calibrate] = (session.inspect_context(), result.request)
    plain, _ = views[False]
    calibrated, request = views[True]
    assert plain.calibration_ratio == 1.0 and plain.window == 6000
    assert 1.45 <= calibrated.calibration_ratio <= 1.55
    assert request is not None and request.budget.window == int(6000 / calibrated.calibration_ratio)
    assert "calibrated x1.5" in request.budget.window_source
    # Shown side by side, each named: what was declared, what the estimates are held to.
    from mas.runtime.cli.chat_cmd import usage_lines
    from mas.runtime.cli.run_cmd import turn_line

    assert plain.declared_window == calibrated.declared_window == 6000
    held = request.budget.window
    lines = usage_lines(calibrated.to_dict())
    assert lines[1].startswith("window       6000 tokens declared (spec.models")
    assert lines[2].startswith(f"  calibrated {held} estimated tokens, the same room as the estimates")
    assert "calibrated x1.5" in lines[2] and "of the calibrated window" in lines[3]
    assert not any("calibrated" in line for line in usage_lines(plain.to_dict()))
    assert f"/{held} (" in turn_line(session, result, 0.1)
    assert "; 6,000 declared)" in turn_line(session, result, 0.1)
