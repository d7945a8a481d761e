"""``mas-ctl run``: a scripted session from a JSONL file, into a run folder.

The run-folder helpers here serve ``mas-ctl chat`` too (``chat_cmd``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import click

from mas.runtime.cli._app import (
    EXISTING_FILE,
    echo_masked,
    manifest_options,
    problems_as_json,
    state_of,
)
from mas.runtime.cli._otel import lost_spans_line, otel_option, trace_session
from mas.runtime.cli.view_text import WIDTH, fold, usage_lines
from mas.runtime.degradation import EXIT_DEGRADED
from mas.runtime.errors import ManifestError, Problem
from mas.runtime.events import Event
from mas.runtime.runtime import Runtime
from mas.runtime.session import (
    STATE,
    AgentSession,
    TurnResult,
    open_session,
    record_events,
    write_transcript,
)
from mas.runtime.session.run_folder import check_resume_input, lock_run_folder
from mas.runtime.spec.jsonl import parse_line, read_lines
from mas.runtime.spec.loader import LoadedAgent, ManifestSet, load_manifest_set


def read_turns(path: Path) -> list[str]:
    """User turns of a JSONL file: each line a JSON string or ``{"user": "..."}``.

    :raises ManifestError: one problem per bad line, with its line number.
    """
    turns: list[str] = []
    problems: list[Problem] = []
    for number, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        try:
            item = parse_line(line)
        except ValueError as exc:
            problems.append(Problem(str(path), f"line {number}", str(exc)))
            continue
        text = item.get("user") if isinstance(item, dict) else item
        if not isinstance(text, str) or not text.strip():
            problems.append(
                Problem(
                    str(path),
                    f"line {number}",
                    'expected a JSON string or {"user": "..."}',
                    item,
                    True,
                )
            )
            continue
        unknown = sorted(set(item) - {"user"}) if isinstance(item, dict) else []
        if unknown:
            # Dropped without a word it would be lost: a lab dataset's tool_results, say.
            problems.append(Problem(str(path), f"line {number}.{unknown[0]}",
                                    'unknown key; a turn here is a JSON string or '
                                    '{"user": "..."} and nothing else'))
            continue
        turns.append(text)
    if problems:
        raise ManifestError(problems)
    if not turns:
        raise ManifestError([Problem(str(path), "", "no user turns in the file")])
    return turns


def pick_agent(manifests: ManifestSet, name: str | None, source: str) -> LoadedAgent:
    """The agent to run: the only one, or the one named ``name``."""
    names = [a.agent.metadata.name for a in manifests.agents]
    if name is not None:
        for loaded in manifests.agents:
            if loaded.agent.metadata.name == name:
                return loaded
        raise ManifestError(
            [
                Problem(
                    source,
                    "--agent",
                    f"no agent named {name!r}; found: {', '.join(names) or 'none'}",
                )
            ]
        )
    if len(manifests.agents) != 1:
        raise ManifestError(
            [
                Problem(
                    source,
                    "",
                    f"expected one agent, found {len(names)} "
                    f"({', '.join(names) or 'none'}); pick one with --agent",
                )
            ]
        )
    return manifests.agents[0]


def open_in_folder(
    runtime: Runtime,
    file: Path,
    overlays: tuple[Path, ...],
    infra: Path | None,
    config: Path | None,
    agent: str | None,
    out: Path,
) -> AgentSession:
    """Open FILE's agent with its session file in run folder ``out`` (created; resumed)."""
    out.mkdir(parents=True, exist_ok=True)
    manifests = load_manifest_set([file], overlays=list(overlays), infra=infra, config=config)
    return open_session(
        runtime, pick_agent(manifests, agent, str(file)), manifests, state_path=out / STATE
    )


def default_run_folder(
    file: Path,
    overlays: tuple[Path, ...],
    infra: Path | None,
    config: Path | None,
    agent: str | None,
) -> Path:
    """``runs/<agent>/<timestamp>``: where a session goes when ``--out`` is not given."""
    manifests = load_manifest_set([file], overlays=list(overlays), infra=infra, config=config)
    name = pick_agent(manifests, agent, str(file)).agent.metadata.name
    return Path("runs") / name / time.strftime("%Y%m%d-%H%M%S")


def print_warnings(runtime: Runtime) -> Callable[[], None]:
    """Show every ``warning`` event on stderr as it happens; returns the function to stop.

    A warning (an input larger than the window, pinned content sent over the budget, an
    unknown window) would otherwise reach only events.jsonl.
    """

    seen: set[str] = set()

    def show(event: Event) -> None:
        message = str(event.data.get("message", ""))
        # A warning repeated on every turn (an unknown window) is worth reading once.
        if event.name == "warning" and message not in seen:
            seen.add(message)
            echo_masked(f"warning: {message}", err=True)

    return runtime.add_listener(show)


def turn_line(session: AgentSession, result: TurnResult, seconds: float) -> str:
    """One line per turn: estimated prompt tokens vs window, history, compactions, answer
    (the answer on lines of its own when it would run past ``WIDTH``)."""
    request = result.request
    estimate = request.estimate if request else 0
    window = request.budget.window if request else 0
    answer = " ".join(result.answer.split())
    # The share is of the window in force; when calibration scaled it, the declared one
    # stands beside it, so the two are never taken for each other.
    declared = session.settings.window
    scaled = f"; {declared:,} declared" if declared and declared != window else ""
    line = (
        f"turn {session.turns:>4}  prompt~{estimate:>6}/{window} ({estimate / window:4.0%}"
        f"{scaled})  "
        f"history {len(session.history):>4} msg  compactions {session.compactions:>3}  "
        f"{seconds * 1000:6.0f} ms  | "
    )
    if len(line) + len(answer) <= WIDTH:
        return line + answer
    # A longer answer goes under the numbers, wrapped, so no line runs past WIDTH.
    return line.rstrip(" |") + "\n" + fold(answer, first="    | ", rest="    | ")


@click.command("run")
@manifest_options(many=False)
@click.option(
    "--input", "input_path", required=True, type=EXISTING_FILE, help="JSONL of user turns."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run folder (default runs/<agent>/<timestamp>); an existing one resumes.",
)
@click.option(
    "--json",
    "--quiet",
    "quiet",
    is_flag=True,
    help="Machine-readable output: the final ContextUsageView alone, one JSON document on "
    "stdout (no turn lines; the rest on stderr; bad input as a JSON problem list).",
)
@click.option(
    "--allow-degraded",
    is_flag=True,
    help=f"Exit 0 even when the session degraded (otherwise exit {EXIT_DEGRADED}).",
)
@otel_option
@click.pass_context
def run_command(
    ctx: click.Context,
    file: Path,
    overlays: tuple[Path, ...],
    infra: Path | None,
    config: Path | None,
    agent: str | None,
    input_path: Path,
    out: Path | None,
    quiet: bool,
    allow_degraded: bool,
    otel: bool,
) -> None:
    """Run FILE's agent over the user turns of --input; write a run folder.

    A session that degraded (failed compactions, cut messages, tool loops, ...) says so
    and exits 3 unless --allow-degraded.
    """
    with problems_as_json(quiet):
        turns = read_turns(input_path)
        runtime = state_of(ctx).runtime
        out = out or default_run_folder(file, overlays, infra, config, agent)
        ctx.with_resource(lock_run_folder(out))  # released when the command ends, however
        session = open_in_folder(runtime, file, overlays, infra, config, agent, out)
        check_resume_input(session, turns, str(input_path))
    close = record_events(runtime, out, lambda: session.session_id,
                          committed_turns=session.turns)
    stop_warnings = print_warnings(runtime)
    stop_tracing = trace_session(runtime, otel, session)
    error = None
    lost_spans = 0
    try:
        if session.turns:
            echo_masked(f"resuming {out} after turn {session.turns}", err=quiet)
        for text in turns[session.turns :]:
            started = time.monotonic()
            result = session.send(text)
            if not quiet:
                echo_masked(turn_line(session, result, time.monotonic() - started))
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        stop_warnings()
        lost_spans = stop_tracing()
        write_transcript(out, session, error=error)
        close()
    view = session.inspect_context()
    document = view.to_dict()
    # With --json (--quiet) stdout is the JSON document alone, for `| jq`; the rest goes
    # to stderr. Without it the terminal gets a summary of the view and where to look next.
    if quiet:
        echo_masked(json.dumps(document, indent=2))
    lines = [] if quiet else usage_lines(document)
    lines += [*accounting_lines(view.accounting, view.identifier_check), f"run folder: {out}"]
    if not quiet:
        lines.append(f"open next: the session timeline, `mas-ctl inspect {out} --html` "
                     f"(writes {out / 'timeline.html'}); the whole view as JSON: --json")
    for line in lines:
        echo_masked(fold(line), err=quiet)
    report_degradation(session, allow_degraded, lost_spans)


def accounting_lines(
    accounting: dict[str, dict[str, int]] | None, identifiers: dict[str, int]
) -> list[str]:
    """Where the last request's committed messages went, and what the summaries kept."""
    lines = []
    if accounting:
        states = ", ".join(
            f"{name} {accounting[name]['messages']} ({accounting[name]['tokens']:,} tokens)"
            for name in ("sent", "summarized", "dropped", "cut")
        )
        lines.append(f"accounting (last request): {states}")
    if identifiers.get("identifiers"):
        lines.append(
            "identifier check: {identifiers} identifier(s) in folded turns; the summarizer "
            "kept {found}, the re-ask {repaired}, {appended} appended verbatim, "
            "{missing} missing".format(**{k: identifiers.get(k, 0) for k in (
                "identifiers", "found", "repaired", "appended", "missing")})
        )
    return lines


def report_degradation(session: AgentSession, allow: bool, lost_spans: int = 0) -> None:
    """Print what degraded, one line per kind, and exit 3 unless ``allow``.

    Besides the session's own record, two failures of the run degrade it: spans the
    trace exporter could not deliver (``lost_spans``), and plugins left out while it ran
    (:attr:`Runtime.faults <mas.runtime.runtime.Runtime.faults>`). The session's numbers
    may be intact then, but a run whose trace or plugins failed must not end like a clean
    one.
    """
    record = session.degradation
    for kind, count in sorted(record.counts.items()):
        last = record.reasons.get(kind)
        echo_masked(f"{kind}: {count}" + (f" (last: {last})" if last else ""), err=True)
    accepted = "; accepted (--allow-degraded)" if allow else ""
    failures = list(session.runtime.faults)
    if lost_spans:
        failures.append(lost_spans_line(lost_spans))
    if record.degraded:
        failures.insert(0, f"session {session.session_id} finished, but its numbers are not "
                           "the strategy's own")
    for failure in failures:
        echo_masked(f"degraded: {failure}{accepted}", err=True)
    if failures and not allow:
        sys.exit(EXIT_DEGRADED)
