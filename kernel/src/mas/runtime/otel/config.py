"""Whether and how to trace: the ``--otel`` flag and the standard ``OTEL_*`` variables.

Reading the settings imports nothing from OpenTelemetry, so commands can decide before
paying for the import (or finding the extra missing).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from mas.runtime.errors import MasError

CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The variable OpenTelemetry's GenAI instrumentations read to opt in to message text."""

DEFAULT_ENDPOINT = "http://localhost:4318/v1/traces"
"""Where OTLP/HTTP traces go when no endpoint variable is set (the collector default)."""

DEFAULT_GRPC_ENDPOINT = "http://localhost:4317"
"""Where OTLP/gRPC traces go when no endpoint variable is set (the collector default)."""

PROTOCOLS = ("http/protobuf", "grpc")
"""Values of ``OTEL_EXPORTER_OTLP_PROTOCOL`` the ``otel`` extra ships an exporter for."""

_ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
_PROTOCOL_VARS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
EXPORTERS = ("otlp", "console")
"""Values of ``OTEL_TRACES_EXPORTER`` this kernel can honour (``none`` turns tracing off)."""


class TraceSettingError(MasError, ValueError):
    """An ``OTEL_*`` variable has a value this exporter cannot honour; names it."""


@dataclass(frozen=True)
class TraceSettings:
    """What the tracing of one command does.

    :ivar enabled: whether spans are exported at all.
    :ivar because: what turned tracing on or off (``--otel``, a variable name, ``default``).
    :ivar exporters: ``otlp`` and/or ``console``.
    :ivar endpoint: the OTLP traces URL (``/v1/traces`` over HTTP; the collector's
        address over gRPC).
    :ivar capture_content: put message text on turn and model-call spans (off unless
        opted in).
    :ivar protocol: the OTLP transport, one of :data:`PROTOCOLS`.
    """

    enabled: bool
    because: str
    exporters: tuple[str, ...] = ("otlp",)
    endpoint: str = DEFAULT_ENDPOINT
    capture_content: bool = False
    protocol: str = "http/protobuf"


def settings_from(flag: bool, environ: Mapping[str, str] | None = None) -> TraceSettings:
    """Decide from ``--otel`` and the environment (``os.environ`` by default).

    Tracing is on with ``--otel``, with ``OTEL_TRACES_EXPORTER`` set to ``otlp`` or
    ``console``, or with an OTLP endpoint variable set; ``OTEL_SDK_DISABLED=true`` and
    ``OTEL_TRACES_EXPORTER=none`` turn it off, whatever else says.

    :raises TraceSettingError: an exporter or protocol this kernel does not ship.
    """
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return TraceSettings(False, "OTEL_SDK_DISABLED")
    named = [v.strip().lower() for v in env.get("OTEL_TRACES_EXPORTER", "").split(",") if v.strip()]
    if "none" in named:
        return TraceSettings(False, "OTEL_TRACES_EXPORTER")
    unknown = [v for v in named if v not in EXPORTERS]
    if unknown:
        raise TraceSettingError(
            f"OTEL_TRACES_EXPORTER: unsupported exporter {unknown[0]!r}; "
            f"expected {', '.join(EXPORTERS)} or none"
        )
    protocol = "http/protobuf"
    # The signal's own variable wins over the generic one, as the OTLP exporter spec says.
    for name in reversed(_PROTOCOL_VARS):
        value = env.get(name, "").strip()
        if value and value not in PROTOCOLS:
            raise TraceSettingError(
                f"{name}: {value!r} is not supported; expected {' or '.join(PROTOCOLS)} "
                "(the exporters mas-runtime[otel] ships)"
            )
        protocol = value or protocol
    endpoint_var = next((name for name in _ENDPOINT_VARS if env.get(name, "").strip()), None)
    endpoint = DEFAULT_GRPC_ENDPOINT if protocol == "grpc" else DEFAULT_ENDPOINT
    if endpoint_var is not None:
        endpoint = env[endpoint_var].strip()
        if endpoint_var == "OTEL_EXPORTER_OTLP_ENDPOINT" and protocol != "grpc":
            # The generic variable names the collector; HTTP traces go to its /v1/traces
            # path (a gRPC endpoint is the collector's address as it is).
            endpoint = endpoint.rstrip("/") + "/v1/traces"
    because = "--otel" if flag else ("OTEL_TRACES_EXPORTER" if named else endpoint_var)
    return TraceSettings(
        enabled=because is not None,
        because=because or "default",
        exporters=tuple(named) or ("otlp",),
        endpoint=endpoint,
        capture_content=because is not None
        and env.get(CAPTURE_CONTENT, "").strip().lower() == "true",
        protocol=protocol,
    )
