"""Installing the exporter: a tracer provider, its exporters, the observer on a runtime.

No global state: the provider belongs to the returned :class:`Tracing`, not to
OpenTelemetry's global tracer provider, so two runtimes in one process trace apart.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import importlib_metadata
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import Span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from mas.runtime.otel._spans import AttributeValue, GenAiSpans, TurnMessages, kind
from mas.runtime.otel.config import TraceSettings
from mas.runtime.runtime import Runtime

SERVICE_NAME = "mas-lab"
"""``service.name`` unless ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` say otherwise."""


class CountingExporter(SpanExporter):
    """Wraps an exporter and counts the spans it exported and the ones it failed to.

    :param inner: the exporter doing the work.
    :param name: how the summary names the destination (an endpoint, ``console``).
    """

    def __init__(self, inner: SpanExporter, name: str) -> None:
        self.inner = inner
        self.name = name
        self.exported = 0
        self.failed = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export through the inner exporter; an exception counts as a failed batch."""
        try:
            result = self.inner.export(spans)
        except Exception:  # an exporter bug must not end the run: it is counted instead
            result = SpanExportResult.FAILURE
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.exported += len(spans)
            else:
                self.failed += len(spans)
        return result

    def shutdown(self) -> None:
        """Shut the inner exporter down."""
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Flush the inner exporter."""
        return self.inner.force_flush(timeout_millis)


class Tracing:
    """Tracing installed on a runtime; :meth:`close` flushes and reports.

    :param observer: the event listener building spans.
    :param provider: the tracer provider owning the exporters.
    :param exporters: the counting wrappers, one per destination.
    :param remove: takes the observer off the runtime.
    :param settings: what it was started with (another process traces with the same).
    """

    def __init__(
        self,
        observer: GenAiSpans,
        provider: TracerProvider,
        exporters: list[CountingExporter],
        remove: Callable[[], None],
        settings: TraceSettings | None = None,
    ) -> None:
        self.settings = settings or TraceSettings(True, "start_tracing")
        self.observer = observer
        self.provider = provider
        self.exporters = exporters
        self._remove: Callable[[], None] | None = remove

    @contextmanager
    def span(self, name: str, span_kind: str = "CHAIN",
             attributes: Mapping[str, AttributeValue] | None = None) -> Iterator[Span]:
        """A span of the caller's own (a lab run, an eval, one metric), current while the
        block runs, so the spans made inside it (sessions, judge calls) are its children.

        :param span_kind: the OpenInference kind (:data:`~mas.runtime.otel._spans.
            SPAN_KINDS`): Phoenix and Langfuse classify the span by it.
        """
        tracer = self.observer.tracer
        with tracer.start_as_current_span(name, attributes={**kind(span_kind),
                                                            **(attributes or {})}) as span:
            yield span

    def traceparent(self) -> str | None:
        """The W3C ``traceparent`` of the current span, to hand to another process (a Ray
        worker) whose sessions go under it; ``None`` outside any span."""
        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier)
        return carrier.get("traceparent")

    @contextmanager
    def session(self, session_id: str, traceparent: str | None = None,
                attributes: Mapping[str, AttributeValue] | None = None) -> Iterator[None]:
        """``session_id``'s turns as one ``mas.session`` span, under ``traceparent`` (else
        the current span), current while the block runs (copies of the session, such as
        a lab's isolated probes, go under it); its spans are ended when the block leaves,
        failed if it raised."""
        parent = (TraceContextTextMapPropagator().extract({"traceparent": traceparent})
                  if traceparent else None)
        span = self.observer.open_session(session_id, parent, attributes)
        error: str | None = None
        try:
            with trace.use_span(span, end_on_exit=False):
                yield
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            self.observer.close_session(session_id, error)

    def flush(self) -> None:
        """Export every ended span now (a worker process, before its task returns)."""
        self.provider.force_flush()

    @property
    def failed(self) -> int:
        """Spans that did not reach their destination, over every exporter."""
        return sum(exporter.failed for exporter in self.exporters)

    def close(self) -> list[str]:
        """Stop listening, end open spans, flush and shut down; one summary line per exporter.

        A line says how many spans went out and, when any did not, how many failed, so a
        collector that was down is reported instead of silently losing the trace.
        """
        if self._remove is None:
            return []
        self._remove()
        self._remove = None
        unfinished = self.observer.close()
        self.provider.force_flush()
        self.provider.shutdown()
        lines = []
        for exporter in self.exporters:
            line = f"otel: {exporter.exported} span(s) exported to {exporter.name}"
            if exporter.failed:
                line += f"; {exporter.failed} failed to export (degraded trace)"
            lines.append(line)
        if unfinished:
            lines.append(f"otel: {unfinished} span(s) ended unfinished (a turn did not commit)")
        return lines


def _resource(base: Mapping[str, AttributeValue] | None = None) -> Resource:
    # Resource.create reads OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES; attributes
    # passed to it override those (another process's, handed over), so the default name
    # only fills a gap. process.pid tells the spans of a driver and its workers apart.
    resource = Resource.create({k: v for k, v in (base or {}).items() if k != "process.pid"})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE_NAME}))
    return resource.merge(Resource({"process.pid": os.getpid()}))


def otlp_exporter(settings: TraceSettings) -> SpanExporter:
    """The OTLP exporter of ``settings.protocol`` (``grpc`` or ``http/protobuf``).

    Each is imported only when chosen; headers, timeout, compression and certificates
    come from the ``OTEL_EXPORTER_OTLP_*`` variables, read by the exporter itself.
    """
    if settings.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        # An http:// address is a plaintext channel (a local collector); https:// is TLS.
        return GrpcExporter(endpoint=settings.endpoint,
                            insecure=settings.endpoint.startswith("http://") or None)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpExporter,
    )

    return HttpExporter(endpoint=settings.endpoint)


def start_tracing(
    runtime: Runtime,
    settings: TraceSettings,
    *,
    agent_name: str | None = None,
    turn_messages: TurnMessages | None = None,
    exporter: SpanExporter | None = None,
    resource: Mapping[str, AttributeValue] | None = None,
) -> Tracing:
    """Listen to ``runtime``'s events and export them as spans.

    :param settings: from :func:`~mas.runtime.otel.settings_from`.
    :param agent_name: names the ``invoke_agent`` spans.
    :param turn_messages: where turn text comes from when ``settings.capture_content``.
    :param exporter: export here instead of ``settings.exporters`` (tests: an in-memory
        exporter), synchronously.
    :param resource: the resource attributes of another process's tracing (a worker
        tracing for the driver), over this process's ``OTEL_*`` variables.
    """
    provider = TracerProvider(resource=_resource(resource))
    wrapped: list[CountingExporter] = []
    if exporter is not None:
        wrapped.append(CountingExporter(exporter, type(exporter).__name__))
        provider.add_span_processor(SimpleSpanProcessor(wrapped[-1]))
    else:
        for name in settings.exporters:
            if name == "console":
                # stderr: stdout is the command's own output (`--json` is one document).
                wrapped.append(CountingExporter(ConsoleSpanExporter(out=sys.stderr), "console"))
                provider.add_span_processor(SimpleSpanProcessor(wrapped[-1]))
            else:
                wrapped.append(CountingExporter(otlp_exporter(settings), settings.endpoint))
                provider.add_span_processor(BatchSpanProcessor(wrapped[-1]))
    tracer = provider.get_tracer("mas.runtime.otel", importlib_metadata.version("mas-runtime"))
    observer = GenAiSpans(
        tracer,
        agent_name=agent_name,
        turn_messages=turn_messages,
        capture_content=settings.capture_content,
    )
    return Tracing(observer, provider, wrapped, runtime.add_listener(observer), settings)
