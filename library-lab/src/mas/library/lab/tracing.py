"""OpenTelemetry traces of a lab run: the run is the parent span, each session one
``mas.session`` span under it with its turns and calls (docs/otel.md).

Sessions on the local executor run on threads of the driver, which carry the lab span
as their current context. Sessions on Ray workers run in other processes: they get the
driver's trace settings and the lab span's W3C ``traceparent`` with the task, trace on
the worker's runtime, and flush their spans before the task returns.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from mas.library.lab.sessions import SessionFunction, SessionJob
from mas.runtime.otel import TraceSettings, start_tracing
from mas.runtime.runtime import Runtime

if TYPE_CHECKING:
    from mas.runtime.otel import Tracing


class TracedSessions:
    """A session function whose every session is one span under the lab run's.

    Picklable, for the Ray executor: the driver's :class:`Tracing` stays behind (it is
    this process's), the settings and the ``traceparent`` travel.

    :param session: the session function that plays the session.
    :param tracing: the driver's tracing, listening on the driver's runtime, inside the
        lab run's span (whose ``traceparent`` is taken now).
    """

    def __init__(self, session: SessionFunction, tracing: Tracing) -> None:
        self.session = session
        self.settings: TraceSettings = tracing.settings
        self.traceparent = tracing.traceparent()
        # The driver's service name and project (OTEL_RESOURCE_ATTRIBUTES), which a
        # worker's environment may not have: its spans belong to the same service.
        self.resource = tuple(sorted((str(k), v) for k, v in
                                     tracing.provider.resource.attributes.items()
                                     if isinstance(v, (str, bool, int, float))))
        self._tracing: Tracing | None = tracing

    def __getstate__(self) -> dict[str, Any]:
        # The driver's tracer provider does not cross processes; a worker starts its own.
        return {**self.__dict__, "_tracing": None}

    def __call__(self, job: SessionJob) -> None:
        """Play ``job`` inside its session span."""
        attributes: dict[str, str | int] = {
            "mas.lab.experiment": job.experiment, "mas.lab.flavour": job.flavour.name,
            "mas.lab.item": job.item.id, "mas.lab.run_index": job.run_index,
            "mas.lab.seed": job.seed,
        }
        if self._tracing is not None:
            # Here, on a thread of the driver: the lab span is the thread's current one.
            with self._tracing.session(job.session_id, None, attributes):
                self.session(job)
            return
        tracing = worker_tracing(job.runtime, self.settings, self.resource)
        try:
            with tracing.session(job.session_id, self.traceparent, attributes):
                self.session(job)
        finally:
            tracing.flush()  # the worker may be gone before a batch would leave


@functools.lru_cache(maxsize=4)
def worker_tracing(runtime: Runtime, settings: TraceSettings,
                   resource: tuple[tuple[str, str | bool | int | float], ...]) -> Tracing:
    """The tracing of a worker's runtime, started once per process with the driver's
    settings and resource (the SDK flushes and shuts it down when the process exits)."""
    return start_tracing(runtime, settings, resource=dict(resource))
