"""``aggregate``: per-flavour means with 95% intervals, and the claims checked.

Per session it reads the trajectory (usage, context, probes) and ``metrics.json`` (every
scored metric id); per flavour it writes the mean, 95% interval, its method (Wilson for
0/1 values, a seeded bootstrap otherwise) and the sample size of each into
``results.json``. A metric that counts probes (``detail.successes`` of ``detail.trials``,
as the evidence metrics do) is pooled over the flavour's sessions instead: its share of
all probes with Wilson's interval, and one more result per probe category
(``EvidenceVerbatim[2]``), and the terminal table into ``results.txt``. ``config.compare`` states
claims ("flavour A has a higher FactRecall than flavour B") that are checked on the paired
per-session differences (paired bootstrap interval, exact sign test) and stated honestly
either way, with the effect size and the differences behind it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mas.library.lab.rundir import read_json, write_json, write_text
from mas.library.lab.stats import (
    METHODS,
    RESAMPLES,
    Estimate,
    Paired,
    estimate,
    format_p,
    format_value,
    paired,
    pooled,
    stable_seed,
)
from mas.library.lab.steps import RESULTS_FILE, TABLE_FILE, TRAJECTORIES_FILE, StepContext
from mas.library.lab.steps.degraded import FlavourDegradation, session_counts, unreliable
from mas.library.lab.steps.trajectories import read_trajectories
from mas.runtime.degradation import FAILED
from mas.runtime.errors import MasError
from mas.runtime.protocols import StepResult
from mas.runtime.spec.experiment import StepSpec

USAGE: tuple[tuple[str, str], ...] = (
    ("ProbeRecall", "probe_recall"),
    ("PromptTokens", "turn_prompt_tokens"),
    ("TotalTokens", "total_tokens"),
    ("SummarizerCalls", "summarizer_calls"),
    ("SummarizerTokens", "summarizer_tokens"),
    ("LLMCalls", "llm_calls"),
    ("Cost", "cost"),
    ("PromptCacheRate", "cache_rate"),
    ("Compactions", "compactions"),
    ("PairViolations", "pair_violations"),
    ("RequestsWithCuts", "requests_with_cuts"),
    ("IdentifierSurvival", "identifier_survival"),
    ("IdentifiersBySummarizer", "identifiers_by_summarizer"),
)
"""Columns computed from trajectories: result id and trajectory field.

``PromptTokens`` counts the agent's own requests; ``TotalTokens`` every call's prompt and
completion tokens, summaries included.
``PromptCacheRate`` (the cache-hit rate) is the share of prompt tokens the provider served
from its prefix cache.
"""


USAGE_BETTER: dict[str, str] = {
    "PromptTokens": "lower", "TotalTokens": "lower", "SummarizerCalls": "lower",
    "SummarizerTokens": "lower", "LLMCalls": "lower", "Cost": "lower", "PairViolations": "lower",
    "RequestsWithCuts": "lower", "Compactions": "neither"}
"""Which way the lab's own columns are better where it is not ``higher`` (the recalls, the
cache-hit rate, identifiers kept). Scored metrics say it themselves in ``metrics.json``."""


def directions(results: dict[str, Any]) -> dict[str, str]:
    """Metric id -> ``higher`` / ``lower`` / ``neither`` for every metric of ``results``.

    From ``results["better"]`` (what each metric declared); a ``results.json`` written before
    directions were recorded falls back to the lab's own columns, then ``higher``.
    """
    present = {m for per in results["metrics"].values() for m in per}
    stored = results.get("better") or {}
    return {m: str(stored.get(m) or USAGE_BETTER.get(m, "higher")) for m in sorted(present)}


COUNTS = frozenset({"LLMCalls", "Tokens", "Cost", "Compactions"} | {
    result_id for result_id, _ in USAGE
    if result_id not in ("ProbeRecall", "PromptCacheRate", "IdentifierSurvival",
                         "IdentifiersBySummarizer")})
"""Result ids that count something (calls, tokens, dollars): never a proportion, so never a
Wilson interval, even when every session counted 0 or 1."""


class Claim(BaseModel):
    """A comparison the report checks: ``better`` beats ``than`` on ``metric``."""

    model_config = ConfigDict(extra="forbid")

    metric: str = Field(description="Result id, e.g. FactRecall or PromptTokens.")
    better: str = Field(description="The flavour expected to win.")
    than: str = Field(description="The flavour it is compared with.")
    direction: Literal["higher", "lower"] | None = Field(
        default=None, description="Which way wins; default: the metric's own direction.")


class AggregateParams(BaseModel):
    """``config`` of ``aggregate``."""

    model_config = ConfigDict(extra="forbid")

    compare: list[Claim] = Field(default_factory=list, description="Claims to check.")
    seed: int = Field(default=0, description="Seed of every bootstrap interval.")
    resamples: int = Field(default=RESAMPLES, ge=100, le=100_000,
                           description="Bootstrap resamples per interval.")


def _cache_rate(record: dict[str, Any]) -> float | None:
    prompt = record.get("prompt_tokens") or 0
    return (record.get("cached_tokens") or 0) / prompt if prompt else None


def declared_directions(metrics: dict[str, Any] | None) -> dict[str, str]:
    """Metric id -> the direction its ``metrics.json`` record declares (``better``)."""
    return {metric_id: str(entry["better"])
            for metric_id, entry in ((metrics or {}).get("metrics") or {}).items()
            if isinstance(entry, dict) and entry.get("better")}


LAB, COMPUTED = "lab", "computed"
"""Who computed a result that no judge scored: the lab itself (the usage columns, from the
trajectories), or a computed metric of metrics.json (mas-lab's code, on the record)."""


def session_values(record: dict[str, Any],
                   metrics: dict[str, Any] | None) -> dict[str, tuple[float, str]]:
    """Every numeric result of one session and who computed it: metrics.json values (a
    judge metric's backend, ``detail.backend``: ``mce`` or ``native``; else
    :data:`COMPUTED`), then the usage columns (:data:`LAB`), which win over a metrics.json
    id of the same name."""
    values: dict[str, tuple[float, str]] = {}
    for metric_id, entry in ((metrics or {}).get("metrics") or {}).items():
        value = entry.get("value") if isinstance(entry, dict) else None
        if isinstance(value, (int, float)):
            detail = entry.get("detail") if isinstance(entry.get("detail"), dict) else {}
            source = str(detail.get("backend") or "native") if entry.get("kind") == "judge" \
                else COMPUTED
            values[metric_id] = (float(value), source)
    derived = {**record, "cache_rate": _cache_rate(record)}
    for result_id, field in USAGE:
        value = derived.get(field)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            values[result_id] = (float(value), LAB)
    return values


def pooled_counts(metrics: dict[str, Any] | None) -> dict[str, tuple[int, int]]:
    """Per result id, the (successes, trials) a probe-counting metric scored in one
    session, and per category ``id[category]``."""
    counts: dict[str, tuple[int, int]] = {}
    for metric_id, entry in ((metrics or {}).get("metrics") or {}).items():
        detail = entry.get("detail") if isinstance(entry, dict) else None
        if not isinstance(detail, dict) or (pair := _count_pair(detail)) is None:
            continue
        counts[metric_id] = pair
        for category, inner in (detail.get("by_category") or {}).items():
            inner_pair = _count_pair(inner) if isinstance(inner, dict) else None
            if inner_pair is not None:
                counts[f"{metric_id}[{category}]"] = inner_pair
    return counts


def _count_pair(detail: dict[str, Any]) -> tuple[int, int] | None:
    successes, trials = detail.get("successes"), detail.get("trials")
    # ``type() is int``: a boolean is not a count.
    if type(successes) is int and type(trials) is int and 0 <= successes <= trials > 0:
        return successes, trials
    return None


def aggregate(ctx: StepContext, claims: list[Claim], *, seed: int = 0,
              resamples: int = RESAMPLES) -> dict[str, Any]:
    """The ``results.json`` document for the run folder of ``ctx``."""
    records = read_trajectories(ctx.path(TRAJECTORIES_FILE))
    if not records:
        raise MasError(f"{ctx.path(TRAJECTORIES_FILE)}: no trajectories; run "
                       "extract_trajectories first")
    flavours = list(dict.fromkeys(r["flavour"] for r in records))
    samples: dict[str, dict[str, dict[str, float]]] = {f: {} for f in flavours}
    sessions = {f: {"total": 0, "failed": 0, "degraded": 0} for f in flavours}
    degradation = FlavourDegradation(flavours)
    counts: dict[str, dict[str, list[int]]] = {f: {} for f in flavours}
    better = dict(USAGE_BETTER)
    sources: dict[str, set[str]] = {}
    for record in records:
        flavour = record["flavour"]
        sessions[flavour]["total"] += 1
        folder = record.get("folder")
        metrics = read_json(ctx.path(folder) / "metrics.json") if folder else None
        better.update(declared_directions(metrics))
        if record.get("status") == FAILED:
            # A failed session stopped part-way: its numbers would skew the table and
            # flip claims. It is counted (the table's sessions row) and left out.
            sessions[flavour]["failed"] += 1
            continue
        if degradation.add(flavour, session_counts(record, metrics)):
            sessions[flavour]["degraded"] += 1
        cell = f"{record.get('item')}#{record.get('run_index', 0)}"
        for metric_id, (value, source) in session_values(record, metrics).items():
            samples[flavour].setdefault(metric_id, {})[cell] = value
            sources.setdefault(metric_id, set()).add(source)
        for result_id, (successes, trials) in pooled_counts(metrics).items():
            total = counts[flavour].setdefault(result_id, [0, 0])
            total[0] += successes
            total[1] += trials
            # The session's own share: what a claim pairs, session by session.
            samples[flavour].setdefault(result_id, {})[cell] = successes / trials
    results: dict[str, dict[str, Estimate]] = {
        f: {m: e for m, v in samples[f].items()
            if (e := estimate(list(v.values()), seed=stable_seed(seed, f, m),
                              resamples=resamples, proportion=m not in COUNTS)) is not None}
        for f in flavours
    }
    for flavour in flavours:
        for result_id, (successes, trials) in counts[flavour].items():
            pooled_estimate = pooled(successes, trials)
            if pooled_estimate is not None:
                results[flavour][result_id] = pooled_estimate
    degraded = degradation.to_json()
    present = {m for per in results.values() for m in per}
    ways = {m: better.get(m, "higher") for m in sorted(present)}
    return {
        "flavours": flavours,
        "better": ways,
        "backend": {m: "+".join(sorted(sources[m])) for m in sorted(present) if m in sources},
        "sessions": sessions,
        "degradation": degraded,
        "metrics": {f: {m: e.to_json() for m, e in sorted(results[f].items())} for f in flavours},
        "samples": {f: {m: dict(sorted(v.items())) for m, v in sorted(samples[f].items())}
                    for f in flavours},
        "methods": {**METHODS, "claims": PAIRED_METHOD, "seed": seed, "resamples": resamples},
        "claims": [unreliable(check_claim(claim, results, samples, seed=seed,
                                          resamples=resamples, better=ways), degraded, sessions)
                   for claim in claims],
    }


PAIRED_METHOD = ("paired over the sessions both flavours ran: effect = mean difference, "
                 "seeded paired-bootstrap 95% interval, exact two-sided sign test")
"""How claims are checked, as the report states it."""


def check_claim(claim: Claim, results: dict[str, dict[str, Estimate]],
                samples: dict[str, dict[str, dict[str, float]]] | None = None, *,
                seed: int = 0, resamples: int = RESAMPLES,
                better: dict[str, str] | None = None) -> dict[str, Any]:
    """Whether the data support ``claim``, in one honest sentence, with its effect size.

    With per-session ``samples`` the comparison is paired (same item and run in both
    flavours): the claim is *clear* when the paired-bootstrap 95% interval of the mean
    difference excludes 0; the record carries the effect, the interval, the sign-test
    p-value and every difference. Without samples it is clear when the two flavours'
    intervals do not overlap.

    :param better: metric id -> which way it is better; a claim without a ``direction``
        takes its metric's (``higher`` when unknown).
    """
    direction = claim.direction or (better or {}).get(claim.metric, "higher")
    record: dict[str, Any] = {**claim.model_dump(), "direction": direction}
    if direction not in ("higher", "lower"):
        record.update(holds=None, clear=False,
                      text=f"cannot check: {claim.metric} has no better direction; give the "
                           "claim a direction (higher or lower)")
        return record
    winner = results.get(claim.better, {}).get(claim.metric)
    than = results.get(claim.than, {}).get(claim.metric)
    if winner is None or than is None:
        missing = claim.better if winner is None else claim.than
        record.update(holds=None, clear=False,
                      text=f"cannot check: no {claim.metric} for flavour {missing!r}")
        return record
    sign = 1.0 if direction == "higher" else -1.0
    holds = sign * (winner.mean - than.mean) > 0
    left = (samples or {}).get(claim.better, {}).get(claim.metric, {})
    right = (samples or {}).get(claim.than, {}).get(claim.metric, {})
    common = sorted(set(left) & set(right))
    differences = [left[c] - right[c] for c in common]
    comparison = paired(differences, sign=sign, resamples=resamples,
                        seed=stable_seed(seed, claim.better, claim.than, claim.metric))
    if comparison is not None and comparison.low is not None and comparison.high is not None:
        clear = holds and (comparison.low > 0 if sign > 0 else comparison.high < 0)
        how = describe_paired(comparison)
        record.update(paired=comparison.to_json(), differences=[
            {"session": c, "better": left[c], "than": right[c], "difference": left[c] - right[c]}
            for c in common])
    else:
        clear = holds and not winner.overlaps(than)
        how = "95% intervals " + ("do not overlap" if not winner.overlaps(than) else "overlap")
    verdict = ("holds" + ("" if clear else ", but not clearly")
               if holds else "does NOT hold in this run")
    record.update(holds=holds, clear=clear, better_mean=winner.mean, than_mean=than.mean,
                  effect=winner.mean - than.mean,
                  text=f"{claim.better} has a {direction} {claim.metric} than {claim.than}: "
                       f"{verdict} ({format_value(winner.mean)} vs "
                       f"{format_value(than.mean)}; {how})")
    return record


def describe_paired(comparison: Paired) -> str:
    """``effect +0.2, paired over 8 sessions, 95% CI [...], 6 better / ..., sign test p=...``."""
    interval = (f"95% CI [{format_value(comparison.low)}, {format_value(comparison.high)}]"
                if comparison.low is not None and comparison.high is not None
                else "no interval (one pair)")
    return (f"effect {_signed(comparison.effect)}, paired over {comparison.n} sessions, "
            f"{interval}, {comparison.wins} better / {comparison.losses} worse / "
            f"{comparison.ties} tied, sign test {format_p(comparison.p_value)}")


def _signed(value: float) -> str:
    return ("+" if value > 0 else "") + format_value(value)


class Aggregate:
    """Write ``results.json`` and ``results.txt``."""

    def __init__(self, params: AggregateParams, spec: StepSpec) -> None:
        self.params = params

    def outputs(self, ctx: StepContext) -> list[str]:
        """``results.json`` and ``results.txt``."""
        return [RESULTS_FILE, TABLE_FILE]

    def run(self, ctx: StepContext) -> StepResult:
        """Aggregate, check the claims, write the table."""
        from mas.library.lab.report.table import render_table

        results = aggregate(ctx, self.params.compare, seed=self.params.seed,
                            resamples=self.params.resamples)
        write_json(ctx.path(RESULTS_FILE), results)
        write_text(ctx.path(TABLE_FILE), render_table(results) + "\n")
        held = sum(1 for c in results["claims"] if c.get("holds") and c.get("reliable"))
        return StepResult([RESULTS_FILE, TABLE_FILE],
                          {"flavours": results["flavours"], "claims_held": held,
                           "claims": len(results["claims"])},
                          f"{len(results['flavours'])} flavour(s); "
                          f"{held}/{len(results['claims'])} claim(s) hold")
