"""Degradation in the lab: per session, per flavour, and what it does to a claim.

A session's own counts come from its ``degraded`` events (``trajectories.jsonl``); the jury
adds two kinds read from its ``metrics.json``: ``unscored_votes`` (votes that gave no
score) and ``judge_truncations`` (votes whose input was cut to fit the judge's window).
A flavour with any degraded session makes every claim over it *unreliable*: the claim is
reported, never as holding (docs/lab.md, "Degraded sessions").
"""

from __future__ import annotations

from typing import Any

from mas.runtime.degradation import describe_counts, is_degraded


def judge_counts(metrics: dict[str, Any] | None) -> dict[str, int]:
    """``unscored_votes`` and ``judge_truncations`` of one session's ``metrics.json``."""
    unscored = truncated = 0
    for entry in ((metrics or {}).get("metrics") or {}).values():
        if not isinstance(entry, dict) or entry.get("kind") != "judge":
            continue
        detail = entry.get("detail") or {}
        votes = [v for v in detail.get("votes") or [] if isinstance(v, dict)]
        unscored += int(detail.get("n_unscored") or sum(v.get("score") is None for v in votes))
        truncated += sum(bool(v.get("truncated")) for v in votes)
    return {k: v for k, v in (("unscored_votes", unscored), ("judge_truncations", truncated))
            if v}


def session_counts(record: dict[str, Any], metrics: dict[str, Any] | None) -> dict[str, int]:
    """Every degradation count of one session: its own and its jury's."""
    counts = dict(record.get("degradation") or {})
    for kind, number in judge_counts(metrics).items():
        counts[kind] = counts.get(kind, 0) + number
    return counts


class FlavourDegradation:
    """Sessions degraded and counts per kind, per flavour, as ``results.json`` keeps them."""

    def __init__(self, flavours: list[str]) -> None:
        self.sessions = {f: 0 for f in flavours}
        self.counts: dict[str, dict[str, int]] = {f: {} for f in flavours}

    def add(self, flavour: str, counts: dict[str, int]) -> bool:
        """Count one session of ``flavour``; returns whether it is degraded."""
        for kind, number in counts.items():
            self.counts[flavour][kind] = self.counts[flavour].get(kind, 0) + number
        degraded = is_degraded(counts)
        self.sessions[flavour] += int(degraded)
        return degraded

    def to_json(self) -> dict[str, dict[str, Any]]:
        """Per flavour: degraded sessions and the sorted counts."""
        return {f: {"sessions": self.sessions[f], "counts": dict(sorted(self.counts[f].items()))}
                for f in self.sessions}


def unreliable(claim: dict[str, Any], degradation: dict[str, dict[str, Any]],
               sessions: dict[str, dict[str, int]]) -> dict[str, Any]:
    """``claim`` marked unreliable when either of its flavours has degraded sessions."""
    named = [str(claim.get("better")), str(claim.get("than"))]
    bad = [f for f in named if (degradation.get(f) or {}).get("sessions")]
    if not bad:
        return {**claim, "reliable": True}
    why = "; ".join(
        f"{f!r} degraded in {degradation[f]['sessions']} of {sessions.get(f, {}).get('total', 0)} "
        f"session(s) ({describe_counts(degradation[f]['counts'])})" for f in bad)
    text = str(claim.get("text", ""))
    head, _, rest = text.partition(": ")
    # The verdict is replaced, not qualified: over degraded data nothing "holds".
    numbers = rest[rest.find("("):] if "(" in rest else ""
    return {**claim, "reliable": False, "clear": False,
            "text": f"{head}: unreliable, {why} {numbers}".rstrip()}


def degraded_rows(results: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Table rows: degraded sessions, then one row per counted kind, a cell per flavour.

    No rows when nothing was counted, so a clean run's table is unchanged.
    """
    flavours = results["flavours"]
    per = results.get("degradation") or {}
    kinds = sorted({k for f in flavours for k in (per.get(f) or {}).get("counts", {})})
    if not kinds:
        return []
    total = {f: (results.get("sessions") or {}).get(f, {}).get("total", 0) for f in flavours}
    rows = [("sessions degraded", [f"{(per.get(f) or {}).get('sessions', 0)} of {total[f]}"
                                   for f in flavours])]
    for kind in kinds:
        rows.append((f"  {kind}", [str((per.get(f) or {}).get("counts", {}).get(kind, 0))
                                   for f in flavours]))
    return rows


def degraded_lines(sessions: dict[str, Any] | None,
                   results: dict[str, Any] | None) -> list[str]:
    """What the lab prints when anything degraded: per flavour, sessions and why.

    ``sessions`` is ``sessions.json`` (each degraded row carries its counts and last
    reasons), ``results`` is ``results.json`` (which adds the jury's kinds). Empty when
    nothing degraded.
    """
    rows = [r for r in (sessions or {}).get("sessions") or [] if r.get("status") == "degraded"]
    per = (results or {}).get("degradation") or {}
    flavours = list(dict.fromkeys([*(r["flavour"] for r in rows),
                                   *(f for f, d in per.items() if d.get("sessions"))]))
    lines = []
    for flavour in flavours:
        mine = [r for r in rows if r["flavour"] == flavour]
        counted = (per.get(flavour) or {}).get("sessions", len(mine))
        total = ((results or {}).get("sessions") or {}).get(flavour, {}).get("total")
        of = f" of {total}" if total else ""
        why = mine[0].get("degradation") if mine else describe_counts(
            (per.get(flavour) or {}).get("counts") or {})
        lines.append(f"degraded: flavour {flavour!r}: {max(counted, len(mine))}{of} session(s); "
                     f"e.g. {mine[0]['session_id'] + ': ' if mine else ''}{why}")
    # A plugin left out mid-run does not degrade the session it happened in (it may not
    # have used the plugin), but the campaign ran partly with it and partly without.
    left_out = sum(int((d.get("counts") or {}).get("plugin_faults", 0)) for d in per.values())
    if left_out:
        lines.append(f"degraded: a plugin was left out while {left_out} session turn(s) ran "
                     "(plugin_faults); sessions after it ran without it")
    return lines
