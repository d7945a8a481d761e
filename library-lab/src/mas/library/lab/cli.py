"""``mas-ctl lab``: run an experiment, re-report a run folder, list runs.

    mas-ctl lab run EXPERIMENT.yaml [--flavour F]... [--limit N] [--model M]
                    [--max-concurrency N] [--overwrite] [--new] [--runs-dir DIR]
                    [--backend local|ray] [--address ADDR]
    mas-ctl lab report RUN_DIR
    mas-ctl lab ls [--runs-dir DIR]

Each takes ``--json``: one JSON document on stdout instead of the table or listing;
progress, failures and degradation stay on stderr and the exit codes do not change.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from mas.library.lab.lab import LabOutcome, report_run, run_experiment
from mas.library.lab.report.table import render_table
from mas.library.lab.rundir import RunFolder, list_runs, read_json
from mas.library.lab.sessions import default_session_function
from mas.library.lab.steps import (
    REPORT_FILE,
    RESULT_FILE,
    RESULTS_FILE,
    SESSIONS_FILE,
    TABLE_FILE,
)
from mas.library.lab.steps.degraded import degraded_lines
from mas.library.lab.tracing import TracedSessions
from mas.runtime.cli._app import JSON_OPTION, handle_errors, problems_as_json, state_of
from mas.runtime.cli._otel import (
    lost_spans_line,
    otel_option,
    start_command_tracing,
    stop_command_tracing,
)
from mas.runtime.cli.view_text import WIDTH, fold
from mas.runtime.degradation import EXIT_DEGRADED

EXIT_STEP_FAILED = 1


@click.group("lab")
def lab_group() -> None:
    """Compare context strategies on a dataset: run experiments and report on them."""


def _verbose(ctx: click.Context) -> bool:
    return bool(ctx.find_root().params.get("verbose"))


def _finish(outcome: LabOutcome, allow_degraded: bool = False, as_json: bool = False,
            faults: Sequence[str] = ()) -> None:
    """Print the table (or the JSON document) and exit as the run went.

    :param faults: plugins this process left out while the run went
        (:attr:`Runtime.faults <mas.runtime.runtime.Runtime.faults>`); they degrade it.
    """
    table = outcome.run.path / TABLE_FILE
    report = outcome.run.path / REPORT_FILE
    if as_json:
        click.echo(json.dumps(outcome_document(outcome), indent=2))
    else:
        # What a failed step did not rewrite is an earlier pass's, and says so.
        earlier_table = not outcome.vouches_for(RESULTS_FILE)
        earlier_report = not outcome.vouches_for(REPORT_FILE)
        results = read_json(outcome.run.path / RESULTS_FILE, None)
        if (results or table.is_file()) and earlier_table:
            click.echo(f"from an earlier pass (this one did not rewrite {RESULTS_FILE}):")
        if results:
            click.echo(render_table(results, WIDTH))
        elif table.is_file():
            click.echo(table.read_text(encoding="utf-8").rstrip())
        result = outcome.run.path / RESULT_FILE
        if result.is_file() and result.read_text(encoding="utf-8").strip():
            click.echo("result (from an earlier pass):" if earlier_report else "result:")
            for line in result.read_text(encoding="utf-8").splitlines():
                click.echo(fold(line, first="  ", rest="    "))
        if report.is_file():
            click.echo(f"report: {report}" + (" (from an earlier pass)" if earlier_report else ""))
            click.echo("  open it in a browser: the table, the plots, a timeline page per session")
    if not outcome.ok:
        failed = [f"{r.name} ({r.status})" for r in outcome.records.values()
                  if r.status in ("failed", "blocked")]
        click.echo(f"error: step(s) did not finish: {', '.join(failed)}", err=True)
        sys.exit(EXIT_STEP_FAILED)
    index = read_json(outcome.run.path / SESSIONS_FILE, {}) or {}
    if index.get("failed"):
        click.echo(f"error: {index['failed']} of {len(index.get('sessions') or [])} sessions "
                   "failed and are left out of the table and claims (see sessions.json); run "
                   "the same command again to retry them", err=True)
        sys.exit(EXIT_STEP_FAILED)
    lines = degraded_lines(index, read_json(outcome.run.path / RESULTS_FILE, {}))
    lines += [f"degraded: {fault}" for fault in faults]
    for line in lines:
        click.echo(line, err=True)
    if lines and not allow_degraded:
        click.echo("the table above holds degraded sessions; claims over them are unreliable "
                   f"(exit {EXIT_DEGRADED}; --allow-degraded accepts)", err=True)
        sys.exit(EXIT_DEGRADED)


def outcome_document(outcome: LabOutcome) -> dict[str, Any]:
    """``lab run --json`` / ``lab report --json``: the run, each step's status, results."""
    report = outcome.run.path / REPORT_FILE
    return {
        "run": str(outcome.run.path),
        "resumed": outcome.resumed,
        "ok": outcome.ok,
        "steps": {name: record.status for name, record in outcome.records.items()},
        "results": read_json(outcome.run.path / RESULTS_FILE, None),
        "report": str(report) if report.is_file() else None,
        "from_earlier_pass": [name for name in (RESULTS_FILE, REPORT_FILE)
                              if (outcome.run.path / name).is_file()
                              and not outcome.vouches_for(name)],
    }


_ALLOW_DEGRADED = click.option(
    "--allow-degraded", is_flag=True,
    help=f"Exit 0 even when sessions degraded (otherwise exit {EXIT_DEGRADED}).")


@lab_group.command("run")
@click.argument("experiment", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--flavour", "flavours", multiple=True, metavar="F",
              help="Only this flavour (repeatable).")
@click.option("--limit", type=int, help="Only the first N dataset items.")
@click.option("--dataset", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="Read this file instead of experiment.dataset's (same format and options).")
@click.option("--model", help="Fill experiment.models.main with this model.")
@click.option("--max-concurrency", type=int, default=2, show_default=True,
              help="Sessions in flight.")
@click.option("--backend", type=click.Choice(["local", "ray"]), default=None,
              help="Where sessions run: threads here, or Ray tasks  [default: "
                   "experiment.runner.backend, else local]")
@click.option("--address", metavar="ADDR",
              help="Ray cluster to join (auto, host:port, ray://host:port); unset: "
                   "experiment.runner.address, else a Ray instance started here.")
@_ALLOW_DEGRADED
@JSON_OPTION
@click.option("--overwrite", is_flag=True, help="Redo sessions and steps whose outputs exist.")
@click.option("--new", is_flag=True, help="Start a new run folder instead of resuming.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"),
              show_default=True, help="Where run folders go.")
@click.option("--config", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Local config.yaml (defaults.model).")
@otel_option
@click.pass_context
def run_command(ctx: click.Context, experiment: Path, flavours: tuple[str, ...], limit: int | None,
                dataset: Path | None, model: str | None, max_concurrency: int, backend: str | None,
                address: str | None, allow_degraded: bool, overwrite: bool, new: bool,
                runs_dir: Path, config: Path | None, as_json: bool, otel: bool = False) -> None:
    """Run EXPERIMENT (or resume its latest run with the same inputs); print the table."""
    runtime = state_of(ctx).runtime
    with handle_errors(_verbose(ctx)), problems_as_json(as_json):
        tracing = start_command_tracing(runtime, otel)
        try:
            with ExitStack() as stack:
                session_function = None
                if tracing is not None:
                    # The run is the parent span; each session is one span under it.
                    stack.enter_context(tracing.span(
                        "mas-ctl lab run", attributes={"mas.lab.experiment": str(experiment)}))
                    session_function = TracedSessions(default_session_function(), tracing)
                outcome = run_experiment(
                    runtime, experiment, flavours=flavours, limit=limit, model=model,
                    max_concurrency=max_concurrency, overwrite=overwrite, new=new,
                    runs_root=runs_dir, config=config, stream=sys.stderr, backend=backend,
                    address=address, dataset=dataset, session_function=session_function,
                )
        finally:
            lost = stop_command_tracing(tracing)
    _finish(outcome, allow_degraded, as_json,
            [*runtime.faults, *([lost_spans_line(lost)] if lost else [])])


@lab_group.command("report")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_ALLOW_DEGRADED
@JSON_OPTION
@click.pass_context
def report_command(ctx: click.Context, run_dir: Path, allow_degraded: bool, as_json: bool) -> None:
    """Redo trajectories, results and report.html of RUN_DIR; print the table."""
    with handle_errors(_verbose(ctx)), problems_as_json(as_json):
        outcome = report_run(state_of(ctx).runtime, run_dir, stream=sys.stderr)
    _finish(outcome, allow_degraded, as_json)


@lab_group.command("ls")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"),
              show_default=True, help="Where run folders are.")
@JSON_OPTION
def ls_command(runs_dir: Path, as_json: bool) -> None:
    """List lab run folders: experiment, created, status, sessions, flavours."""
    rows = [_run_row(run) for run in list_runs(runs_dir)]
    if as_json:
        click.echo(json.dumps({"runs_dir": str(runs_dir), "runs": rows}, indent=2))
        return
    if not rows:
        click.echo(f"no lab runs under {runs_dir}")
        return
    for row in rows:
        click.echo(f"{row['path']}  {row['created']}  {row['status']:<10}  "
                   f"sessions {row['sessions']}/{row['expected']} ({row['failed']} failed)  "
                   f"flavours: {', '.join(row['flavours'])}")


def _run_row(run: RunFolder) -> dict[str, Any]:
    info = run.info
    sessions = read_json(run.path / SESSIONS_FILE, {}) or {}
    rows = sessions.get("sessions") or []
    flavours = list(info.get("flavours") or [])
    return {
        "path": str(run.path),
        "experiment": info.get("experiment"),
        "created": info.get("created", "?"),
        "status": "finished" if run.finished() else "unfinished",
        "sessions": len(rows) or sum(1 for _ in run.path.glob("sessions/*/*/*/transcript.json")),
        "expected": len(flavours) * len(info.get("items") or []) * int(info.get("n_runs") or 1),
        "failed": sessions.get("failed", 0),
        "flavours": flavours,
    }
