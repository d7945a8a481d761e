"""The agent session: a minimal tool-calling loop over the bound context manager.

One user turn: the current input and this turn's working memory (tool calls and results)
are assembled with the managed committed history by
:func:`~mas.runtime.context.prepare_request` before every model call; when the model
stops calling tools the turn is committed — appended to history, written back by the
context manager, and saved atomically. A turn that fails part-way commits nothing, so
committed history is never lost.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mas.runtime.context import AssembledRequest, ContextPart, History, prepare_request
from mas.runtime.context.archive import Archive
from mas.runtime.context.calibration import digit_prior
from mas.runtime.degradation import Degradation
from mas.runtime.engine import Engine
from mas.runtime.events import Event
from mas.runtime.protocols import ContextManager, Message
from mas.runtime.runtime import Runtime
from mas.runtime.session import _provider_state
from mas.runtime.session.ledger import ledger_from_state, ledger_to_state
from mas.runtime.session.recall import SessionMemory
from mas.runtime.session.skills import SkillLibrary
from mas.runtime.session.store import StateJournal
from mas.runtime.session.tools import Tool
from mas.runtime.session.turn_faults import capped, count_turn_event, tool_loop
from mas.runtime.session.view import ContextUsageView, usage_view

PartsProvider = Callable[[str, str], Sequence[ContextPart]]

log = logging.getLogger(__name__)


@dataclass
class TurnResult:
    """What one user turn produced.

    :ivar answer: the final assistant text.
    :ivar messages: the turn's messages: user input, tool calls and results, the answer.
    :ivar llm_calls: turn-model calls this turn (summaries not included).
    :ivar compactions: compactions that ran during the turn.
    :ivar request: the last assembled request (numbers only are read from it).
    """

    answer: str
    messages: list[Message]
    llm_calls: int
    compactions: int
    request: AssembledRequest | None = None


@dataclass
class SessionSettings:
    """How a session reaches its model and bounds its request.

    :ivar window: resolved input window of the turn model.
    :ivar window_source: the field that supplied it.
    :ivar reserve: completion reserve.
    :ivar reserve_source: the field that supplied it.
    :ivar model_source: the field that chose the turn model.
    :ivar instructions: the agent's role prompt.
    :ivar max_tool_rounds: model calls allowed per turn before the turn is cut short.
    :ivar calibrate: scale window and reserve by the learned prompt_tokens / estimate
        ratio of the turn model (``spec.estimation.calibrate``, on by default); before it
        is learned, by :func:`~mas.runtime.context.calibration.digit_prior`.
    :ivar min_observations: model calls seen before that ratio is applied.
    :ivar max_reply_chars: longest reply text kept (``spec.budget.max_reply_chars``); a
        longer one is cut and counted as ``replies_capped``.
    """

    window: int
    reserve: int
    window_source: str = "resolved"
    reserve_source: str = "max_tokens"
    model_source: str = "agent"
    instructions: str = ""
    max_tool_rounds: int = 8
    calibrate: bool = True
    min_observations: int = 3
    max_reply_chars: int = 1_000_000


@dataclass
class AgentSession:
    """One conversation with one agent.

    :ivar runtime: plugins and event fan-out.
    :ivar agent_name: the agent's ``metadata.name``.
    :ivar cm: the bound context manager.
    :ivar engine: the engine (turn model, budget, cache, ledger).
    :ivar settings: window, reserve, instructions.
    :ivar tools: tools the model may call.
    :ivar skills: the skill library, or ``None``.
    :ivar state_path: where the session is saved after every turn (``None``: not saved).
    :ivar session_id: the session id (also on every event).
    """

    runtime: Runtime
    agent_name: str
    cm: ContextManager
    engine: Engine
    settings: SessionSettings
    tools: list[Tool] = field(default_factory=list)
    skills: SkillLibrary | None = None
    state_path: Path | None = None
    session_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    history: History = field(default_factory=History)
    transcript: list[Message] = field(default_factory=list)
    turns: int = 0
    compactions: int = 0
    last_request: AssembledRequest | None = None
    parts_provider: PartsProvider | None = None

    def __post_init__(self) -> None:
        self.engine.session_id = self.session_id
        # The engine observes every call it makes; the session reads the turn model's ratio.
        self.calibration = self.engine.calibration
        self.calibration.enabled = self.settings.calibrate
        self.calibration.min_observations = self.settings.min_observations
        if self.skills is not None and self.skills.available():
            self.tools = [*self.tools, self.skills.tool()]
        self.memory = SessionMemory(
            self.cm, self.state_path,
            lambda data: self.runtime.emit(Event("recall", data, self.session_id)),
            self.history.estimator,
        )
        if self.memory.tool is not None:
            self.tools = [*self.tools, self.memory.tool]
        self._by_name = {tool.name: tool for tool in self.tools}
        # The same schema objects every call: the request estimate remembers them.
        self._schemas = [tool.schema for tool in self.tools] or None
        # recall_context is offered once something has left the request: before, there
        # is nothing to find, and its schema would take room from the history.
        self._schemas_before_recall = [
            tool.schema for tool in self.tools if tool is not self.memory.tool] or None
        # Once offered, the schema counts against the history's hard limit but not its
        # soft trigger: offering recall moves no fold, and the final trim cuts nothing.
        estimator = self.history.estimator
        self._recall_schema_tokens = (
            estimator.tools(self._schemas) - estimator.tools(self._schemas_before_recall)
            if self.memory.tool is not None and self._schemas else 0)
        self._journal: StateJournal | None = None
        # Provider-side state loaded with a saved turn and not yet handed to the engine
        # (see _provider_state): given back just before the first call after a resume.
        self._provider_pending: dict[str, Any] | None = None
        # The saved numbers of the last request, kept until this process sends one: a
        # session resumed with no turn left would otherwise save ``context_usage: null``.
        self._restored_usage: dict[str, Any] | None = None
        saved = self._store().load() if self.state_path is not None else None
        if saved is not None:
            self.restore(saved)

    # -- the turn ----------------------------------------------------------------------

    def send(self, content: str | Message) -> TurnResult:
        """Run one user turn to its final answer and commit it.

        :raises ModelCallError: the model failed; nothing of the turn is committed.
        :raises BudgetExceededError: ``spec.budget.max_llm_calls`` ran out; likewise.
        """
        user: Message = (
            content if isinstance(content, dict) else {"role": "user", "content": content}
        )
        if self._provider_pending is not None:
            _provider_state.restore(self.engine, self._provider_pending)
            self._provider_pending = None
        working: list[Message] = []
        schemas = self._schemas if self.memory.has_archived() else self._schemas_before_recall
        calls = compactions = 0
        answer = ""
        self.memory.start_turn()
        stop_counting = self.runtime.add_listener(
            lambda event: count_turn_event(self.degradation, self.session_id, event))
        try:
            for round_number in range(self.settings.max_tool_rounds):
                request = self._prepare(user, working, schemas)
                compactions += int(request.managed.compacted)
                reply = capped(self.engine.turn(request.messages, tools=request.tools),
                               self.settings.max_reply_chars, self.turns + 1, self.degradation)
                calls += 1
                assistant: Message = {"role": "assistant", "content": reply.text or None}
                last_round = round_number == self.settings.max_tool_rounds - 1
                if reply.tool_calls and not last_round:
                    assistant["tool_calls"] = reply.tool_calls
                    working.append(assistant)
                    self.memory.begin_round(request, assistant)
                    results = self._run_tools(reply.tool_calls)
                    self.memory.track(reply.tool_calls, results, self.turns + 1)
                    working.extend(results)
                    continue
                if reply.tool_calls:
                    tool_loop(reply.tool_calls, self._by_name, self.settings.max_tool_rounds,
                              self.turns + 1, self.degradation)
                answer = reply.text or ""
                working.append({"role": "assistant", "content": answer})
                break
        finally:
            stop_counting()
        messages = [user, *working]
        self._commit(messages, compactions)
        return TurnResult(answer, messages, calls, compactions, self.last_request)

    @property
    def archive(self) -> Archive | None:
        """The session's archive (``None`` when nothing is archived), see
        :class:`~mas.runtime.session.recall.SessionMemory`."""
        return self.memory.archive

    @property
    def degradation(self) -> Degradation:
        """This session's degradation record (kept by its engine, saved with the session).

        Add to it with ``session.degradation.add(kind, count, reason=...)``.
        """
        return self.engine.degradation

    def _prepare(
        self, user: Message, working: list[Message], schemas: list[dict[str, Any]] | None
    ) -> AssembledRequest:
        window, reserve, source = self.settings.window, self.settings.reserve, ""
        ratio = self.calibration_ratio
        if self.calibration.enabled and not self.calibration.learned(self.engine.model):
            ratio = digit_prior(_texts([*self.history.messages, user, *working]))
        if ratio != 1.0:
            # Budgets are in estimated tokens: a provider counting r times the estimate
            # leaves window / r estimated tokens of room.
            window, reserve = math.floor(window / ratio), math.ceil(reserve / ratio)
            source = f" (calibrated x{ratio:.3f})"
        request = prepare_request(
            cm=self.cm,
            history=self.history,
            parts=self._parts(),
            current_input=user,
            working_memory=working,
            tools=schemas,
            window=window,
            reserve=reserve,
            window_source=self.settings.window_source + source,
            reserve_source=self.settings.reserve_source,
            engine=self.engine,
            runtime=self.runtime,
            session_id=self.session_id,
            served_tokens=self.memory.served_tokens,
            trigger_exempt=self._recall_schema_tokens if schemas is self._schemas else 0,
        )
        self.last_request = request
        archived = self.memory.after_request(self.history, request)
        cut = request.accounting.cut if request.accounting is not None else None
        if cut is not None and cut.messages:
            self.degradation.add(
                "budget_cuts",
                reason=f"turn {self.turns + 1}: {cut.messages} committed message(s) "
                f"({cut.tokens} estimated tokens) cut by the final trim "
                f"({archived} newly archived)",
            )
        return request

    def _parts(self) -> list[ContextPart]:
        parts: list[ContextPart] = []
        if self.settings.instructions:
            parts.append(
                ContextPart(
                    "agent",
                    "agent/instructions",
                    self.settings.instructions,
                    placement="system",
                    priority=0,
                    pinned=True,
                )
            )
        if self.skills is not None:
            parts.extend(self.skills.parts())
        for collected in self.runtime.call_hook(
            "mas_collect_context_parts", agent_name=self.agent_name, session_id=self.session_id
        ):
            parts.extend(collected or [])
        if self.parts_provider is not None:
            parts.extend(self.parts_provider(self.agent_name, self.session_id))
        return parts

    def _run_tools(self, calls: Iterable[dict[str, Any]]) -> list[Message]:
        results = []
        for call in calls:
            function = call.get("function") or {}
            name = function.get("name", "")
            tool = self._by_name.get(name)
            if tool is None:
                text, ok = f"error: no tool named {name!r}", False
            else:
                text, ok = tool.invoke(function.get("arguments"))
            self.runtime.emit(Event("tool.call", {"tool": name, "ok": ok}, self.session_id))
            results.append({"role": "tool", "tool_call_id": call.get("id", ""), "content": text})
        return results

    def _commit(self, messages: list[Message], compactions: int) -> None:
        # History keeps recall results as stubs (they served this turn); the transcript
        # keeps what the model read.
        self.history.extend(self.memory.committed(messages))
        self.cm.commit(self.history)
        self.transcript.extend(messages)
        self.turns += 1
        self.compactions += compactions
        self.runtime.emit(
            Event(
                "session.turn",
                {
                    "turn": self.turns,
                    "messages": len(messages),
                    "history_messages": len(self.history),
                    "history_tokens": self.history.total_tokens,
                },
                self.session_id,
            )
        )
        self.save()

    # -- persistence and inspection ---------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """Everything needed to resume: history, manager state, transcript, ledger, skills,
        and the provider-side state of the engine's conversations (``provider_state``)."""
        provider = self._provider_pending
        if provider is None:
            provider = _provider_state.capture(self.engine)
        return {
            "session_id": self.session_id,
            "agent": self.agent_name,
            "model": self.engine.model,
            "turns": self.turns,
            "compactions": self.compactions,
            "history": self.history.to_state(),
            "context_manager": self.cm.to_state(),
            "transcript": self.transcript,
            "ledger": ledger_to_state(self.engine.ledger),
            "degradation": self.degradation.to_state(),
            "calibration": self.calibration.to_state(),
            "skills": dict(self.skills.active) if self.skills else {},
            "context_usage": (self.inspect_context().to_dict() if self.last_request
                              else self._restored_usage),
            "provider_state": provider,
            "recall": self.memory.to_state(),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Load a state written by :meth:`to_state` (the session id comes with it)."""
        self.session_id = state["session_id"]
        self.engine.session_id = self.session_id
        self.turns = state["turns"]
        self.compactions = state.get("compactions", 0)
        self.history = History.from_state(state["history"], estimator=self.history.estimator)
        self.cm.load_state(state["context_manager"])
        self.transcript = list(state["transcript"])
        self.engine.ledger = ledger_from_state(state["ledger"])
        self.degradation.load_state(state.get("degradation"))
        self.calibration.load_state(state.get("calibration"))
        self.memory.load_state(state.get("recall"))
        if (state.get("context_manager") or {}).get("compaction_in_progress"):
            log.warning(
                "session %s: its last compaction did not finish (failed or interrupted; "
                "the crash marker is set); the next turn over budget tries again",
                self.session_id,
            )
        if self.skills is not None:
            self.skills.active = dict(state.get("skills", {}))
        # Not given to the engine yet: that would import litellm even when no turn is left.
        self._provider_pending = dict(state.get("provider_state") or {})
        self._restored_usage = state.get("context_usage")

    def save(self) -> None:
        """Save after a turn: one journal line, or a new snapshot (no-op without
        ``state_path``); see :mod:`mas.runtime.session.store`."""
        if self.state_path is not None:
            self._store().save(self.to_state())

    def compact_state(self) -> None:
        """Fold the journal into one ``session.json`` (done when the session ends)."""
        if self.state_path is not None:
            self._store().compact(self.to_state())

    def _store(self) -> StateJournal:
        # state_path may be pointed elsewhere between turns: a new path starts a new store.
        if self._journal is None or self._journal.path != Path(str(self.state_path)):
            self._journal = StateJournal(Path(str(self.state_path)))
        return self._journal

    @property
    def calibration_ratio(self) -> float:
        """The learned prompt_tokens / estimate ratio in force (1.0 when off or unlearned)."""
        if not self.calibration.enabled:
            return 1.0
        return self.calibration.ratio(self.engine.model)

    def inspect_context(self) -> ContextUsageView:
        """The latest request's numbers, usage, caches and cost: never any text."""
        return usage_view(self)


def _texts(messages: Iterable[Message]) -> list[str]:
    return [m["content"] for m in messages if isinstance(m.get("content"), str)]
