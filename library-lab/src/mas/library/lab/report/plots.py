"""The report plots, from ``results.json`` and ``trajectories.jsonl``.

- ``pareto.svg`` (the headline): per flavour, mean ProbeRecall (else FactRecall, else
  GoalSuccessRate) against mean prompt tokens, each with its 95% interval, the Pareto front
  (no other flavour has both fewer tokens and a higher score) joined by a dashed line;
- ``score_vs_cost.svg``: the score against the mean cost per session, when calls were priced;
- ``context_fill.svg``: estimated request tokens per turn, per flavour the median over its
  sessions and the band between the quartiles, compactions ringed, with the soft trigger
  where summarising compacts;
- ``distribution_<metric>.svg``: each session's value per flavour, for the score and the
  prompt tokens;
- ``summarizer_calls.svg``: summarizer calls of every session, grouped by item.

Every plot marks a flavour with degraded sessions: dashed and hollow, "(degraded)" in its
legend.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Collection
from typing import Any

from mas.library.lab.report.svg import Series, bar_chart, line_chart, strip_chart

SCORE_PREFERENCE = ("ProbeRecall", "FactRecall", "GoalSuccessRate")
SHARES = frozenset({"ProbeRecall", "FactRecall", "GoalSuccessRate", "PromptCacheRate"})
"""Result ids whose values are shares of a whole: their axis is 0 to 1."""
DISTRIBUTIONS = ("ProbeRecall", "FactRecall", "PromptTokens")


def _sessions(trajectories: list[dict[str, Any]], flavour: str) -> list[dict[str, Any]]:
    return [t for t in trajectories if t["flavour"] == flavour and t.get("fill")]


def triggers(trajectories: list[dict[str, Any]], flavours: list[str]) -> dict[int, list[str]]:
    """Soft trigger (tokens) -> the flavours that compacted at it (their usual trigger)."""
    found: dict[int, list[str]] = {}
    for flavour in flavours:
        rows = _sessions(trajectories, flavour)
        if not any(turn.get("compactions") for row in rows for turn in row["fill"]):
            continue  # a trigger only matters where compaction happens
        counts = Counter(int(turn["soft_trigger"]) for row in rows for turn in row["fill"]
                         if turn.get("soft_trigger"))
        if counts:
            found.setdefault(counts.most_common(1)[0][0], []).append(flavour)
    return found


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile) of ``values`` (one value: itself three times)."""
    if len(values) < 2:
        return values[0], values[0], values[0]
    low, middle, high = statistics.quantiles(values, n=4, method="inclusive")
    return low, middle, high


def fill_band(rows: list[dict[str, Any]]) -> list[tuple[float, float, float, float]]:
    """Per user turn: (turn, first quartile, median, third quartile) of the sessions' fill."""
    by_turn: dict[float, list[float]] = {}
    for row in rows:
        for turn in row["fill"]:
            by_turn.setdefault(float(turn["turn"]), []).append(float(turn["estimated_tokens"]))
    return [(turn, *quartiles(sorted(values))) for turn, values in sorted(by_turn.items())]


def context_fill_plot(trajectories: list[dict[str, Any]], flavours: list[str],
                      degraded: Collection[str] = ()) -> str | None:
    """Per flavour the median context fill per turn and its interquartile band, or ``None``
    when no session recorded any."""
    series = []
    counts = []
    for flavour in flavours:
        rows = _sessions(trajectories, flavour)
        if not rows:
            continue
        band = fill_band(rows)
        markers = [(float(turn["turn"]), float(turn["estimated_tokens"]))
                   for row in rows for turn in row["fill"] if turn.get("compactions")]
        series.append(Series(flavour, [(t, median) for t, _, median, _ in band], markers,
                             band=[(t, low, high) for t, low, _, high in band],
                             degraded=flavour in degraded))
        counts.append(len(rows))
    if not series:
        return None
    references = [(f"soft trigger {value:,} ({', '.join(names)})", float(value))
                  for value, names in sorted(triggers(trajectories, flavours).items())]
    budgets = Counter(int(turn["hard_budget"]) for row in trajectories
                      for turn in row.get("fill") or [] if turn.get("hard_budget"))
    if budgets:
        references.append((f"hard request budget ~{budgets.most_common(1)[0][0]:,}",
                           float(budgets.most_common(1)[0][0])))
    each = f"{counts[0]}" if len(set(counts)) == 1 else f"{min(counts)}-{max(counts)}"
    # Sessions differ in length: each turn's median is over the sessions that reached it.
    return line_chart(f"Context fill per turn: median and quartile band over the sessions "
                      f"reaching each turn ({each} per flavour; rings: compactions)", "user turn",
                      "estimated request tokens", series, references=references)


def score_metric(results: dict[str, Any]) -> str | None:
    """The score of the headline plot: ProbeRecall, else FactRecall, else GoalSuccessRate."""
    present = {m for per in results["metrics"].values() for m in per}
    return next((m for m in SCORE_PREFERENCE if m in present), None)


def cost_metric(results: dict[str, Any]) -> str:
    """``Cost`` when any flavour has one, else ``PromptTokens`` (every call was free)."""
    costs = [per.get("Cost", {}).get("mean") or 0 for per in results["metrics"].values()]
    return "Cost" if any(costs) else "PromptTokens"


def pareto_front(points: dict[str, tuple[float, float]]) -> list[str]:
    """The flavours no other beats on both: fewer-or-equal tokens and a higher-or-equal
    score, better in one (``points``: flavour -> (tokens, score)); by tokens, ascending."""
    front = [f for f, (x, y) in points.items()
             if not any(ox <= x and oy >= y and (ox, oy) != (x, y) for ox, oy in points.values())]
    return sorted(front, key=lambda f: points[f])


def pareto_plot(results: dict[str, Any], degraded: Collection[str] = ()) -> str | None:
    """The score against prompt tokens, intervals both ways, the front marked; ``None``
    without a score or prompt tokens."""
    score = score_metric(results)
    if score is None:
        return None
    series, points = [], {}
    for flavour in results["flavours"]:
        per = results["metrics"][flavour]
        if score not in per or "PromptTokens" not in per:
            continue
        x, y = per["PromptTokens"], per[score]
        points[flavour] = (float(x["mean"]), float(y["mean"]))
        errors = [(points[flavour][0], y["low"], y["high"])] if y.get("low") is not None else []
        x_errors = ([(points[flavour][1], x["low"], x["high"])]
                    if x.get("low") is not None else [])
        series.append(Series(flavour, [points[flavour]], errors=errors, x_errors=x_errors,
                             degraded=flavour in degraded))
    if not series:
        return None
    front = [points[f] for f in pareto_front(points)]
    return line_chart(f"{score} against prompt tokens per flavour (bars: 95% intervals; dashed: "
                      "Pareto front; up and left is better)", "mean prompt tokens per session",
                      f"mean {score}", series, scatter=True, x_zero=True, labels=True,
                      y_range=(0.0, 1.0) if score in SHARES else None, front=front)


def score_vs_cost_plot(results: dict[str, Any], cost_label: str,
                       degraded: Collection[str] = ()) -> str | None:
    """The score against cost, or ``None`` without a score.

    :param cost_label: the x axis title (the report says how cost was priced).
    """
    score, x_metric = score_metric(results), cost_metric(results)
    if score is None:
        return None
    series = []
    for flavour in results["flavours"]:
        per = results["metrics"][flavour]
        if score not in per or x_metric not in per:
            continue
        x, y = float(per[x_metric]["mean"]), per[score]
        errors = [(x, y["low"], y["high"])] if y.get("low") is not None else []
        series.append(Series(flavour, [(x, float(y["mean"]))], errors=errors,
                             degraded=flavour in degraded))
    return line_chart(f"{score} against {'cost' if x_metric == 'Cost' else 'prompt tokens'} "
                      "per flavour (bars: 95% interval; up and left is better)", cost_label,
                      f"mean {score}", series, scatter=True, x_zero=True, labels=True,
                      y_range=(0.0, 1.0) if score in SHARES else None)


def distribution_plot(results: dict[str, Any], metric: str,
                      degraded: Collection[str] = ()) -> str | None:
    """Each session's ``metric`` per flavour, or ``None`` when no flavour has it."""
    samples = results.get("samples") or {}
    groups = [(f, list((samples.get(f) or {}).get(metric, {}).values()))
              for f in results["flavours"]]
    if not any(values for _, values in groups):
        return None
    return strip_chart(f"{metric} per session", metric, groups,
                       y_range=(0.0, 1.0) if metric in SHARES else None, degraded=degraded)


def summarizer_calls_plot(trajectories: list[dict[str, Any]], flavours: list[str],
                          degraded: Collection[str] = ()) -> str:
    """Summarizer calls of every session, one bar per flavour in each item's group."""
    keys = list(dict.fromkeys((t["item"], t.get("run_index", 0)) for t in trajectories))
    multiple = any(run for _, run in keys)
    categories = [f"{item}#{run}" if multiple else item for item, run in keys]
    by_cell = {(t["flavour"], t["item"], t.get("run_index", 0)):
               float(t.get("summarizer_calls") or 0) for t in trajectories}
    series = [(flavour, [by_cell.get((flavour, item, run), 0.0) for item, run in keys])
              for flavour in flavours]
    return bar_chart("Summarizer calls per session", "session (dataset item)", "summarizer calls",
                     categories, series, degraded=degraded)


def all_plots(results: dict[str, Any], trajectories: list[dict[str, Any]],
              cost_label: str, degraded: Collection[str] = ()) -> dict[str, str]:
    """File name -> SVG text for every plot the data allow, the headline first.

    :param degraded: flavours with degraded sessions, marked in every plot.
    """
    flavours = results["flavours"]
    plots: dict[str, str] = {}
    headline = pareto_plot(results, degraded)
    if headline is not None:
        plots["pareto.svg"] = headline
    if cost_metric(results) == "Cost":  # free calls: the Pareto plot already is the picture
        priced = score_vs_cost_plot(results, cost_label, degraded)
        if priced is not None:
            plots["score_vs_cost.svg"] = priced
    fill = context_fill_plot(trajectories, flavours, degraded)
    if fill is not None:
        plots["context_fill.svg"] = fill
    for metric in DISTRIBUTIONS:
        chart = distribution_plot(results, metric, degraded)
        if chart is not None:
            plots[f"distribution_{metric}.svg"] = chart
    plots["summarizer_calls.svg"] = summarizer_calls_plot(trajectories, flavours, degraded)
    return plots
