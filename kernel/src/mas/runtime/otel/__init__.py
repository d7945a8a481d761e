"""OpenTelemetry traces of sessions, by the GenAI semantic conventions (docs/otel.md).

An optional extra: ``pip install 'mas-runtime[otel]'``. Tracing is an event listener over
the runtime's existing events, so the kernel's hot path never imports OpenTelemetry;
importing this package does not either — only :func:`start_tracing` does::

    from mas.runtime.otel import settings_from, start_tracing

    settings = settings_from(flag=True)            # or OTEL_* variables alone
    tracing = start_tracing(runtime, settings, agent_name="helper")
    ...                                            # run sessions on ``runtime``
    for line in tracing.close():                   # flush; how many spans went out
        print(line)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mas.runtime.errors import MasError
from mas.runtime.otel.config import (
    CAPTURE_CONTENT,
    DEFAULT_ENDPOINT,
    TraceSettingError,
    TraceSettings,
    settings_from,
)

if TYPE_CHECKING:
    from mas.runtime.otel._setup import Tracing as Tracing

INSTALL_HINT = "pip install 'mas-runtime[otel]'"


class OtelMissingError(MasError):
    """Tracing was asked for and the OpenTelemetry packages are not installed."""


def start_tracing(*args: Any, **kwargs: Any) -> Tracing:
    """:func:`mas.runtime.otel._setup.start_tracing`, importing OpenTelemetry only now.

    :raises OtelMissingError: the ``otel`` extra is not installed; says how to install it.
    """
    try:
        from mas.runtime.otel._setup import start_tracing as start
    except ImportError as exc:
        raise OtelMissingError(
            f"tracing needs the OpenTelemetry SDK and OTLP exporter ({exc.name} is missing); "
            f"{INSTALL_HINT}"
        ) from exc
    return start(*args, **kwargs)


__all__ = [
    "CAPTURE_CONTENT",
    "DEFAULT_ENDPOINT",
    "INSTALL_HINT",
    "OtelMissingError",
    "TraceSettingError",
    "TraceSettings",
    "settings_from",
    "start_tracing",
]
