"""The three report plots, from ``results.json`` and ``trajectories.jsonl``.

- ``context_fill.svg``: estimated request tokens per turn vs the window, compactions
  ringed, for one session per flavour (the same item in every flavour: the longest one
  that finished everywhere);
- ``cost_vs_score.svg``: per flavour, mean cost (prompt tokens when every call was free)
  against the mean score with its 95% interval;
- ``summarizer_calls.svg``: summarizer calls of every session, grouped by item.
"""

from __future__ import annotations

from typing import Any

from mas.library.lab.report.svg import Series, bar_chart, line_chart

SCORE_PREFERENCE = ("FactRecall", "ProbeRecall", "GoalSuccessRate")


def fill_item(trajectories: list[dict[str, Any]], flavours: list[str]) -> str | None:
    """The item plotted for context fill: finished in every flavour, most turns played."""
    best: tuple[int, str] | None = None
    for item in dict.fromkeys(t["item"] for t in trajectories):
        rows = [t for t in trajectories if t["item"] == item and t.get("run_index") == 0]
        finished = {t["flavour"] for t in rows if t.get("status") == "ok" and t.get("fill")}
        if finished >= set(flavours):
            turns = max(len(t["fill"]) for t in rows)
            if best is None or turns > best[0]:
                best = (turns, item)
    return best[1] if best else None


def context_fill_plot(trajectories: list[dict[str, Any]], flavours: list[str]) -> str | None:
    """The context-fill chart, or ``None`` when no item finished in every flavour."""
    item = fill_item(trajectories, flavours)
    if item is None:
        return None
    series, windows = [], {}
    for flavour in flavours:
        row = next(t for t in trajectories if t["item"] == item and t["flavour"] == flavour
                   and t.get("run_index") == 0)
        fill = row["fill"]
        points = [(float(turn["turn"]), float(turn["estimated_tokens"])) for turn in fill]
        markers = [(float(turn["turn"]), float(turn["estimated_tokens"])) for turn in fill
                   if turn.get("compactions")]
        series.append(Series(flavour, points, markers))
        for turn in fill[-1:]:
            if turn.get("window"):
                windows[int(turn["window"])] = flavour
    references = [(f"window {w:,}", float(w)) for w in sorted(windows)]
    return line_chart(f"Context fill per turn — item {item} (rings: compactions)", "user turn",
                      "estimated request tokens", series, references=references)


def score_metric(results: dict[str, Any]) -> str | None:
    """The score plotted against cost: FactRecall, else ProbeRecall, else GoalSuccessRate."""
    present = {m for per in results["metrics"].values() for m in per}
    return next((m for m in SCORE_PREFERENCE if m in present), None)


def cost_vs_score_plot(results: dict[str, Any]) -> tuple[str | None, str]:
    """The cost-vs-score chart and the x quantity it used (``Cost`` or ``PromptTokens``)."""
    score = score_metric(results)
    costs = [per.get("Cost", {}).get("mean") or 0 for per in results["metrics"].values()]
    x_metric = "Cost" if any(costs) else "PromptTokens"
    if score is None:
        return None, x_metric
    series = []
    for flavour in results["flavours"]:
        per = results["metrics"][flavour]
        if score not in per or x_metric not in per:
            continue
        x, y = float(per[x_metric]["mean"]), per[score]
        errors = [(x, y["low"], y["high"])] if y.get("low") is not None else []
        series.append(Series(flavour, [(x, float(y["mean"]))], errors=errors))
    x_label = "mean cost per session (USD)" if x_metric == "Cost" else \
        "mean prompt tokens per session (every call was free)"
    return line_chart(f"{score} vs {'cost' if x_metric == 'Cost' else 'prompt tokens'} per flavour "
                      "(bars: 95% CI)", x_label, f"mean {score}", series, scatter=True), x_metric


def summarizer_calls_plot(trajectories: list[dict[str, Any]], flavours: list[str]) -> str:
    """Summarizer calls of every session, one bar per flavour in each item's group."""
    keys = list(dict.fromkeys((t["item"], t.get("run_index", 0)) for t in trajectories))
    multiple = any(run for _, run in keys)
    categories = [f"{item}#{run}" if multiple else item for item, run in keys]
    by_cell = {(t["flavour"], t["item"], t.get("run_index", 0)):
               float(t.get("summarizer_calls") or 0) for t in trajectories}
    series = [(flavour, [by_cell.get((flavour, item, run), 0.0) for item, run in keys])
              for flavour in flavours]
    return bar_chart("Summarizer calls per session", "session (dataset item)", "summarizer calls",
                     categories, series)


def all_plots(results: dict[str, Any], trajectories: list[dict[str, Any]]) -> dict[str, str]:
    """File name -> SVG text for every plot the data allow."""
    flavours = results["flavours"]
    plots: dict[str, str] = {}
    fill = context_fill_plot(trajectories, flavours)
    if fill is not None:
        plots["context_fill.svg"] = fill
    cost, _ = cost_vs_score_plot(results)
    if cost is not None:
        plots["cost_vs_score.svg"] = cost
    plots["summarizer_calls.svg"] = summarizer_calls_plot(trajectories, flavours)
    return plots
