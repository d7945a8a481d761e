"""The compaction regime's two time figures: every turn of the session, and a cold bound.

Both are ratios to LangChain's ``trim_messages`` on the same messages in the same run.
Each strategy runs ``repeats`` times from scratch and its fastest run counts (the machine
is shared; a deterministic workload makes the runs identical but for the noise). The
repeats go round the strategies, trim_messages among them, so that a spell of load from
elsewhere falls on every strategy alike rather than on whichever ran then.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from benchmarks.counting import BUDGET, COUNTER
from benchmarks.figures import Figure
from benchmarks.harness import MasLab, Score, run
from benchmarks.peers import Message, Strategy, TrimMessages
from benchmarks.report import held
from benchmarks.synthetic import Session
from mas.runtime.context import History

MILLION = 1_048_576
"""A window where nothing compacts (Gemini 2.5 Flash's)."""

TARGET = 100
"""Per turn, every strategy at least this many times faster than trim_messages."""


def _trim(system: str) -> tuple[TrimMessages | None, str | None]:
    try:
        return TrimMessages(system), None
    except ImportError as exc:
        return None, f"{TrimMessages.name}: not installed ({exc.name or exc})"


def fastest(makers: list[Callable[[], Strategy]], sess: Session, repeats: int) -> list[Score]:
    """Per maker, the fastest of ``repeats`` unscored runs of a fresh bind through ``sess``
    (the repeats taken in rounds over every maker)."""
    runs: list[list[Score]] = [[] for _ in makers]
    for _ in range(repeats):
        for done, make in zip(runs, makers, strict=True):
            done.append(run(make(), sess, score=False))
    return [min(done, key=lambda s: s.seconds) for done in runs]


def per_turn(sess: Session, makers: dict[str, Callable[[], MasLab]], *,
             large_window: Callable[[], MasLab], repeats: int) -> Figure:
    """Mean time per turn over every turn, compaction turns included, against
    ``trim_messages`` on the same history; the large-window row is apart from the target.

    :param makers: a fresh bind of each strategy timed, by label.
    :param large_window: a strategy under a window where nothing compacts.
    """
    fig = Figure(
        f"Compaction regime: time per turn over all {len(sess.turns)} turns, compaction "
        "turns included (issue 22)",
        f"every strategy ≥ {TARGET}× trim_messages per turn on the same history",
        ["strategy", "window", "mean per turn", "slowest turn", "ratio to trim_messages",
         "target"],
    )
    trim, note = _trim(sess.system)
    timed: list[Callable[[], MasLab]] = [*makers.values(), large_window]
    everyone: list[Callable[[], Strategy]] = [*timed]
    if trim is not None:
        everyone.append(lambda: TrimMessages(sess.system))
    scores = fastest(everyone, sess, repeats)
    peer = scores[len(timed)] if trim else None
    peer_mean = peer.seconds / peer.turns if peer else None
    ok: list[bool] = []
    for make, score in zip(timed, scores, strict=False):
        large = make is large_window
        target = make()  # for its name and window
        mean = score.seconds / score.turns
        ratio = peer_mean / mean if peer_mean else None
        if not large and ratio is not None:
            ok.append(ratio >= TARGET)
        verdict = "apart: no compaction happens here" if large else held(
            None if ratio is None else ratio >= TARGET)
        fig.rows.append([
            target.name, f"{target.window:,}", f"{mean * 1e6:,.0f} µs",
            f"{max(score.turn_seconds) * 1e3:,.1f} ms",
            f"{ratio:,.1f}×" if ratio is not None else "-", verdict,
        ])
    if peer is not None and peer_mean is not None:
        fig.rows.append([TrimMessages.name, f"{BUDGET:,}", f"{peer_mean * 1e6:,.0f} µs",
                         f"{max(peer.turn_seconds) * 1e3:,.1f} ms", "1×", ""])
    fig.met = all(ok) if peer_mean else None
    fig.notes += [note] if note else []
    fig.notes += [
        "Per turn: every prepare_request of the turn (one per tool round plus one) and the "
        "write-back, timed by benchmarks/harness.py run(); the mean is over every turn of "
        "the session, the turns that compact included. The fake summarizer answers at once, "
        "so a compaction's time is mas-lab's own: pruning, chunking, the identifier check "
        "and its re-ask, the bookkeeping.",
        f"Fastest of {repeats} run(s), each from a fresh bind, taken in rounds over every "
        "strategy and trim_messages. "
        f"The {MILLION:,}-token row is the same session where nothing compacts: it is "
        "shown apart and does not count for the target.",
    ]
    return fig


def cold_bound(messages: tuple[list[Message], Message],
               makers: dict[str, Callable[[], MasLab]], *, repeats: int) -> Figure:
    """A history of ``messages`` built and bounded once per strategy, against
    ``trim_messages`` over the same list (target: no slower)."""
    history, current = messages
    fig = Figure(
        f"Compaction regime: cold bound of {len(history):,} messages (issue 22)",
        "every strategy ≤ 1× trim_messages's time",
        ["strategy", "time", "trim_messages", "strategy / trim_messages", "target",
         "messages summarized / dropped"],
    )
    trim_runs: list[float | None] = []
    runs: dict[str, list[tuple[float, Any]]] = {label: [] for label in makers}
    for _ in range(repeats):  # in rounds, as per_turn's runs
        trim_runs.append(_cold_trim(history, current))
        for label, make in makers.items():
            runs[label].append(_cold_once(make(), history, current))
    trim_s = min(t for t in trim_runs if t is not None) if None not in trim_runs else None
    ok: list[bool] = []
    for label in makers:
        seconds, state = min(runs[label], key=lambda r: r[0])
        ratio = seconds / trim_s if trim_s else None
        if ratio is not None:
            ok.append(ratio <= 1)
        fig.rows.append([
            f"mas-lab {label}", f"{seconds * 1e3:,.1f} ms",
            f"{trim_s * 1e3:,.1f} ms" if trim_s else "not installed",
            f"{ratio:.2f}×" if ratio is not None else "-",
            held(None if ratio is None else ratio <= 1),
            f"{state.summarized_messages:,} / {state.dropped_messages:,}",
        ])
    fig.met = all(ok) if trim_s else None
    fig.notes += [
        "mas-lab: a History of the messages built (every message estimated) and one "
        "prepare_request with the fake summarizer, an 8,000-token window and the "
        "strategy's defaults: summarising folds all but its tail in one compaction, "
        "identifier check included.",
        "trim_messages: the same messages, already LangChain objects (their conversion is "
        "outside the clock), trimmed once to 8,000 tokens with the shared counter.",
        f"Fastest of {repeats} run(s) each, taken in rounds.",
        "summarized / dropped: what the manager's state says of the folded messages after "
        "the bound; a summarizer with an 8,000-token window reads at most max_calls (8) "
        "chunks in one compaction, and what does not fit goes unread, counted as dropped.",
    ]
    return fig


def _cold_once(target: MasLab, history: list[Message], current: Message) -> tuple[float, Any]:
    """Seconds of one cold bound, and the manager's state after it."""
    began = time.perf_counter()
    target.history = History(history, estimator=COUNTER)
    target.request(current, [])
    return time.perf_counter() - began, target.cm.state


def _cold_trim(history: list[Message], current: Message) -> float | None:
    """Seconds of one ``trim_messages`` call over ``history`` (``None``: not installed)."""
    trim, _ = _trim("You help.")
    if trim is None:
        return None
    trim.commit(history)
    began = time.perf_counter()
    trim.request(current, [])
    return time.perf_counter() - began
