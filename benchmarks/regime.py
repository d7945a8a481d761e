"""The compaction regime (issue 22): one tool-heavy session where folding happens all the time.

Every other per-turn figure of ``make bench`` runs under a window where nothing compacts;
this one measures the regime the defaults meet with a small model:

- the workload: one scripted agent session of :data:`TURNS` user turns (about 500 model
  requests), every turn one to three tool rounds, tool results of 2,000-60,000 characters
  (about a dozen larger than the whole window), a request budget of 8,000 tokens, and the
  summarizer on the same model with the same 8,000-token window (a second row gives it a
  128,000-token window);
- mas-lab's strategies with their default params (``summarising``: identifier check
  ``repair``, default margins), langmem's running summary and LangChain's
  SummarizationMiddleware driven through the same session loop, and LangChain's
  ``trim_messages`` for time;
- three figures: cost and correctness per strategy, time per turn over every turn
  (compaction turns included), and a cold bound of 10,000 messages.

The fake summarizer answers at once, so the times are the strategies' own work (the
identifier check and bookkeeping included), never a model's.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from benchmarks.counting import BUDGET, COUNTER, FakeSummarizer, count
from benchmarks.figures import Figure
from benchmarks.harness import MasLab
from benchmarks.peers import (
    LangmemSummary,
    Message,
    Strategy,
    SummarizationMiddlewarePeer,
)
from benchmarks.regime_timing import MILLION, cold_bound, per_turn
from benchmarks.report import held
from benchmarks.synthetic import Session, Shape, make_session, requests_of
from mas.runtime.context import pair_problems
from mas.runtime.events import Event

TURNS = 169
"""User turns of the full workload (about 500 model requests)."""

QUICK_TURNS = 30
"""User turns with ``--quick``."""

LARGE_SUMMARIZER_WINDOW = 128_000
"""The second row's summarizer window."""


@dataclass(frozen=True)
class ToolHeavy(Shape):
    """Every turn calls tools: one to three rounds, mostly one call a round."""

    small_chars: tuple[int, int] = (2_000, 6_000)
    codes: bool = True

    def rounds(self, rng: random.Random) -> int:
        """One to three tool rounds, evenly."""
        return rng.randint(1, 3)

    def calls(self, rng: random.Random) -> int:
        """One call for 70 % of rounds, two for the rest."""
        return 1 if rng.random() < 0.7 else 2


SHAPE = ToolHeavy()
"""The regime's turns."""

DEFAULTS: dict[str, Any] = {"type": "summarising"}
"""``summarising`` with every param at its default."""

STRATEGIES: dict[str, dict[str, Any]] = {
    "summarising (defaults)": DEFAULTS,
    "summarising (defaults, 128k summarizer window)": {"type": "summarising", "params": {
        "summarizer": {"type": "llm",
                       "params": {"context_window": LARGE_SUMMARIZER_WINDOW}}}},
    "summarising (drop)": {"type": "summarising", "params": {"summarizer": "drop"}},
    "sliding_window (defaults)": {"type": "sliding_window"},
    "stack (defaults)": {"type": "stack"},
}
"""mas-lab strategies of the regime, by label; only the summarizer rows call a model."""

SUMMARIZER_WINDOWS = {"summarising (defaults)": BUDGET,
                      "summarising (defaults, 128k summarizer window)": LARGE_SUMMARIZER_WINDOW}
"""The fake summarizer's window per summarizing row (the default row inherits the agent's)."""

TIMED = ("summarising (defaults)", "summarising (drop)", "sliding_window (defaults)",
         "stack (defaults)")
"""Strategies timed per turn and on the cold bound."""


def session(quick: bool = False) -> Session:
    """The regime's session (seeded: the same messages for every strategy and peer)."""
    return make_session(QUICK_TURNS if quick else TURNS, shape=SHAPE)


@dataclass
class Recording(FakeSummarizer):
    """The fake summarizer model, keeping each call's input tokens in order, so that the
    identifier check's re-asks (the last calls of a compaction) can be told apart."""

    sizes: list[int] = field(default_factory=list)

    def answer(self, texts: list[str], tokens: int, max_tokens: int | None) -> str:
        """Record the call's size, then answer as the fake does."""
        self.sizes.append(tokens)
        return super().answer(texts, tokens, max_tokens)


def strategy(label: str, system: str) -> MasLab:
    """The mas-lab strategy ``label`` of :data:`STRATEGIES`, with its fake summarizer."""
    window = SUMMARIZER_WINDOWS.get(label)
    engine = Recording(window=window) if window is not None else None
    return MasLab(label, system, binding=STRATEGIES[label], engine=engine)


def peers(system: str) -> tuple[list[Strategy], list[str]]:
    """langmem and SummarizationMiddleware, or a note for each that is not installed.

    Their fake summarizer has the agent's 8,000-token window: same model, same window.
    """
    made: list[Strategy] = []
    notes: list[str] = []
    for cls in (LangmemSummary, SummarizationMiddlewarePeer):
        try:
            peer = cls(system)
        except ImportError as exc:
            notes.append(f"{cls.name}: not installed ({exc.name or exc})")
            continue
        assert peer.summarizer is not None
        peer.summarizer.window = BUDGET
        made.append(peer)
    return made, notes


# -- driving one strategy through the session -------------------------------------------


@dataclass
class Compactions:
    """What a mas-lab manager's events said over the session.

    :ivar stops: ``compaction.stop`` events (prune-only compactions included).
    :ivar folds: those that folded messages.
    :ivar inside: those on a request with tool results of the turn in flight.
    :ivar failed: ``compaction.exception`` events.
    :ivar reask_calls: summarizer calls the identifier check made (``summary.checked``).
    :ivar reask_tokens: their input tokens.
    :ivar in_flight: set by the session loop before each request.
    """

    fake: Recording | None = None
    stops: int = 0
    folds: int = 0
    inside: int = 0
    failed: int = 0
    reask_calls: int = 0
    reask_tokens: int = 0
    in_flight: bool = False

    def __call__(self, event: Event) -> None:
        """The runtime listener."""
        if event.name == "compaction.stop":
            self.stops += 1
            self.folds += int(bool(event.data.get("folded_messages")))
            self.inside += int(self.in_flight)
        elif event.name == "compaction.exception":
            self.failed += 1
        elif event.name == "summary.checked":
            calls = int(event.data.get("llm_calls") or 0)
            self.reask_calls += calls
            if calls and self.fake is not None:
                self.reask_tokens += sum(self.fake.sizes[-calls:])


@dataclass
class Row:
    """What one strategy did over the regime's session (``None``: not observable)."""

    name: str
    requests: int = 0
    over_budget: int = 0
    broken: int = 0
    lossy: int | None = None
    no_room: int = 0
    compactions: Compactions | None = None
    identifiers: dict[str, int] = field(default_factory=dict)
    folded_tokens: int = 0
    summarizer: FakeSummarizer | None = None

    @property
    def floor(self) -> int:
        """Fewest summarizer calls that can read what was folded once: its tokens over
        the summarizer's window, rounded up."""
        window = self.summarizer.window if self.summarizer is not None else BUDGET
        return math.ceil(self.folded_tokens / window)


def drive(target: Strategy, sess: Session) -> Row:
    """Run ``target`` through every request of ``sess`` and score each request."""
    row = Row(target.name, summarizer=target.summarizer)
    watch = None
    if isinstance(target, MasLab):
        fake = target.summarizer if isinstance(target.summarizer, Recording) else None
        watch = row.compactions = Compactions(fake)
        target.runtime.add_listener(watch)
    for turn in sess.turns:
        for user, working in requests_of(turn):
            if watch is not None:
                watch.in_flight = bool(working)
            request = target.request(user, working)
            row.requests += 1
            if isinstance(target, MasLab) and target.last.accounting.cut.messages:
                row.no_room += int(target.last.budget.history_hard_limit <= 0)
            row.over_budget += int(count(request) > BUDGET)
            row.broken += int(bool(pair_problems(request)))
        target.commit(turn.messages)
    row.folded_tokens = count(folded_originals(target, sess.messages()))
    if isinstance(target, MasLab):
        row.lossy = target.requests_with_loss
        row.identifiers = dict(target.cm.state.identifiers)
    return row


def folded_originals(target: Strategy, flat: list[Message]) -> list[Message]:
    """The committed messages (as the session wrote them) that left ``target``'s window."""
    if isinstance(target, MasLab):
        return flat[: target.cm.state.folded_through]
    if isinstance(target, LangmemSummary):
        ids = target.running.summarized_message_ids if target.running is not None else set()
        return [m for m, lc in zip(flat, target.history, strict=False) if lc.id in ids]
    if isinstance(target, SummarizationMiddlewarePeer):
        kept = {id(m) for m in target.state}
        return [m for m in flat if id(target.conv.to_lc(m)) not in kept]
    return []


# -- the figures ---------------------------------------------------------------------------


def cost(sess: Session) -> Figure:
    """Summarizer calls and tokens, budget and pairing, compactions, identifiers."""
    requests = sum(len(requests_of(t)) for t in sess.turns)
    fig = Figure(
        f"Compaction regime: {len(sess.turns)} tool-heavy turns, {requests} requests, "
        f"{BUDGET:,}-token budget, summarizer window = agent window (issue 22)",
        "summarising (defaults): calls ≤ max(langmem's, 1.1 × floor); summarizer input ≤ "
        "1.1 × tokens that left the window; 0 lossy, 0 over budget, 0 broken pairs; "
        "compactions inside a turn ≤ 10 %",
        ["strategy", "summarizer calls", "floor", "summarizer input tokens",
         "tokens that left the window", "input / left", "summarizer requests over its window",
         "requests over budget", "requests with a broken tool pair", "lossy requests",
         "compactions / inside a turn", "identifiers kept / missing"],
    )
    rows = [drive(strategy(label, sess.system), sess) for label in STRATEGIES]
    found, missing = peers(sess.system)
    rows += [drive(peer, sess) for peer in found]
    fig.rows = [_cost_cells(row) for row in rows]
    fig.notes += missing
    default = rows[0]
    langmem = next((r for r in rows if r.name == LangmemSummary.name), None)
    fig.met, checks = _cost_targets(default, langmem)
    fig.notes += checks
    tool_results = [m for m in sess.messages() if m.get("role") == "tool"]
    fig.notes += [
        f"Workload: benchmarks/regime.py, seed 7: {len(sess.turns)} user turns, {requests} "
        f"model requests, {len(tool_results)} tool results of "
        f"{min(len(m['content']) for m in tool_results):,}-"
        f"{max(len(m['content']) for m in tool_results):,} characters, "
        f"{sum(COUNTER.message(m) > BUDGET for m in tool_results)} of them larger than the "
        f"{BUDGET:,}-token window; {count(sess.messages()):,} tokens committed in all.",
        "mas-lab rows: the context manager bound with the params shown and nothing else, "
        "prepare_request with an 8,000-token window and no completion reserve (the peers' "
        "8,000-token budgets reserve nothing for the reply either, so both sides fill the "
        "same 8,000 tokens); summarising's own default safety margin (10 %) stays, so its "
        "hard budget is 7,200 tokens. The summarizer inherits the agent's model and its "
        "8,000-token window unless the row says otherwise.",
        "floor: tokens of the messages that left the window (as committed, before pruning) "
        "÷ the summarizer's window, rounded up: the fewest calls that read each of them "
        "once. re-asks: calls the identifier check made (the fake summarizer never quotes "
        "the identifiers it is asked for, so every re-ask is followed by the appended "
        "section).",
        "lossy: requests whose final trim cut committed messages (mas-lab's accounting; "
        "not observable for the peers); with no room: of those, requests whose in-flight "
        "tool results alone fill the hard budget, so that neither the summary nor any turn "
        "fits (every message the summary stood for then counts as cut). compactions: "
        "compaction.stop events (prune-only ones included; folds: those that folded "
        "messages); inside a turn when the request had tool results of the turn in flight.",
        "identifiers: of those the check took from each folded range (at most 200 a fold, "
        "the standard extractor's max_identifiers), kept in the committed summary or still "
        "missing from it. Every tool-result row carries a reference code (ORD-48213); the "
        "fake summarizer writes only the planted FACT- codes, so what is kept is the "
        "check's own appended section.",
        "Requests over budget, broken pairs and lossy requests count requests, not turns. "
        "Every strategy holds the token budget itself with its defaults (sliding_window and "
        "stack: max_tokens: limit, issue 25), dropping or folding what does not fit, so a "
        "lossy request is an anomaly for each of them; the final trim is the backstop.",
        *(f"{label}: {binding}" for label, binding in STRATEGIES.items()),
        "Peers: " + "; ".join(f"{p.name}: {p.config}" for p in found) if found else
        "Peers: none installed (make bench's .venv-bench has them).",
    ]
    return fig


def _cost_cells(row: Row) -> list[Any]:
    fake, seen, ids = row.summarizer, row.compactions, row.identifiers
    calls = tokens = ratio = floor = over = "-"
    if fake is not None:
        reasks = f" ({seen.reask_calls} re-asks)" if seen is not None else ""
        calls = f"{fake.calls}{reasks}"
        reask_tokens = f" ({seen.reask_tokens:,} re-asks)" if seen is not None else ""
        tokens = f"{fake.input_tokens:,}{reask_tokens}"
        ratio = f"{fake.input_tokens / row.folded_tokens:.2f}" if row.folded_tokens else "-"
        floor, over = str(row.floor), str(fake.over_window)
    return [
        row.name, calls, floor, tokens, f"{row.folded_tokens:,}", ratio, over,
        row.over_budget, row.broken,
        "n/a" if row.lossy is None else f"{row.lossy} ({row.no_room} with no room)",
        "n/a" if seen is None else f"{seen.stops} ({seen.folds} folds) / {seen.inside}",
        f"{ids['identifiers'] - ids['missing']:,} / {ids['missing']:,}" if ids else "-",
    ]


def _cost_targets(default: Row, langmem: Row | None) -> tuple[bool, list[str]]:
    fake, seen = default.summarizer, default.compactions
    assert fake is not None and seen is not None
    peer_calls = langmem.summarizer.calls if langmem and langmem.summarizer else None
    allowed = max(peer_calls or 0, math.floor(1.1 * default.floor))
    checks = {
        f"calls {fake.calls} ≤ max(langmem {peer_calls if peer_calls is not None else 'n/a'}, "
        f"1.1 × floor {default.floor}) = {allowed}": fake.calls <= allowed,
        f"summarizer input {fake.input_tokens:,} ≤ 1.1 × tokens that left the window "
        f"{default.folded_tokens:,}": fake.input_tokens <= 1.1 * default.folded_tokens,
        f"lossy {default.lossy}, over budget {default.over_budget}, broken pairs "
        f"{default.broken}: all 0": not (default.lossy or default.over_budget or default.broken),
        f"compactions inside a turn {seen.inside} ≤ 10 % of {seen.stops}":
            seen.inside <= 0.1 * seen.stops,
        f"no failed compaction ({seen.failed})": not seen.failed,
    }
    notes = [f"summarising (defaults): {text} — {held(ok)}" for text, ok in checks.items()]
    if peer_calls is None:
        notes.append("langmem not measured: the calls target is checked against the floor only")
    return all(checks.values()), notes


def regime(quick: bool = False) -> list[Figure]:
    """The three figures of the compaction regime: cost, time per turn, cold bound."""
    sess = session(quick)
    repeats = 1 if quick else 3

    def makers(system: str) -> dict[str, Callable[[], MasLab]]:
        return {label: partial(strategy, label, system) for label in TIMED}

    return [
        cost(sess),
        per_turn(sess, makers(sess.system), repeats=repeats,
                 large_window=lambda: strategy_at(MILLION, sess.system)),
        cold_bound(cold_messages(1_000 if quick else 10_000), makers("You help."),
                   repeats=repeats),
    ]


def strategy_at(window: int, system: str) -> MasLab:
    """``summarising`` with its defaults under ``window`` (nothing compacts at 1M)."""
    return MasLab(f"summarising (defaults), {window:,}-token window", system,
                  binding=DEFAULTS, engine=FakeSummarizer(window=window), window=window)


def cold_messages(messages: int) -> tuple[list[Message], Message]:
    """About ``messages`` committed messages of the regime's shape, from a user turn on,
    and the user message that follows them."""
    turns = math.ceil(messages / 6) + 10  # a tool-heavy turn has about 6.6 messages
    flat = make_session(turns, seed=11, shape=SHAPE, facts=0).messages()
    users = [i for i, m in enumerate(flat) if m.get("role") == "user"]
    end = users[-1]
    first = max(i for i in users if i <= end - messages)
    return flat[first:end], flat[end]


__all__ = ["DEFAULTS", "SHAPE", "STRATEGIES", "TIMED", "Compactions", "Recording", "Row",
           "ToolHeavy", "cold_messages", "cost", "drive", "folded_originals", "regime",
           "session", "strategy", "strategy_at"]
