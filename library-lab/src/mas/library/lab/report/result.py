"""The result first: one sentence per metric naming the best flavour and what separates it.

For every metric with a better direction, the flavours are ranked by their mean; the best
is compared with the runner-up exactly as a claim is (:func:`~mas.library.lab.steps.
aggregate.check_claim`: paired over the sessions both ran, paired-bootstrap interval, sign
test). The sentence says whether that comparison separates the two, and names beside it
every flavour with degraded sessions: a degraded best or runner-up is never "separated".
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from mas.library.lab.report.table import LABELS, row_order
from mas.library.lab.stats import MIN_BOOTSTRAP_N, RESAMPLES, Estimate, Paired, format_value
from mas.library.lab.steps.aggregate import Claim, check_claim, describe_paired, directions


@dataclass(frozen=True)
class Finding:
    """What one metric says about the flavours.

    :ivar separated: the paired comparison separates ``best`` from ``runner_up`` (and
        neither is degraded).
    :ivar text: the sentence, degraded flavours named at its end.
    """

    metric: str
    direction: str
    best: str
    runner_up: str | None
    separated: bool
    text: str


def degraded_flavours(results: dict[str, Any]) -> dict[str, str]:
    """Flavour -> ``k of n sessions`` for every flavour with a degraded session."""
    sessions = results.get("sessions") or {}
    return {f: f"{d['sessions']} of {sessions.get(f, {}).get('total', '?')} sessions"
            for f, d in (results.get("degradation") or {}).items() if d.get("sessions")}


def _estimates(results: dict[str, Any]) -> dict[str, dict[str, Estimate]]:
    return {f: {m: Estimate(**e) for m, e in per.items()}
            for f, per in results["metrics"].items()}


def _comparison(record: dict[str, Any], runner: str, pairs: int) -> tuple[bool, str]:
    """(separated, how) of the best-vs-runner-up claim record over ``pairs`` paired sessions."""
    paired_json = record.get("paired")
    if pairs < MIN_BOOTSTRAP_N or not paired_json:
        detail = f" ({describe_paired(Paired(**paired_json))})" if paired_json else ""
        few = "no session" if pairs == 0 else f"only {pairs} paired session(s)"
        return False, f"{few} in common with {runner}, too few to separate them{detail}"
    comparison = Paired(**paired_json)
    how = describe_paired(comparison)
    if record.get("clear"):
        return True, f"the paired difference separates it from {runner} ({how})"
    return False, f"the paired difference does not separate it from {runner} ({how})"


def findings(results: dict[str, Any]) -> list[Finding]:
    """One :class:`Finding` per metric with a better direction, in the table's row order."""
    ways = directions(results)
    estimates = _estimates(results)
    samples = results.get("samples") or {}
    methods = results.get("methods") or {}
    seed, resamples = int(methods.get("seed", 0)), int(methods.get("resamples", RESAMPLES))
    bad = degraded_flavours(results)
    found = []
    for metric in row_order(results):
        way = ways.get(metric, "higher")
        ranked = [f for f in results["flavours"] if metric in estimates.get(f, {})]
        if way == "neither" or not ranked:
            continue
        ranked.sort(key=lambda f: estimates[f][metric].mean, reverse=way == "higher")
        best = ranked[0]
        label = LABELS.get(metric, metric)
        mean = format_value(estimates[best][metric].mean)
        named = tuple(f"{f} ({bad[f]})" for f in ranked if f in bad)
        tail = f" Degraded: {', '.join(named)}." if named else ""
        if len(ranked) == 1:
            text = f"{label} ({way} is better): only {best} has it ({mean})."
            found.append(Finding(metric, way, best, None, False, text + tail))
            continue
        runner = ranked[1]
        other = format_value(estimates[runner][metric].mean)
        # No direction given: the claim takes the metric's own, as a stated claim would.
        record = check_claim(Claim(metric=metric, better=best, than=runner), estimates, samples,
                             seed=seed, resamples=resamples, better=ways)
        if not record.get("holds"):
            text = f"{label} ({way} is better): {best} and {runner} tie at {mean}."
            found.append(Finding(metric, way, best, runner, False, text + tail))
            continue
        pairs = len(set((samples.get(best) or {}).get(metric) or {})
                    & set((samples.get(runner) or {}).get(metric) or {}))
        separated, how = _comparison(record, runner, pairs)
        if separated and (best in bad or runner in bad):
            separated = False
            how += "; not a result, a flavour compared is degraded"
        text = (f"{label} ({way} is better): {best} is best at {mean}, then {runner} at "
                f"{other}; {how}.")
        found.append(Finding(metric, way, best, runner, separated, text + tail))
    return found


def result_section(found: list[Finding], pareto_svg: str | None) -> str:
    """The page's opening section: the sentences, then the Pareto plot."""
    items = "".join(
        f"<li class='finding {'separated' if f.separated else 'open'}' "
        f"data-metric='{escape(f.metric)}'>{escape(f.text)}</li>" for f in found)
    body = f"<ul class='findings'>{items}</ul>" if items else \
        "<p class='note'>No metric with a better direction was measured.</p>"
    figure = (f"<figure id='pareto.svg'>{pareto_svg}<figcaption>Each flavour's mean with its "
              "95% interval both ways; the dashed line joins the flavours no other beats on "
              "both (the Pareto front). <a href='plots/pareto.svg'>plots/pareto.svg</a>"
              "</figcaption></figure>" if pareto_svg else "")
    return f"<section id='result'><h2>Result</h2>{body}{figure}</section>"
