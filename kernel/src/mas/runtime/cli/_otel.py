"""``--otel`` for the commands that run sessions or score them: export their spans
(docs/otel.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from mas.runtime.otel import (
    INSTALL_HINT,
    OtelMissingError,
    settings_from,
    start_tracing,
)
from mas.runtime.runtime import Runtime
from mas.runtime.session import AgentSession

if TYPE_CHECKING:
    from mas.runtime.otel import Tracing

otel_option = click.option(
    "--otel",
    is_flag=True,
    help="Export OpenTelemetry traces over OTLP (http/protobuf, or grpc with "
    "OTEL_EXPORTER_OTLP_PROTOCOL=grpc; also on when OTEL_EXPORTER_OTLP_ENDPOINT or "
    "OTEL_TRACES_EXPORTER is set; needs mas-runtime[otel]).",
)


def start_command_tracing(runtime: Runtime, flag: bool, *, agent_name: str | None = None,
                          session: AgentSession | None = None) -> Tracing | None:
    """Tracing of one command's work on ``runtime`` when asked to (``None``: not asked, or
    the extra is missing and only a variable asked: warned on stderr).

    :param session: the one session a ``run`` / ``chat`` traces: its turns' text is what
        the opt-in content puts on turn spans.
    :raises TraceSettingError: an ``OTEL_*`` variable this exporter cannot honour.
    :raises OtelMissingError: ``--otel`` without the ``otel`` extra installed.
    """
    settings = settings_from(flag)
    if not settings.enabled:
        return None
    try:
        return start_tracing(
            runtime,
            settings,
            agent_name=agent_name,
            turn_messages=(lambda _sid, count: session.transcript[-count:] if count else [])
            if session is not None else None,
        )
    except OtelMissingError:
        if flag:
            raise
        click.echo(
            f"warning: {settings.because} is set, but no traces are exported: OpenTelemetry "
            f"is not installed ({INSTALL_HINT})",
            err=True,
        )
        return None


def stop_command_tracing(tracing: Tracing | None) -> int:
    """Flush ``tracing``, print one line per destination on stderr (how many spans went
    out, how many failed) and return how many spans were lost (0 without tracing)."""
    if tracing is None:
        return 0
    for line in tracing.close():
        click.echo(line, err=True)
    return tracing.failed


def lost_spans_line(lost: int) -> str:
    """The degradation line of a command whose trace lost ``lost`` spans."""
    return f"{lost} span(s) of the trace were not exported"


def trace_session(runtime: Runtime, flag: bool, session: AgentSession) -> Callable[[], int]:
    """Start tracing ``session``'s runtime when asked to; returns the function that stops it.

    Stopping flushes the exporters, prints one line per destination on stderr (how many
    spans went out, how many failed) and returns how many spans were lost, which the
    command reports as degradation (exit 3). With ``--otel`` a missing extra is an error
    (exit 2); asked only by ``OTEL_*`` variables, it is a warning and the run goes on.

    :raises TraceSettingError: an ``OTEL_*`` variable this exporter cannot honour.
    :raises OtelMissingError: ``--otel`` without the ``otel`` extra installed.
    """
    tracing = start_command_tracing(runtime, flag, agent_name=session.agent_name,
                                    session=session)
    return lambda: stop_command_tracing(tracing)
