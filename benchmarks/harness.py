"""mas-lab's strategies behind the harness interface, and the loop that scores a session.

Scoring, per user turn (a turn makes one model call per tool round plus one):

- *pair breaks*: broken tool pairings (a result without its call, a call without its
  result) in the requests of the turn, counted with the kernel's ``pair_problems``;
- *over budget*: a request of the turn over 8,000 tokens (shared counter);
- *lost user message*: a request of the turn without the turn's own user message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks.counting import BUDGET, COUNTER, SUMMARIZER_WINDOW, FakeSummarizer, count
from benchmarks.peers import Message, Strategy
from benchmarks.synthetic import Session, requests_of
from mas.runtime import Runtime
from mas.runtime.context import (
    ContextPart,
    History,
    pair_problems,
    prepare_request,
)
from mas.runtime.protocols import BindContext
from mas.runtime.spec.binding import Binding, bind
from mas.runtime.spec.model_ref import ModelChoice, ModelRow, ModelScope

NO_MARGIN = {"safety_margin_ratio": 0, "reserve_tokens": 0}
LLM = {"type": "llm", "params": {"context_window": SUMMARIZER_WINDOW}}
MAS_LAB: dict[str, dict[str, Any]] = {
    "summarising (llm summarizer)": {"type": "summarising",
                                     "params": {"trimmer": NO_MARGIN, "summarizer": LLM}},
    "summarising (drop)": {"type": "summarising",
                           "params": {"trimmer": NO_MARGIN, "summarizer": "drop"}},
    "sliding_window (keep_turns 10)": {"type": "sliding_window",
                                       "params": {"trimmer": NO_MARGIN}},
    "sliding_window (max_tokens limit)": {"type": "sliding_window", "params": {
        "trimmer": NO_MARGIN, "keep_turns": None, "max_tokens": "limit"}},
    "stack (all)": {"type": "stack", "params": {"trimmer": NO_MARGIN}},
    "stack (max_messages 40)": {"type": "stack",
                                "params": {"trimmer": NO_MARGIN, "max_messages": 40}},
}
"""mas-lab strategies measured, by label: 8,000-token window, no reserve, no margin."""


class MasLab(Strategy):
    """A bound mas-lab context manager driven through the incremental session API."""

    def __init__(self, label: str, system: str, *, runtime: Runtime | None = None,
                 window: int = BUDGET, binding: dict[str, Any] | None = None,
                 engine: Any = None) -> None:
        self.name = f"mas-lab {label}"
        raw = binding if binding is not None else MAS_LAB[label]
        self.config = str(raw)
        self.runtime = runtime or Runtime.create()
        scope = ModelScope.build(agent_models=[ModelRow("main", "bench/fake")])
        ctx = BindContext(runtime=self.runtime, agent_name="bench", model_scope=scope,
                          turn_model=ModelChoice("bench/fake", "spec.models[id=main]", "main"))
        self.cm = bind("context_manager", Binding.model_validate(raw), ctx)
        self.history = History(estimator=COUNTER)
        self.parts = [ContextPart("agent", "agent/instructions", system, placement="system",
                                  priority=0, pinned=True)]
        self.summarizer = engine or (FakeSummarizer() if "llm" in label else None)
        self.window = window
        self.last: Any = None
        self.dropped_without_summary = 0
        self.forced_summaries = 0  # summary calls on requests with no room for history
        self.requests_with_loss = 0  # committed messages neither sent nor summarized
        self.messages_lost = 0

    def request(self, user: Message, working: list[Message]) -> list[Message]:
        """``prepare_request`` with the fake summarizer as the engine."""
        state = self.cm.state
        folded, summaries = state.folded_through, state.summary_count
        calls = self.summarizer.calls if self.summarizer else 0
        self.last = prepare_request(
            cm=self.cm, history=self.history, parts=self.parts, current_input=user,
            working_memory=working, window=self.window, reserve=0,
            engine=self.summarizer,  # type: ignore[arg-type]
        )
        state = self.cm.state
        if state.folded_through > folded and state.summary_count == summaries:
            self.dropped_without_summary += 1
        if self.summarizer and self.summarizer.calls > calls \
                and self.last.budget.history_hard_limit == 0:
            self.forced_summaries += 1
        cut = self.last.accounting.cut.messages
        self.requests_with_loss += int(cut > 0)
        self.messages_lost += cut
        return self.last.messages

    def commit(self, turn: list[Message]) -> None:
        """Append the turn and write back what the manager folded."""
        self.history.extend(turn)
        self.cm.commit(self.history)


@dataclass
class Score:
    """What one strategy did over one session."""

    name: str
    config: str
    turns: int = 0
    requests: int = 0
    pair_breaks: int = 0
    turns_over_budget: int = 0
    turns_lost_user: int = 0
    seconds: float = 0.0
    turn_seconds: list[float] = field(default_factory=list)
    facts_in_question: int = 0
    facts_planted: int = 0
    dropped_without_summary: int = 0
    forced_summaries: int = 0
    requests_with_loss: int | None = None
    messages_lost: int | None = None
    summarizer_calls: int | None = None
    summarizer_input_tokens: int | None = None
    summarizer_largest_request: int | None = None
    summarizer_over_window: int | None = None
    error: str | None = None


def run(strategy: Strategy, session: Session, turns: int | None = None, *,
        score: bool = True) -> Score:
    """Drive ``strategy`` through the first ``turns`` turns of ``session``.

    Only ``request`` and ``commit`` are timed; scoring is outside the clock. With
    ``score=False`` the requests are not checked (timing runs).
    """
    out = Score(strategy.name, strategy.config, facts_planted=len(session.facts))
    chosen = session.turns[:turns]
    for number, turn in enumerate(chosen, start=1):
        over = lost = False
        spent = 0.0
        for user, working in requests_of(turn):
            started = time.perf_counter()
            request = strategy.request(user, working)
            spent += time.perf_counter() - started
            out.requests += 1
            if number == len(chosen) and not working:
                text = " ".join(str(m.get("content")) for m in request)
                out.facts_in_question = sum(f in text for f in session.facts)
            if score:
                out.pair_breaks += len(pair_problems(request))
                over = over or count(request) > BUDGET
                lost = lost or not any(m.get("role") == "user" and
                                       m.get("content") == user["content"] for m in request)
        started = time.perf_counter()
        strategy.commit(turn.messages)
        spent += time.perf_counter() - started
        out.turn_seconds.append(spent)
        out.turns += 1
        out.turns_over_budget += int(over)
        out.turns_lost_user += int(lost)
    out.seconds = sum(out.turn_seconds)
    out.dropped_without_summary = getattr(strategy, "dropped_without_summary", 0)
    out.forced_summaries = getattr(strategy, "forced_summaries", 0)
    out.requests_with_loss = getattr(strategy, "requests_with_loss", None)
    out.messages_lost = getattr(strategy, "messages_lost", None)
    fake = strategy.summarizer
    if fake is not None:
        out.summarizer_calls = fake.calls
        out.summarizer_input_tokens = fake.input_tokens
        out.summarizer_largest_request = fake.largest_request
        out.summarizer_over_window = fake.over_window
    return out


__all__ = ["COUNTER", "MAS_LAB", "MasLab", "Score", "run"]
