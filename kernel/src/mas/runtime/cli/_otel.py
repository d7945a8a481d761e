"""``--otel`` for the commands that run sessions: export their spans (docs/otel.md)."""

from __future__ import annotations

from collections.abc import Callable

import click

from mas.runtime.otel import (
    INSTALL_HINT,
    OtelMissingError,
    TraceSettingError,
    settings_from,
    start_tracing,
)
from mas.runtime.runtime import Runtime
from mas.runtime.session import AgentSession

otel_option = click.option(
    "--otel",
    is_flag=True,
    help="Export OpenTelemetry traces over OTLP/HTTP (also on when OTEL_EXPORTER_OTLP_"
    "ENDPOINT or OTEL_TRACES_EXPORTER is set; needs mas-runtime[otel]).",
)


def trace_session(runtime: Runtime, flag: bool, session: AgentSession) -> Callable[[], int]:
    """Start tracing ``session``'s runtime when asked to; returns the function that stops it.

    Stopping flushes the exporters, prints one line per destination on stderr (how many
    spans went out, how many failed) and returns how many spans were lost, which the
    command reports as degradation (exit 3). With ``--otel`` a missing extra is an error
    (exit 2); asked only by ``OTEL_*`` variables, it is a warning and the run goes on.

    :raises TraceSettingError: an ``OTEL_*`` variable this exporter cannot honour.
    :raises OtelMissingError: ``--otel`` without the ``otel`` extra installed.
    """
    settings = settings_from(flag)
    if not settings.enabled:
        return lambda: 0
    try:
        tracing = start_tracing(
            runtime,
            settings,
            agent_name=session.agent_name,
            turn_messages=lambda _sid, count: session.transcript[-count:] if count else [],
        )
    except OtelMissingError:
        if flag:
            raise
        click.echo(
            f"warning: {settings.because} is set, but no traces are exported: OpenTelemetry "
            f"is not installed ({INSTALL_HINT})",
            err=True,
        )
        return lambda: 0

    def stop() -> int:
        for line in tracing.close():
            click.echo(line, err=True)
        return tracing.failed

    return stop


def warn_untraced(command: str) -> None:
    """Warn on stderr when ``OTEL_*`` variables ask for traces ``command`` does not export.

    Only ``run`` and ``chat`` trace; a user who set the variables for a lab campaign
    would otherwise believe its sessions went to the collector.
    """
    try:
        settings = settings_from(False)
    except TraceSettingError:
        because = "an OTEL_* variable"
    else:
        if not settings.enabled:
            return
        because = settings.because
    click.echo(f"warning: {because} is set, but mas-ctl {command} exports no traces "
               "(only run and chat do; docs/otel.md)", err=True)
