"""The terminal table: one row per result id (a judge metric's names the backend that
scored it), one column per flavour, ``mean [95% interval]``."""

from __future__ import annotations

from typing import Any

from mas.library.lab.stats import METHODS, MIN_BOOTSTRAP_N, Estimate, format_value
from mas.library.lab.steps.aggregate import USAGE, directions
from mas.library.lab.steps.degraded import degraded_rows
from mas.runtime.cli.view_text import fold

SCORE_FIRST = ("FactRecall", "ProbeRecall")
EVIDENCE = ("EvidenceVerbatim", "EvidenceWithSummary", "EvidenceWithRecall")
"""The evidence metrics' rows, in their cumulative order (then per probe category)."""
LABELS = {
    "EvidenceVerbatim": "evidence verbatim in request",
    "EvidenceWithSummary": "evidence + in summary",
    "EvidenceWithRecall": "evidence + recall",
    "FactRecall": "FactRecall (final answer)",
    "ProbeRecall": "ProbeRecall (mid-session)",
    "PromptTokens": "prompt tokens (agent turns)",
    "TotalTokens": "all tokens (incl. summaries)",
    "SummarizerCalls": "summarizer calls",
    "SummarizerTokens": "summarizer tokens",
    "LLMCalls": "LLM calls",
    "Cost": "cost USD",
    "PromptCacheRate": "cache-hit rate (prompt)",
    "Compactions": "compactions",
    "PairViolations": "pair-safety violations",
    "RequestsWithCuts": "requests that cut history",
    "IdentifierSurvival": "identifiers kept (after repair)",
    "IdentifiersBySummarizer": "identifiers kept by summarizer",
}


def better(metric: str, results: dict[str, Any]) -> str:
    """Which way is better for ``metric``: ``higher``, ``lower`` or ``-`` (neither), as the
    metric itself declares it (``results.json``'s ``better``)."""
    way = directions(results).get(metric, "higher")
    return "-" if way == "neither" else way


JUDGES = ("mce", "native")
"""Who scores a judge metric: MCE's own metric classes, or mas-lab's rubrics."""


def scored_by(metric: str, results: dict[str, Any]) -> str:
    """Who computed ``metric``: a judge metric's backend (:data:`JUDGES`), ``computed`` (a
    computed metric), ``lab`` (the lab's usage columns), joined by ``+`` when sessions
    differ; ``-`` for a ``results.json`` written before this was recorded. A per-category
    row is its metric's."""
    stored = results.get("backend") or {}
    return str(stored.get(metric) or stored.get(metric.partition("[")[0]) or "-")


def judged_label(metric: str, results: dict[str, Any]) -> str:
    """The row label, with the backend that scored it after a judge metric's:
    ``GoalSuccessRate (mce)``. The terminal has no room for a column of its own (two
    flavour columns fit in 100), and only the judge rows have a backend to choose."""
    by = scored_by(metric, results)
    if any(judge in by.split("+") for judge in JUDGES):
        return f"{row_label(metric)} ({by})"
    return row_label(metric)


def row_order(results: dict[str, Any]) -> list[str]:
    """Scores first (FactRecall, ProbeRecall, the evidence levels and then per category,
    judge metrics), then usage columns."""
    present = {m for per in results["metrics"].values() for m in per}
    usage = [result_id for result_id, _ in USAGE]
    scores = [m for m in (*SCORE_FIRST, *EVIDENCE) if m in present]
    categories = sorted({m.split("[", 1)[1] for m in present
                         if m.split("[", 1)[0] in EVIDENCE and "[" in m})
    scores += [f"{level}[{category}" for category in categories for level in EVIDENCE
               if f"{level}[{category}" in present]
    others = sorted(m for m in present if m not in scores and m not in usage and m != "Tokens")
    return [*scores, *others, *[m for m in usage if m in present and m not in scores]]


def row_label(metric: str) -> str:
    """The row label of ``metric``; a per-category row names its category."""
    base, _, category = metric.partition("[")
    if category and base in LABELS:
        return f"{LABELS[base]} [{category}"
    return LABELS.get(metric, metric)


def cell(entry: dict[str, Any] | None) -> str:
    """``mean [low, high]`` (just the mean when the interval is unknown), ``-`` when missing.

    Intervals are written as bounds, not ``±half``: Wilson and bootstrap intervals are not
    symmetric around the mean. A bootstrap interval too small to stand says why instead.
    """
    if not entry:
        return "-"
    mean = entry["mean"]
    if entry.get("low") is None or entry.get("high") is None:
        return format_value(mean)
    small = Estimate(mean, entry["low"], entry["high"], int(entry.get("n") or 0),
                     entry.get("method", "none")).too_small()
    if small:
        return f"{format_value(mean)} ({small})"
    return f"{format_value(mean)} [{format_value(entry['low'])}, {format_value(entry['high'])}]"


def methods_note(results: dict[str, Any]) -> str:
    """One line saying how the intervals and the claims were computed."""
    used = sorted({e.get("method", "none") for per in results["metrics"].values()
                   for e in per.values()})
    methods = results.get("methods") or {}
    text = "95% intervals: " + "; ".join(f"{METHODS.get(m, m)}" for m in used)
    if "seed" in methods:
        text += f" (seed {methods['seed']}, {methods.get('resamples')} resamples)"
    text += (f"; a bootstrap over fewer than {MIN_BOOTSTRAP_N} sessions (or over equal values) "
             "is not printed as an interval: the cell says why")
    if methods.get("claims"):
        text += f". Claims: {methods['claims']}"
    return text + "."


def backend_note(judged: list[str]) -> str:
    """What the ``(mce)`` / ``(native)`` after a judge row's label mean, for those present."""
    meaning = {"mce": "MCE's own metric classes", "native": "mas-lab's rubrics"}
    return "Judge rows name who scored them: " + "; ".join(
        f"({name}) {meaning[name]}" for name in judged) + " (eval_mce backend, docs/eval.md)."


def render_table(results: dict[str, Any], width: int | None = None) -> str:
    """The whole table, with session counts and the checked claims underneath.

    :param width: columns to stay within (a terminal): the flavour columns are split into
        as many blocks as needed, each repeating the metric column, and the notes under
        the table are wrapped. ``None``: one block, unwrapped (``results.txt``).
    """
    flavours = results["flavours"]
    rows = [["metric (mean [95% interval])", "better", *flavours]]
    for metric in row_order(results):
        rows.append([judged_label(metric, results), better(metric, results),
                     *[cell(results["metrics"][f].get(metric)) for f in flavours]])
    sessions = results.get("sessions", {})
    rows.append(["sessions (failed)", "",
                 *[f"{sessions.get(f, {}).get('total', 0)} ({sessions.get(f, {}).get('failed', 0)})"
                   for f in flavours]])
    rows.extend([label, "", *cells] for label, cells in degraded_rows(results))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines: list[str] = []
    for block in _column_blocks(widths, width):
        if lines:
            lines.append("")
        columns = [0, 1, *block]
        for number, row in enumerate(rows):
            lines.append("  ".join(row[i].ljust(widths[i]) if i == 0 else row[i].rjust(widths[i])
                                   for i in columns).rstrip())
            if number == 0:
                lines.append("  ".join("-" * widths[i] for i in columns))
    claims = results.get("claims") or []
    judged = sorted({b for m in row_order(results) for b in scored_by(m, results).split("+")
                     if b in JUDGES})
    notes = [methods_note(results), *([backend_note(judged)] if judged else []),
             *(f"* {claim['text']}" for claim in claims)]
    if width is not None:
        notes = [fold(note, width) for note in notes]
    return "\n".join([*lines, *notes])


def _column_blocks(widths: list[int], width: int | None) -> list[list[int]]:
    """The flavour columns (indexes from 2) grouped so that each block, with the metric and
    ``better`` columns in front, fits ``width``; a column wider than that goes alone."""
    if width is None:
        return [list(range(2, len(widths)))]
    blocks: list[list[int]] = [[]]
    used = widths[0] + 2 + widths[1]
    for index in range(2, len(widths)):
        if blocks[-1] and used + 2 + widths[index] > width:
            blocks.append([])
            used = widths[0] + 2 + widths[1]
        blocks[-1].append(index)
        used += 2 + widths[index]
    return blocks
