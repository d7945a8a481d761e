"""``mas-ctl run`` (a scripted session from a JSONL file) and ``mas-ctl chat`` (interactive)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from mas.runtime.cli._app import EXISTING_FILE, manifest_options, state_of
from mas.runtime.degradation import EXIT_DEGRADED
from mas.runtime.errors import ManifestError, Problem
from mas.runtime.runtime import Runtime
from mas.runtime.session import (
    STATE,
    AgentSession,
    TurnResult,
    open_session,
    record_events,
    write_transcript,
)
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


def _open(
    runtime: Runtime,
    file: Path,
    overlays: tuple[Path, ...],
    infra: Path | None,
    config: Path | None,
    agent: str | None,
    state: Path | None,
) -> AgentSession:
    manifests = load_manifest_set([file], overlays=list(overlays), infra=infra, config=config)
    return open_session(
        runtime, pick_agent(manifests, agent, str(file)), manifests, state_path=state
    )


def turn_line(session: AgentSession, result: TurnResult, seconds: float) -> str:
    """One line per turn: estimated prompt tokens vs window, history, compactions, answer."""
    request = result.request
    estimate = request.estimate if request else 0
    window = request.budget.window if request else 0
    answer = " ".join(result.answer.split())
    return (
        f"turn {session.turns:>4}  prompt~{estimate:>6}/{window} ({estimate / window:4.0%})  "
        f"history {len(session.history):>4} msg  compactions {session.compactions:>3}  "
        f"{seconds * 1000:6.0f} ms  | {answer[:70]}"
    )


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
@click.option("--quiet", is_flag=True, help="Print only the final ContextUsageView.")
@click.option(
    "--allow-degraded",
    is_flag=True,
    help=f"Exit 0 even when the session degraded (otherwise exit {EXIT_DEGRADED}).",
)
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
) -> None:
    """Run FILE's agent over the user turns of --input; write a run folder.

    A session that degraded (failed compactions, cut messages, tool loops, ...) says so
    and exits 3 unless --allow-degraded.
    """
    turns = read_turns(input_path)
    runtime = state_of(ctx).runtime
    if out is None:
        manifests = load_manifest_set([file], overlays=list(overlays), infra=infra, config=config)
        name = pick_agent(manifests, agent, str(file)).agent.metadata.name
        out = Path("runs") / name / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    session = _open(runtime, file, overlays, infra, config, agent, out / STATE)
    close = record_events(runtime, out, lambda: session.session_id)
    error = None
    try:
        if session.turns and not quiet:
            click.echo(f"resuming {out} after turn {session.turns}")
        for text in turns[session.turns :]:
            started = time.monotonic()
            result = session.send(text)
            if not quiet:
                click.echo(turn_line(session, result, time.monotonic() - started))
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        write_transcript(out, session, error=error)
        close()
    click.echo(json.dumps(session.inspect_context().to_dict(), indent=2))
    click.echo(f"run folder: {out}")
    report_degradation(session, allow_degraded)


def report_degradation(session: AgentSession, allow: bool) -> None:
    """Print what degraded, one line per kind, and exit 3 unless ``allow``."""
    record = session.degradation
    if not record.counts:
        return
    for kind, count in sorted(record.counts.items()):
        last = record.reasons.get(kind)
        click.echo(f"{kind}: {count}" + (f" (last: {last})" if last else ""), err=True)
    if not record.degraded:
        return
    click.echo(
        f"degraded: session {session.session_id} finished, but its numbers are not the "
        "strategy's own" + ("; accepted (--allow-degraded)" if allow else ""),
        err=True,
    )
    if not allow:
        sys.exit(EXIT_DEGRADED)


@click.command("chat")
@manifest_options(many=False)
@click.option(
    "--state",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Session file to resume and save.",
)
@click.pass_context
def chat_command(
    ctx: click.Context,
    file: Path,
    overlays: tuple[Path, ...],
    infra: Path | None,
    config: Path | None,
    agent: str | None,
    state: Path | None,
) -> None:
    """Talk to FILE's agent. Commands: /inspect prints the context usage, /exit quits."""
    session = _open(state_of(ctx).runtime, file, overlays, infra, config, agent, state)
    click.echo(
        f"{session.agent_name} on {session.engine.model} "
        f"(session {session.session_id}); /exit to quit"
    )
    while True:
        try:
            text = click.prompt("you", prompt_suffix="> ")
        except (EOFError, click.Abort):
            break
        if text.strip() == "/exit":
            break
        if text.strip() == "/inspect":
            click.echo(json.dumps(session.inspect_context().to_dict(), indent=2))
            continue
        click.echo(f"{session.agent_name}> {session.send(text).answer}")
