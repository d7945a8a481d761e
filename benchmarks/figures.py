"""Each figure of issue 7: a function that measures it and says whether its target is met.

Every function returns a :class:`Figure`: a title, the target, table rows, whether the
target was met, and notes. Figures are ratios measured in this run, never fixed times.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import bench_cli_startup, bench_lab_ray, bench_session_turn
from benchmarks.counting import BUDGET, SUMMARIZER_WINDOW
from benchmarks.harness import LLM, MAS_LAB, NO_MARGIN, MasLab, Score, run
from benchmarks.peers import PEERS, LangmemSummary, TrimMessages
from benchmarks.synthetic import make_session

ROOT = Path(__file__).resolve().parents[1]

SUMMARY_PARAMS = {"keep_turns": 0, "pruning": {"min_prunable_tool_chars": 0,
                                                "keep_last_assistants": 1}}
"""summarising tuned for an 8,000-token budget: fold every finished turn, prune every old
tool result before summarizing (the current turn is always sent verbatim)."""
MAS_LAB["summarising (llm, tuned for 8k)"] = {
    "type": "summarising",
    "params": {"trimmer": NO_MARGIN, "summarizer": LLM, **SUMMARY_PARAMS},
}


@dataclass
class Figure:
    """One measured figure."""

    title: str
    target: str
    header: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    met: bool | None = None
    notes: list[str] = field(default_factory=list)


def _peer(cls: Any, *args: Any) -> tuple[Any, str | None]:
    try:
        return cls(*args), None
    except Exception as exc:  # a peer that cannot be imported is reported, not fatal
        return None, f"{cls.name}: not measured ({type(exc).__name__}: {exc})"


# -- 1. correctness over 500 turns ----------------------------------------------------


def correctness(turns: int = 500) -> tuple[Figure, dict[str, Score]]:
    """Pair breaks, turns over budget, turns that lost the latest user message."""
    session = make_session(turns)
    fig = Figure(
        f"Correctness over a {turns}-turn session ({BUDGET:,}-token budget)",
        "0 pair breaks, 0 turns over budget, 0 turns that lost the latest user message "
        "for every mas-lab strategy",
        ["strategy", "requests", "pair breaks", "turns over budget", "turns lost user msg",
         "facts in final question's request", "strategy time s"],
    )
    scores: dict[str, Score] = {}
    strategies: list[Any] = [MasLab(label, session.system) for label in MAS_LAB]
    for cls in PEERS:
        peer, note = _peer(cls, session.system)
        if note:
            fig.notes.append(note)
        else:
            strategies.append(peer)
    for strategy in strategies:
        score = run(strategy, session)
        scores[score.name] = score
        fig.rows.append([score.name, score.requests, score.pair_breaks, score.turns_over_budget,
                         score.turns_lost_user, f"{score.facts_in_question}/{score.facts_planted}",
                         f"{score.seconds:.2f}"])
    ours = [s for n, s in scores.items() if n.startswith("mas-lab")]
    fig.met = all(s.pair_breaks == s.turns_over_budget == s.turns_lost_user == 0 for s in ours)
    fig.notes += [f"{s.name}: {s.config}" for s in scores.values()]
    fig.notes += [
        "mas-lab runs through prepare_request with an 8,000-token window, no completion "
        "reserve and no safety margin, so its hard budget is the same 8,000 tokens.",
        "The LangChain peers count with a plain function (chars/4 + 3 per message, what "
        "count_tokens_approximately does), recomputed on every call as theirs is. The "
        "autogen peers' counting client caches per message object: "
        "TokenLimitedChatCompletionContext removes one message at a time and re-counts the "
        "whole list after each removal, which is quadratic; uncached it would not finish in "
        "the run's time.",
        "\"facts in final question's request\": the planted FACT- codes present in the "
        "first request of the last turn, which asks for them.",
    ]
    return fig, scores


# -- 2. steady-state turn at 10,000 messages ------------------------------------------


def steady_state(calls: int = 25) -> Figure:
    """mas-lab's incremental turn vs trim_messages, both at 10,000 messages."""
    fig = Figure(
        "Steady-state time per turn at 10,000 messages",
        "mas-lab ≥ 100× faster than trim_messages in the same run",
        ["what", "median per turn", "ratio vs mas-lab"],
    )
    ours_us = bench_session_turn.main(with_events=False)
    ours_events_us = bench_session_turn.main(with_events=True)
    session = make_session(2_400)
    flat = session.messages()
    start = next(i for i in range(len(session.turns))
                 if len(session.messages(i)) >= bench_session_turn.MESSAGES)
    peer_us = _trim_messages_us(session, start, calls)
    note = None if peer_us is not None else _peer(TrimMessages, session.system)[1]
    fig.rows.append(["mas-lab summarising, incremental session API (no events)",
                     f"{ours_us:,.1f} µs", "1×"])
    fig.rows.append(["mas-lab, with the context.assembled event",
                     f"{ours_events_us:,.1f} µs", f"{ours_events_us / ours_us:.1f}×"])
    if peer_us is None:
        fig.notes.append(note or "trim_messages not measured")
        fig.met = None
    else:
        at = len(session.messages(start))
        fig.rows.append([f"trim_messages on the synthetic session at {at:,} messages "
                         "(shared counter)", f"{peer_us:,.1f} µs",
                         f"{peer_us / ours_us:,.0f}× slower"])
        fig.met = peer_us / ours_us >= 100
        fig.rows.append(["ratio trim_messages / mas-lab (with events)", "",
                         f"{peer_us / ours_events_us:,.0f}×"])
    fig.notes.append(f"the synthetic session has {len(flat):,} messages in all; mas-lab's "
                     "turn is bench_session_turn.py (10,000 messages under a 1,048,576 window)")
    return fig


# -- 3. whole sessions ----------------------------------------------------------------


def whole_session(turns: int = 1_000) -> Figure:
    """Total strategy time of a whole session, and how it grows when turns double."""
    fig = Figure(
        f"Whole {turns:,}-turn session, total strategy time",
        "mas-lab ≥ 30× less than trim_messages; doubling turns ≤ 2.3× the time",
        ["strategy", f"{turns // 2:,} turns s", f"{turns:,} turns s", "doubling ×"],
    )
    session = make_session(turns)
    label = "summarising (llm, tuned for 8k)"
    half = run(MasLab(label, session.system), session, turns // 2, score=False).seconds
    full = run(MasLab(label, session.system), session, turns, score=False).seconds
    fig.rows.append([f"mas-lab {label}", f"{half:.3f}", f"{full:.3f}", f"{full / half:.2f}"])
    trim, note = _peer(TrimMessages, session.system)
    if trim is None:
        fig.notes.append(note or "")
        fig.met = None
        return fig
    peer_full = run(trim, session, turns, score=False)
    peer_half = sum(peer_full.turn_seconds[: turns // 2])
    fig.rows.append([TrimMessages.name, f"{peer_half:.3f}", f"{peer_full.seconds:.3f}",
                     f"{peer_full.seconds / peer_half:.2f}"])
    ratio = peer_full.seconds / full
    fig.rows.append(["trim_messages / mas-lab", "", f"{ratio:,.0f}×", ""])
    fig.met = ratio >= 30 and full / half <= 2.3
    return fig


# -- 4. summarizer cost ---------------------------------------------------------------


def summarizer_cost(scores: dict[str, Score], turns: int = 500) -> Figure:
    """Summarizer calls and input tokens over the correctness run's sessions."""
    fig = Figure(
        f"Summarizer calls and input tokens, {turns} turns (fake summarizer model, "
        f"{SUMMARIZER_WINDOW:,}-token window)",
        "default summarising: calls ≤ langmem's, input tokens ≤ half of langmem's; no turn "
        "drops history without a summary; no summarizer request over the summarizer's window",
        ["strategy", "calls", "input tokens", "largest request", "requests over window",
         "folds without a summary"],
    )
    for name, score in scores.items():
        if score.summarizer_calls is None:
            continue
        fig.rows.append([name, score.summarizer_calls, f"{score.summarizer_input_tokens:,}",
                         f"{score.summarizer_largest_request:,}", score.summarizer_over_window,
                         score.dropped_without_summary if name.startswith("mas-lab") else "n/a"])
    langmem = scores.get(LangmemSummary.name)
    ours = scores.get(DEFAULT_LLM)
    tuned = scores.get("mas-lab summarising (llm, tuned for 8k)")
    if langmem is None or ours is None or tuned is None:
        fig.notes.append("langmem not measured: no comparison")
        return fig
    calls_ok = ours.summarizer_calls <= langmem.summarizer_calls
    tokens_ok = ours.summarizer_input_tokens * 2 <= langmem.summarizer_input_tokens
    fig.met = (calls_ok and tokens_ok and ours.summarizer_over_window == 0
               and ours.dropped_without_summary == 0)
    middleware = next((s for n, s in scores.items() if "SummarizationMiddleware" in n), None)
    fig.notes += [
        f"default mas-lab / langmem: calls {ours.summarizer_calls / langmem.summarizer_calls:.2f}×"
        f" (target ≤ 1), input tokens "
        f"{ours.summarizer_input_tokens / langmem.summarizer_input_tokens:.2f}× (target ≤ 0.5)"
        + (f"; / SummarizationMiddleware: calls "
           f"{ours.summarizer_calls / max(middleware.summarizer_calls or 1, 1):.2f}×"
           if middleware is not None and middleware.summarizer_calls else "") + ".",
        f"tuned mas-lab / langmem: calls "
        f"{tuned.summarizer_calls / langmem.summarizer_calls:.2f}×, input tokens "
        f"{tuned.summarizer_input_tokens / langmem.summarizer_input_tokens:.2f}×.",
        "Summaries are written from the original messages (issue 10): the session holds "
        "about 610,000 tokens of content, 234,000 of them in 18 tool results of 20-60k "
        "characters, so any summarizer that reads what it folds reads about that much — "
        "langmem too. Halving langmem's input would mean summarizing content unseen; the "
        "≤ 0.5 input target is therefore not met by design. Before issue 10, pruning "
        "replaced those results with placeholders before they were folded, which is why "
        "the earlier RESULTS.md showed far fewer input tokens.",
        "About two in three of the default's calls are folds during a turn: history may "
        "fill the limit at a turn boundary, and the tool results that arrive next need "
        "room that only a fold can give without cutting history.",
        "How mas-lab keeps the count down: `summarising` judges committed history at the "
        "turn boundary, leaving out this turn's in-flight tool results (20-60k-character "
        "results would otherwise shrink the history limit to a few hundred tokens and force "
        "a fold on that tool step), and makes no call when even the current turn leaves no "
        f"room for history ({ours.forced_summaries} such calls here). What remains is one "
        "fold each time committed history passes the retrigger; a larger hysteresis_ratio "
        "trades fewer calls for a longer-lived, staler summary.",
        "langmem makes fewer calls partly by summarizing the current turn too: that is where "
        "its pair breaks and lost user messages in the correctness table come from, and its "
        "summary requests go over the summarizer's window.",
        "\"folds without a summary\" counts compactions that advanced the folded prefix "
        "without writing a summary; it is 0 for every llm-summarizer configuration. Pruning "
        "(shortening or clearing old tool-result bodies in place, spec 004) is by design and "
        "not counted. For the peers it is not observable from outside (n/a).",
        "The verbatim tail is bounded by tokens as well as turns (auto: half the trigger "
        "less the summary's room), so with its defaults summarising no longer folds one "
        "turn per turn at an 8,000-token budget.",
    ]
    return fig


# -- 4b. accounting and identifier survival (issue 10) --------------------------------

DEFAULT_LLM = "mas-lab summarising (llm summarizer)"
"""The row measured with summarising's default params (only the bench's shared budget)."""


def accounting(scores: dict[str, Score], turns: int = 500) -> Figure:
    """Requests whose committed messages were neither sent nor summarized, per strategy,
    at the shared 8,000-token budget and again at a 128,000-token window."""
    fig = Figure(
        f"Every committed message accounted for, {turns} turns",
        "0 requests with messages neither sent nor summarized for summarising with its "
        "default params, at 8,000 tokens and at a 128,000-token window",
        ["strategy", "window", "requests", "requests that cut history", "messages cut"],
    )
    for name, score in scores.items():
        if score.requests_with_loss is not None:
            fig.rows.append([name, f"{BUDGET:,}", score.requests, score.requests_with_loss,
                             score.messages_lost])
    session = make_session(turns)
    wide = run(MasLab("summarising (llm summarizer)", session.system, window=128_000), session)
    fig.rows.append([wide.name, "128,000", wide.requests, wide.requests_with_loss,
                     wide.messages_lost])
    default = scores.get(DEFAULT_LLM)
    fig.met = default is not None and default.requests_with_loss == 0 \
        and wide.requests_with_loss == 0
    fig.notes += [
        "A message is cut when the final trim removes it although the strategy meant to "
        "send it (or removes the summary standing for it); dropped-by-policy messages "
        "(sliding_window's window, stack's cap, the drop summarizer) are not cuts.",
        "sliding_window and stack with no token bound leave the budget to the trim, so "
        "their cuts are the trim doing their job; summarising folds instead.",
        "Before issue 10, summarising with these defaults had 465 of 500 requests with "
        "messages neither sent nor summarized on this session.",
    ]
    return fig


class MiniSummarizer:
    """The offline model's lossy ``mini`` summarizer behind the summary-engine protocol."""

    def __init__(self) -> None:
        self.calls = 0
        self.input_tokens = 0
        self.largest_request = 0
        self.over_window = 0

    def summarize_messages(self, messages: list[dict[str, Any]], *, model: str,
                           tools: Any = None, max_tokens: int | None = None) -> Any:
        """Answer as ``offline/mini`` does (its rules, without the LiteLLM round trip)."""
        from benchmarks.counting import count
        from mas.library.standard.offline._rules import respond
        from mas.runtime.protocols import ModelReply

        self.calls += 1
        tokens = count(messages)
        self.input_tokens += tokens
        self.largest_request = max(self.largest_request, tokens)
        return ModelReply(text=respond(messages, max_tokens=max_tokens, model="mini").text,
                          model="offline/mini")


def identifier_survival(turns: int = 500) -> Figure:
    """Planted identifiers still in the final question's request with the lossy offline
    ``mini`` summarizer, identifier check off vs repair (summarising's other defaults)."""
    fig = Figure(
        f"Identifier survival with the lossy offline mini summarizer, {turns} turns",
        "repair keeps more planted identifiers than off, and reports what it could not keep",
        ["identifier_check", "planted facts in final request", "identifiers checked",
         "kept by summarizer", "re-ask", "appended", "missing", "summarizer calls"],
    )
    session = make_session(turns)
    kept = {}
    for mode in ("off", "repair"):
        binding = {"type": "summarising", "params": {
            "trimmer": NO_MARGIN, "identifier_check": mode,
            "summarizer": {"type": "llm", "params": {"context_window": SUMMARIZER_WINDOW}}}}
        engine = MiniSummarizer()
        strategy = MasLab(f"summarising (offline mini, check {mode})", session.system,
                          binding=binding, engine=engine)
        score = run(strategy, session)
        totals = strategy.cm.state.identifiers
        kept[mode] = score.facts_in_question
        fig.rows.append([mode, f"{score.facts_in_question}/{score.facts_planted}",
                         totals.get("identifiers", "-"), totals.get("found", "-"),
                         totals.get("repaired", "-"), totals.get("appended", "-"),
                         totals.get("missing", "-"), engine.calls])
    fig.met = kept["repair"] > kept["off"]
    fig.notes += [
        "offline/mini writes the extractive summary with every code, amount, number and "
        "name paraphrased away; asked to quote identifiers it quotes half of them.",
        "\"missing\" counts identifiers that did not fit the appended section (half the "
        "summary's room): counted, never silent.",
    ]
    return fig


# -- 4c. per-turn cost on every path (issue 17) ---------------------------------------


def _trim_messages_us(session: Any, start: int, calls: int) -> float | None:
    """Median µs of one trim_messages request + commit from ``start`` turns in."""
    trim, _ = _peer(TrimMessages, session.system)
    if trim is None:
        return None
    for turn in session.turns[:start]:
        trim.commit(turn.messages)
    samples = []
    for turn in session.turns[start:start + calls]:
        began = time.perf_counter()
        trim.request(turn.user, [])
        trim.commit(turn.messages)
        samples.append(time.perf_counter() - began)
    return statistics.median(samples) * 1e6


def _bound(raw: dict[str, Any]) -> Any:
    """A context manager bound from ``raw`` for the bench's fake model."""
    from mas.runtime import Runtime
    from mas.runtime.protocols import BindContext
    from mas.runtime.spec.binding import Binding, bind
    from mas.runtime.spec.model_ref import ModelChoice, ModelRow, ModelScope

    scope = ModelScope.build(agent_models=[ModelRow("main", "bench/fake")])
    ctx = BindContext(runtime=Runtime.create(), agent_name="bench", model_scope=scope,
                      turn_model=ModelChoice("bench/fake", "spec.models[id=main]", "main"))
    return bind("context_manager", Binding.model_validate(raw), ctx)


def _compaction_ms(messages: int) -> float:
    """Median ms of one compacting summarising request over ``messages`` of backlog."""
    from benchmarks.counting import FakeSummarizer
    from mas.runtime.context import ContextPart, History, prepare_request

    samples = []
    turns = [[{"role": "user", "content": f"question {i}: status of ticket T-{i}?"},
              {"role": "assistant", "content": f"Ticket T-{i} is open, team {i % 7}."}]
             for i in range(messages // 2)]
    parts = [ContextPart("agent", "role", "You help.", placement="system", pinned=True)]
    for _ in range(5):
        cm = _bound({"type": "summarising", "params": {
            "trimmer": NO_MARGIN, "summarizer": LLM, "identifier_check": "off"}})
        history = History([m for t in turns for m in t])
        window = history.total_tokens  # over the trigger: this request compacts
        began = time.perf_counter()
        request = prepare_request(cm=cm, history=history, parts=parts,
                                  current_input={"role": "user", "content": "next?"},
                                  window=window, reserve=0, engine=FakeSummarizer())
        samples.append(time.perf_counter() - began)
        assert request.managed.compacted
    return statistics.median(samples) * 1e3


def _cold_bound_ms(strategy: str, messages: list[dict[str, Any]]) -> float:
    """Median ms of a cold, stateless bound: build the history and assemble once."""
    from benchmarks.counting import COUNTER
    from mas.runtime.context import ContextPart, History, prepare_request

    parts = [ContextPart("agent", "role", "You help.", placement="system", pinned=True)]
    samples = []
    for _ in range(5):
        cm = _bound({"type": strategy, "params": {"trimmer": NO_MARGIN}})
        began = time.perf_counter()
        history = History(messages[:-1], estimator=COUNTER)
        prepare_request(cm=cm, history=history, parts=parts, current_input=messages[-1],
                        window=BUDGET, reserve=0)
        samples.append(time.perf_counter() - began)
    return statistics.median(samples) * 1e3


def _cold_trim_ms(session: Any, messages: list[dict[str, Any]]) -> float | None:
    trim, _ = _peer(TrimMessages, session.system)
    if trim is None:
        return None
    samples = []
    for _ in range(5):
        fresh, _ = _peer(TrimMessages, session.system)
        began = time.perf_counter()
        fresh.commit(messages[:-1])
        fresh.request(messages[-1], [])
        samples.append(time.perf_counter() - began)
    return statistics.median(samples) * 1e3


def per_turn_cost(calls: int = 200) -> Figure:
    """Issue 17: steady state per strategy at 10,000 messages against trim_messages in the
    same run; a compaction's time as the backlog doubles; a cold bound of 10,000 messages."""
    fig = Figure(
        "Per-turn cost on every path (issue 17)",
        "every strategy's steady-state turn ≤ 50 µs and ≥ 150× trim_messages at 10,000 "
        "messages; a compaction over twice the backlog ≤ 2.3× the time; a cold bound of "
        "10,000 messages no slower than trim_messages",
        ["what", "mas-lab", "trim_messages", "ratio"],
    )
    ours = {name: bench_session_turn.main(calls, with_events=True, strategy=name)
            for name in ("summarising", "sliding_window", "stack")}
    session = make_session(2_400)
    start = next(i for i in range(len(session.turns))
                 if len(session.messages(i)) >= bench_session_turn.MESSAGES)
    peer = _trim_messages_us(session, start, 25)
    for name, us in ours.items():
        fig.rows.append([f"steady-state turn, {name}", f"{us:,.1f} µs",
                         f"{peer:,.0f} µs" if peer else "not measured",
                         f"{peer / us:,.0f}×" if peer else ""])
    small, large = _compaction_ms(1_000), _compaction_ms(2_000)
    fig.rows.append(["compacting request, 1,000 → 2,000 messages of backlog",
                     f"{small:,.1f} → {large:,.1f} ms", "", f"{large / small:.2f}×"])
    flat = session.messages(start)[-10_000:]
    cold_peer = _cold_trim_ms(session, flat)
    colds = {name: _cold_bound_ms(name, flat) for name in ("stack", "sliding_window")}
    for name, ms in colds.items():
        fig.rows.append([f"cold bound of 10,000 messages, {name}", f"{ms:,.1f} ms",
                         f"{cold_peer:,.1f} ms" if cold_peer else "not measured",
                         f"{cold_peer / ms:.2f}×" if cold_peer else ""])
    copy_us = _list_copy_us(bench_session_turn.MESSAGES)
    steady_ok = all(us <= 50 for us in ours.values()) and bool(peer) and all(
        peer / us >= 150 for us in ours.values())
    cold_ok = bool(cold_peer) and all(ms <= cold_peer for ms in colds.values())
    fig.met = steady_ok and large / small <= 2.3 and cold_ok
    fig.notes += [
        "Steady state: prepare_request plus the write-back, under a 1,048,576-token window "
        "so nothing compacts (benchmarks/bench_session_turn.py); trim_messages on the "
        "synthetic session at 10,000 messages of history.",
        "Compaction: one summarising request over a backlog of short turns, fake "
        "summarizer (no model time), identifier check off; what it costs is proportional "
        "to the messages folded and kept when the ratio is about 2.",
        "Cold bound: a stateless History of 10,000 synthetic messages built and bounded "
        "once (estimating every message) against trim_messages counting the same list.",
        f"Copying a list of {bench_session_turn.MESSAGES:,} messages took {copy_us:.1f} µs "
        "in this run. stack and summarising send the whole history here and pay that copy "
        "once a turn (the request is a list the caller keeps; the managed view is a "
        "HistoryView of the committed history, no copy); sliding_window sends its window "
        "only.",
    ]
    return fig


def _list_copy_us(messages: int) -> float:
    """Median microseconds to copy a list of ``messages`` distinct dicts."""
    rows = [{"role": "user", "content": str(i)} for i in range(messages)]
    samples = []
    for _ in range(200):
        started = time.perf_counter()
        list(rows)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


# -- 5. prefix cache ------------------------------------------------------------------


def prefix_cache(turns: int = 120) -> Figure:
    """Share of turn-call prompt tokens the offline provider served from its prefix cache."""
    from benchmarks.sessions import offline_session_cache_share

    share, calls, compaction_calls = offline_session_cache_share(turns)
    fig = Figure(
        "Offline provider prefix cache between compactions",
        "≥ 80 % of prompt tokens served from the prefix cache",
        ["session", "turn calls", "calls at a compaction (excluded)", "cached share"],
        [[f"AgentSession + offline/default, {turns} turns, summarising, 8,000 window",
          calls, compaction_calls, f"{share:.1%}"]],
    )
    fig.met = share >= 0.8
    return fig


# -- 6. CLI start-up ------------------------------------------------------------------


def cli_startup() -> Figure:
    """``mas-ctl compile`` wall time (fresh processes), next to importing litellm."""
    results = bench_cli_startup.main(runs=5)
    fig = Figure("mas-ctl wall time (fresh process, median of 5)", "compile ≤ 0.5 s",
                 ["command", "median s"],
                 [[name, f"{seconds:.3f}"] for name, seconds in results.items()])
    fig.met = results["compile"] <= 0.5
    fig.notes.append("each command is a fresh process (interpreter start, plugin discovery "
                     "through entry points, manifest load); litellm is never imported")
    return fig


# -- 7. estimate accuracy -------------------------------------------------------------


def _counting_cost(messages: int = 2_000) -> tuple[float, float]:
    """µs per message of the chars estimate and of ``spec.estimation.counter: litellm``."""
    from mas.runtime.context import DEFAULT_ESTIMATOR
    from mas.runtime.engine.counter import LiteLLMCounter

    sample = make_session(400).messages()[:messages]
    exact = LiteLLMCounter(model="gpt-4o")
    exact.message(sample[0])  # the first call loads litellm and the tokenizer
    costs = []
    for estimator in (DEFAULT_ESTIMATOR, exact):
        began = time.perf_counter()
        for message in sample:
            estimator.message(message)
        costs.append((time.perf_counter() - began) / len(sample) * 1e6)
    return costs[0], costs[1]


def estimate_accuracy() -> Figure:
    """The kernel estimate vs ``litellm.token_counter`` (gpt-4o), per message kind."""
    from benchmarks.sessions import estimate_errors

    errors = estimate_errors()
    fig = Figure(
        "Token estimate vs litellm.token_counter (gpt-4o), median relative error",
        "≤ 15 % raw; ≤ 5 % with calibration",
        ["message kind", "messages", "raw", "calibrated per model",
         "calibrated per model and kind"],
    )
    for kind, row in errors.items():
        fig.rows.append([kind, row["n"], f"{row['raw']:.1%}", f"{row['model']:.1%}",
                         f"{row['kind']:.1%}"])
    raw_ok = all(r["raw"] <= 0.15 for r in errors.values())
    cal_ok = all(r["kind"] <= 0.05 for r in errors.values())
    fig.met = raw_ok and cal_ok
    chars_us, exact_us = _counting_cost()
    fig.notes.append(
        f"What exact counting costs (spec.estimation.counter: litellm): {exact_us:.1f} µs a "
        f"message with litellm.token_counter against {chars_us:.1f} µs with the chars "
        f"estimate ({exact_us / chars_us:.0f}×), over the synthetic session's messages."
    )
    fig.notes += [
        "Reference: litellm.token_counter(model='gpt-4o') of the message alone, minus the "
        "3 reply-priming tokens it adds once per request. Calibration "
        "(mas.runtime.context.calibration, off by default) learned from 80 whole requests "
        "(system prompt plus a window of 1-40 messages) of other turns, the way provider "
        "prompt_tokens would arrive; it is scored on held-out messages.",
        "Raw: every kind is within 15 %. The estimator counts each byte that is not an ASCII "
        "letter, digit or space as an extra character, because JSON tool results (digits "
        "and punctuation) run about 3 characters per token; tool-call messages stay an "
        "over-count (the safe side).",
        "Calibrated: one ratio per message kind brings user, assistant and tool-result text "
        "within 5 %; tool-call messages do not get there. They are a few percent of any "
        "request, so request totals carry too little signal to fit them, and their error is "
        "a fixed per-call offset that a ratio cannot express.",
    ]
    return fig


# -- 8. memory ------------------------------------------------------------------------


def memory(messages: int = 10_000) -> Figure:
    """Peak memory of a 10,000-message session, measured in a fresh process."""
    code = f"from benchmarks.sessions import memory_probe; memory_probe({messages})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    data = json.loads(done.stdout.strip().splitlines()[-1])
    mb = 1024 * 1024
    limit = 2 * data["json_bytes"] + 60 * mb
    fig = Figure(
        f"Peak memory of a {data['messages']:,}-message session",
        "≤ 2 × the JSON size of its history + 60 MB",
        ["measure", "MB"],
        [["JSON size of the history", f"{data['json_bytes'] / mb:.1f}"],
         ["limit (2 × JSON + 60 MB)", f"{limit / mb:.1f}"],
         ["peak RSS growth over the process after imports", f"{data['rss_growth'] / mb:.1f}"],
         ["peak traced Python allocations (tracemalloc)", f"{data['traced_peak'] / mb:.1f}"],
         ["peak RSS of the whole process", f"{data['rss_peak'] / mb:.1f}"]],
    )
    fig.met = data["rss_growth"] <= limit
    return fig


# -- 9. lab sessions on Ray -----------------------------------------------------------


def lab_ray() -> Figure:
    """Lab sessions per second, local threads vs Ray tasks, and what one Ray task costs."""
    timings = bench_lab_ray.in_loopback_namespace()
    slots = bench_lab_ray.CONCURRENCY
    # Wall time per session at concurrency 2 is half the time a session holds its slot.
    task = (timings["no-op ray"].per_session_ms - timings["no-op local"].per_session_ms) * slots
    session = timings["sessions ray"].per_session_ms * slots
    fig = Figure(
        "Lab sessions per second: local threads vs Ray tasks (local head, 2 CPUs, "
        "max_concurrency 2)",
        "Ray's per-task overhead ≤ 5 % of a scripted session",
        ["pass", "sessions", "wall s", "sessions / s", "wall ms / session"],
        [[name, t.sessions, f"{t.seconds:.2f}", f"{t.per_second:.2f}",
          f"{t.per_session_ms:.1f}"] for name, t in timings.items()],
    )
    fig.met = task <= 0.05 * session
    fig.notes.append(f"per-task overhead of Ray over the thread pool: {task:.0f} ms a task "
                     f"(no-op sessions); a scripted session holds its slot {session:.0f} ms")
    fig.notes.append("sessions: the context-ablation example, its first 3 items x every "
                     "flavour, on the offline model; each backend warmed up once first")
    return fig
