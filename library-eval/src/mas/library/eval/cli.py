"""``mas-ctl eval``: score stored session runs; never re-runs an agent.

    mas-ctl eval SOURCE [--metric ID]... [--model M] [--infra FILE] [--recursive] [--json]
                [--overwrite]
    mas-ctl eval --list-metrics
"""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import ValidationError

from mas.library.eval.mce.config import EvalConfig
from mas.library.eval.mce.judge_model import judge_scope, load_experiment
from mas.library.eval.mce.runner import EvalReport, evaluate_runs, runs_summary
from mas.library.eval.metrics.select import bind_metrics, catalog
from mas.library.eval.output import MetricsFile
from mas.library.eval.run import find_runs, load_run
from mas.runtime.cli._app import handle_errors, state_of
from mas.runtime.cli._otel import (
    lost_spans_line,
    otel_option,
    start_command_tracing,
    stop_command_tracing,
)
from mas.runtime.degradation import EXIT_DEGRADED
from mas.runtime.errors import ManifestError, MasError, Problem
from mas.runtime.protocols import ChatEngine
from mas.runtime.runtime import Runtime
from mas.runtime.spec.loader import load_manifest_set
from mas.runtime.spec.manifests import Infra
from mas.runtime.spec.problems import problems_from_validation
from mas.runtime.spec.yaml_io import read_yaml_documents

if TYPE_CHECKING:
    from mas.runtime.otel import Tracing

EXIT_RUN_FAILED = 1


def make_engine(runtime: Runtime, infra: Infra | None = None) -> ChatEngine:
    """The engine judge calls go through (the kernel's engine over LiteLLM), reaching
    models the way ``infra`` says (endpoint, key, pricing, mappings, cache) when given."""
    from mas.runtime.session import infra_engine

    return infra_engine(runtime, infra, session_id="mas-ctl-eval")


@click.command("eval")
@click.argument("source", required=False, type=click.Path(path_type=Path))
@click.option("--metric", "-m", "metrics", multiple=True, metavar="ID",
              help="Metric id or alias (repeatable); default: every ready-made metric.")
@click.option("--prompt-metric", "prompt_metrics", multiple=True, metavar="ID=PROMPT",
              help="Inline binary judge metric (repeatable).")
@click.option("--model", help="Judge model; wins over every field of the chain (source override).")
@click.option("--panel", multiple=True, metavar="MODEL", help="Another judge model (repeatable).")
@click.option("--samples", type=click.IntRange(min=1), help="Votes per judge model and metric.")
@click.option("--backend", type=click.Choice(["auto", "native", "mce"]),
              help="Who computes the stock judge ids: MCE's own metric classes in the "
                   ".venv-mce worker (mce), mas-lab's rubrics (native), or auto (default: "
                   "$MAS_EVAL_BACKEND, else mce when .venv-mce is found, else native).")
@click.option("--eval-config", "eval_config", type=click.Path(exists=True, path_type=Path),
              help="YAML file holding an eval_mce config block; flags override it.")
@click.option("--experiment", type=click.Path(exists=True, path_type=Path),
              help="Experiment file whose fields fill the judge model chain.")
@click.option("--infra", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Infra manifest judge calls go through (endpoint, key, pricing, cache).")
@click.option("--recursive", "-r", is_flag=True, help="Score every run folder below SOURCE.")
@click.option("--overwrite", is_flag=True, help="Re-score ids already in metrics.json.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report.")
@click.option("--allow-degraded", is_flag=True,
              help=f"Exit 0 even when metrics went unscored (otherwise exit {EXIT_DEGRADED}).")
@click.option("--list-metrics", is_flag=True, help="List metric ids, aliases, what each judges.")
@otel_option
@click.pass_context
def eval_command(ctx: click.Context, source: Path | None, metrics: tuple[str, ...],
                 prompt_metrics: tuple[str, ...], model: str | None, panel: tuple[str, ...],
                 samples: int | None, eval_config: Path | None, experiment: Path | None,
                 infra: Path | None, recursive: bool, overwrite: bool, as_json: bool,
                 list_metrics: bool, backend: str | None = None,
                 allow_degraded: bool = False, otel: bool = False) -> None:
    """Score session run folders: judge metrics (MCE ids) and computed ones -> metrics.json."""
    verbose = bool(ctx.find_root().params.get("verbose"))
    with handle_errors(verbose):
        runtime = state_of(ctx).runtime
        if list_metrics:
            _print_catalog(runtime, as_json)
            return
        if source is None:
            raise click.UsageError("missing argument SOURCE (a run folder or, with "
                                   "--recursive, a tree of them)")
        config = _config(eval_config, metrics, prompt_metrics, panel, samples, overwrite)
        if backend:
            config = config.model_copy(update={"backend": backend})
        bound = bind_metrics(runtime, config.metrics, config.prompt_metrics,
                             source=str(eval_config or "<command line>"))
        runs = find_runs(source, recursive=recursive)
        manifests = load_experiment(experiment) if experiment else load_manifest_set([])
        # --model is the caller's own reference: it wins over all nine steps (docs/models.md).
        scope = replace(judge_scope(config, manifests), override=model)
        needs_judge = any(metric.kind == "judge" for metric in bound)
        # The same Infra resolution as run and lab run: --infra, else the experiment's own
        # (an Infra document among its applications), so transcripts go only where the
        # user said.
        infra_doc = load_manifest_set([], infra=infra).infra if infra else manifests.infra
        engine = make_engine(runtime, infra_doc) if needs_judge else None
        tracing = start_command_tracing(runtime, otel)
        try:
            with ExitStack() as stack:
                if tracing is not None:
                    # The judge calls made while scoring are children of this span.
                    stack.enter_context(tracing.span("mas-ctl eval", attributes={
                        "mas.eval.source": str(source), "mas.eval.backend": config.backend}))
                report = evaluate_runs(runtime, runs, config, engine=engine, scope=scope,
                                       metrics=bound)
                if tracing is not None:
                    trace_report(tracing, report)
        finally:
            lost = stop_command_tracing(tracing)
        _print_report(report, as_json)
        if any(outcome.status == "failed" for outcome in report.runs):
            sys.exit(EXIT_RUN_FAILED)
        # Scores before and after a plugin's fault came from other plugins; an unscored
        # metric (every judge vote failed: a dead endpoint) is no score at all.
        lines = [*runtime.faults, *_unscored_lines(report),
                 *([lost_spans_line(lost)] if lost else [])]
        accepted = "; accepted (--allow-degraded)" if allow_degraded else ""
        for line in lines:
            click.echo(f"degraded: {line}{accepted}", err=True)
        if lines and not allow_degraded:
            sys.exit(EXIT_DEGRADED)


def trace_report(tracing: Tracing, report: EvalReport) -> None:
    """One span per scored run under the current (``mas-ctl eval``) span, and one
    EVALUATOR span per metric under it with its value and status."""
    for outcome in report.runs:
        try:
            record = MetricsFile.read(load_run(outcome.path))
        except MasError:
            record = None  # a failed folder: its span says so, with no metrics
        session = record.session_id if record is not None else outcome.path.name
        with tracing.span(f"mas.eval.run {session}", attributes={
                "session.id": session, "mas.eval.status": outcome.status}):
            for metric_id in outcome.scored:
                metric = (record.metrics.get(metric_id) if record is not None else None) or {}
                attributes: dict[str, str | float] = {
                    "mas.eval.metric": metric_id,
                    "mas.eval.status": str(metric.get("status") or "unscored"),
                    "mas.eval.backend": str((metric.get("detail") or {}).get("backend")
                                            or "native"),
                }
                if isinstance(metric.get("value"), (int, float)):
                    attributes["mas.eval.value"] = float(metric["value"])
                with tracing.span(f"mas.eval.metric {metric_id}", "EVALUATOR", attributes):
                    pass


def _unscored_lines(report: EvalReport) -> list[str]:
    # One line per run folder whose metrics.json holds unscored ids (run_quality partial
    # or unscored), with the first reason; a rerun retries those ids.
    lines = []
    for outcome in report.runs:
        errors = outcome.quality.get("errors", []) if outcome.status != "failed" else []
        if errors:
            lines.append(f"{outcome.path}: {len(errors)} metric(s) unscored "
                         f"(run_quality={outcome.quality.get('status')}; first: {errors[0]})")
    return lines


def _config(path: Path | None, metrics: tuple[str, ...], prompt_metrics: tuple[str, ...],
            panel: tuple[str, ...], samples: int | None, overwrite: bool) -> EvalConfig:
    source = str(path) if path else "<command line>"
    raw: dict[str, Any] = {}
    if path is not None:
        documents = read_yaml_documents(path)
        loaded = documents[0] if documents else None
        if not isinstance(loaded, dict):
            raise ManifestError([Problem(source, "", "must hold a mapping (an eval_mce config "
                                         "block)", loaded, True)])
        raw = dict(loaded)
    if metrics:
        raw["metrics"] = list(metrics)
    if prompt_metrics:
        raw["prompt_metrics"] = [*raw.get("prompt_metrics", []),
                                 *(_prompt_metric(text) for text in prompt_metrics)]
    overrides = {"panel": list(panel) or None, "samples": samples,
                 "overwrite": overwrite or None}
    raw.update({key: value for key, value in overrides.items() if value is not None})
    try:
        return EvalConfig.model_validate(raw)
    except ValidationError as exc:
        raise ManifestError(problems_from_validation(exc, source, model=EvalConfig)) from None


def _prompt_metric(text: str) -> dict[str, str]:
    metric_id, sep, prompt = text.partition("=")
    if not sep or not metric_id.strip():
        raise click.BadParameter(f"expected ID=PROMPT (got {text!r})", param_hint="--prompt-metric")
    return {"id": metric_id.strip(), "prompt": prompt}


def _print_catalog(runtime: Runtime, as_json: bool) -> None:
    entries = catalog(runtime)
    if as_json:
        click.echo(json.dumps([asdict(entry) for entry in entries], indent=2))
        return
    for entry in entries:
        aliases = ", ".join(dict.fromkeys((entry.name, *entry.aliases)))
        click.echo(f"{entry.id:<28} {entry.kind:<9} {entry.description}")
        click.echo(f"{'':<28} names: {aliases}; inputs: {', '.join(entry.inputs)}")
    click.echo("inline: prompt_metrics entries (id, prompt, unit, evidence) or "
               "--prompt-metric ID=PROMPT")


def _print_report(report: EvalReport, as_json: bool) -> None:
    if as_json:
        runs = [{"path": str(o.path), "status": o.status, "scored": o.scored,
                 "run_quality": o.quality, "error": o.error} for o in report.runs]
        click.echo(json.dumps({"metadata": report.metadata, "runs": runs}, indent=2))
        return
    meta = report.metadata
    if meta.get("judge_model"):
        click.echo(f"judge model={meta['judge_model']} source={meta['judge_model_source']}")
    if meta.get("mce_version"):
        click.echo(f"backend mce: metrics-computation-engine {meta['mce_version']}, "
                   f"mce-metrics-plugin {meta['mce_versions'].get('mce-metrics-plugin')}")
    elif meta.get("judge_error"):
        click.echo(meta["judge_error"], err=True)
    for outcome in report.runs:
        if outcome.status == "failed":
            click.echo(f"failed   {outcome.path}: {outcome.error}", err=True)
            continue
        status = outcome.quality.get("status", "?")
        what = {"scored": f"{len(outcome.scored)} metric(s)",
                "unscored": f"{len(outcome.scored)} metric(s), none got a value",
                "skipped": "already scored (--overwrite to re-score)"}[outcome.status]
        click.echo(f"{outcome.status:<8} {outcome.path}: {what}, run_quality={status}")
        for error in outcome.quality.get("errors", []) if outcome.scored else []:
            click.echo(f"         unscored {error}")
    click.echo(runs_summary(meta))
