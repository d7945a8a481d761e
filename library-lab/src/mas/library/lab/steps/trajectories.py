"""``extract_trajectories``: one JSON line per session with what the report plots and counts.

Read from each session run folder (transcript, events, item), never from a live session:
per-turn context fill (estimated tokens vs window, compactions), model calls and tokens by
purpose, summarizer calls and tokens, cost, cached prompt tokens, pair-safety problems of
the transcript, and the answers to the item's probes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mas.library.eval import RunFolderError, SessionRun, load_run
from mas.library.lab.probes import contains
from mas.library.lab.rundir import write_text
from mas.library.lab.steps import TRAJECTORIES_FILE, StepContext
from mas.runtime.context import pair_problems
from mas.runtime.degradation import DEGRADED, FAILED, OK, is_degraded
from mas.runtime.protocols import Message, StepResult
from mas.runtime.registry import NoParams
from mas.runtime.spec.experiment import StepSpec


def turn_segments(messages: list[Message]) -> list[list[Message]]:
    """The transcript cut into user turns (each starts with its user message)."""
    turns: list[list[Message]] = []
    for message in messages:
        if message.get("role") == "user" or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def turn_answer(turn: list[Message]) -> str:
    """The final assistant text of one turn ('' when it has none)."""
    for message in reversed(turn):
        if message.get("role") == "assistant" and not message.get("tool_calls"):
            content = message.get("content")
            return content if isinstance(content, str) else ""
    return ""


def context_fill(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per user turn: the largest estimated request, the window, the soft trigger (where a
    summarising manager compacts; ``None`` for the others) and compactions in it."""
    turns: list[dict[str, Any]] = []
    current: dict[str, Any] = {"estimated_tokens": 0, "window": None, "compactions": 0,
                               "hard_budget": None, "soft_trigger": None}
    for event in events:
        name = event.get("event")
        if name == "context.assembled":
            current["estimated_tokens"] = max(current["estimated_tokens"],
                                              int(event.get("estimated_tokens") or 0))
            current["window"] = event.get("context_window") or current["window"]
            current["hard_budget"] = event.get("hard_budget") or current["hard_budget"]
            current["soft_trigger"] = event.get("soft_trigger") or current["soft_trigger"]
        elif name == "compaction.stop":
            current["compactions"] += 1
        elif name == "session.turn":
            turns.append({"turn": int(event.get("turn") or len(turns) + 1), **current})
            current = {"estimated_tokens": 0, "window": current["window"], "compactions": 0,
                       "hard_budget": current["hard_budget"],
                       "soft_trigger": current["soft_trigger"]}
    return turns


def degradation_counts(events: list[dict[str, Any]]) -> dict[str, int]:
    """Per kind, what the session's ``degraded`` events added up to."""
    counts: dict[str, int] = {}
    for event in events:
        if event.get("event") == "degraded" and isinstance(event.get("count"), int):
            kind = str(event.get("kind"))
            counts[kind] = counts.get(kind, 0) + event["count"]
    return dict(sorted(counts.items()))


def _usage(calls: list[dict[str, Any]]) -> dict[str, float]:
    total = {"prompt_tokens": 0.0, "completion_tokens": 0.0, "cached_tokens": 0.0, "cost": 0.0}
    for call in calls:
        for key in total:
            value = call.get(key)
            total[key] += float(value) if isinstance(value, (int, float)) else 0.0
    return total


def accounting_fields(events: list[dict[str, Any]]) -> dict[str, Any]:
    """What the session's requests did with committed history, and what summaries kept.

    ``requests_with_cuts`` counts requests that cut committed messages (a working
    ``summarising`` has none); ``identifier_survival`` is the share of checked
    identifiers a committed summary still quotes (after repair), and
    ``identifiers_by_summarizer`` the share the summarizer kept on its own; both ``None``
    when no summary was checked.
    """
    requests = cut = 0
    for event in events:
        if event.get("event") == "context.assembled":
            count = ((event.get("accounting") or {}).get("cut") or {}).get("messages", 0)
            requests += int(count > 0)
            cut += int(count)
    checks = [e for e in events if e.get("event") == "summary.checked"]
    wanted = sum(int(e.get("identifiers") or 0) for e in checks)
    missing = sum(int(e.get("missing") or 0) for e in checks)
    found = sum(int(e.get("found") or 0) for e in checks)
    return {
        "requests_with_cuts": requests,
        "cut_messages": cut,
        "identifiers_checked": wanted,
        "identifier_survival": (wanted - missing) / wanted if wanted else None,
        "identifiers_by_summarizer": found / wanted if wanted else None,
    }


def trajectory(run: SessionRun, row: dict[str, Any]) -> dict[str, Any]:
    """The trajectory record of one session."""
    calls = run.events_named("llm.call")
    summaries = [c for c in calls if c.get("purpose") == "summary"]
    turns = [c for c in calls if c.get("purpose", "turn") == "turn"]
    usage = _usage(calls)
    segments = turn_segments(run.messages)
    probes = probe_answers(run, segments)
    scored = [p for p in probes if p["hit"] is not None]
    summary_usage = _usage(summaries)
    stops = run.events_named("compaction.stop")
    degradation = degradation_counts(run.events)
    status = FAILED if run.error else (DEGRADED if is_degraded(degradation) else OK)
    return {
        **{key: row.get(key)
           for key in ("flavour", "item", "run_index", "seed", "session_id", "folder")},
        "status": status,
        "error": run.error,
        "degradation": degradation,
        "turns_played": len(segments),
        "fill": context_fill(run.events),
        "llm_calls": len(calls),
        "turn_calls": len(turns),
        "summarizer_calls": len(summaries),
        "summarizer_tokens": summary_usage["prompt_tokens"] + summary_usage["completion_tokens"],
        "compactions": len(stops),
        "compactions_with_llm": sum(1 for s in stops if s.get("llm_called")),
        "prompt_tokens": usage["prompt_tokens"],
        "turn_prompt_tokens": _usage(turns)["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
        "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"],
        "cached_tokens": usage["cached_tokens"],
        "cost": usage["cost"],
        "priced": all(isinstance(c.get("cost"), (int, float)) for c in calls),
        "pair_violations": len(pair_problems(run.messages)),
        **accounting_fields(run.events),
        "probes": probes,
        "probe_calls": sum(int(p.get("llm_calls") or 0) for p in probes),
        # Like the eval library's quality metrics, a failed session is not scored.
        "probe_recall": (sum(p["hit"] for p in scored) / len(scored))
        if scored and not run.error else None,
        "final_answer": run.final_answer[:500],
    }


def probe_answers(run: SessionRun, segments: list[list[Message]]) -> list[dict[str, Any]]:
    """Every probe of the item with its answer and hit: an inline probe's from its turn of
    the transcript, an isolated one's from its record in ``probes.jsonl``.

    ``hit`` is ``None`` for a probe without expected strings (LoCoMo's adversarial
    questions) and for an isolated probe not asked (the session stopped before it).
    """
    records = {r.get("probe"): r for r in run.probes}
    answers = []
    for number, probe in enumerate((run.item or {}).get("probes") or []):
        index = int(probe.get("turn", -1))
        expected = probe.get("expected") or []
        record = records.get(number) or {}
        if probe.get("question") is not None:
            answer = str(record.get("answer") or "")
            hit = record.get("hit") if record else None
            mode = "isolated"
        else:
            answer = turn_answer(segments[index]) if 0 <= index < len(segments) else ""
            hit = (bool(answer) and all(contains(answer, e) for e in expected)
                   if expected else None)
            mode = "inline"
        answers.append({"turn": index, "kind": probe.get("kind", ""), "mode": mode,
                        "expected": expected, "answer": answer[:300], "hit": hit,
                        "llm_calls": int(record.get("llm_calls") or 0)})
    return answers


class ExtractTrajectories:
    """Write ``trajectories.jsonl`` from the session run folders."""

    def __init__(self, params: NoParams, spec: StepSpec) -> None:
        self.params = params

    def outputs(self, ctx: StepContext) -> list[str]:
        """``trajectories.jsonl``."""
        return [TRAJECTORIES_FILE]

    def run(self, ctx: StepContext) -> StepResult:
        """One line per session of ``sessions.json``; an unreadable folder gets its error."""
        lines = []
        unreadable = 0
        for row in ctx.sessions():
            folder = ctx.path(row["folder"])
            try:
                record = trajectory(load_run(folder), row)
            except RunFolderError as exc:
                unreadable += 1
                record = {**row, "status": "failed", "error": str(exc)}
            lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True))
        write_text(ctx.path(TRAJECTORIES_FILE), "\n".join(lines) + ("\n" if lines else ""))
        return StepResult([TRAJECTORIES_FILE], {"sessions": len(lines), "unreadable": unreadable},
                          f"{len(lines)} trajectories")


def read_trajectories(path: Path) -> list[dict[str, Any]]:
    """The records of a ``trajectories.jsonl``."""
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]
