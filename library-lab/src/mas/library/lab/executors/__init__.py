"""Where sessions run: one small interface, a thread pool here or tasks on a Ray cluster.

The runner (:func:`mas.library.lab.runner.run_grid`) is the driver: it decides what to
run, keeps at most ``capacity`` sessions in flight, writes every file of the run folder,
records outcomes and draws the progress bar. An executor only runs sessions:

- :meth:`SessionExecutor.submit` hands it one :class:`~mas.library.lab.sessions.SessionJob`
  under a key the driver chose;
- :meth:`SessionExecutor.next_done` blocks until one of them ends and returns its key and
  its :class:`SessionResult`.

:class:`~mas.library.lab.executors.local.LocalExecutor` (the default) plays sessions on
threads of this process, straight into the run folder. The Ray executor
(``mas-library-lab[ray]``, imported only when asked for) plays each one on a worker in a
scratch folder and returns the folder's files for the driver to write.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mas.library.lab.sessions import SessionJob
from mas.runtime.spec.experiment import Runner

Play = Callable[[SessionJob], "str | None"]
"""Runs one job into ``job.folder`` and returns its error text (``None``: it finished)."""


@dataclass(frozen=True)
class SessionResult:
    """How one session ended, as the executor hands it back.

    :ivar error: why it failed (``None``: it finished; its transcript says the rest).
    :ivar seconds: wall time of the session where it ran.
    :ivar files: the session folder's files (relative path -> content) for the driver to
        write, or ``None`` when the executor played it in place.
    """

    error: str | None
    seconds: float
    files: dict[str, bytes] | None = None


class SessionExecutor(ABC):
    """Runs sessions somewhere; the driver submits, collects and writes.

    :ivar capacity: sessions the driver may keep in flight at once.
    """

    capacity: int

    @abstractmethod
    def submit(self, key: int, job: SessionJob) -> None:
        """Start ``job``; its result comes back from :meth:`next_done` under ``key``."""

    @abstractmethod
    def next_done(self) -> tuple[int, SessionResult]:
        """Wait for any submitted session to end; its key and result."""

    @abstractmethod
    def cancel(self) -> None:
        """Stop what is still queued or running (the driver is giving up)."""

    @abstractmethod
    def close(self) -> None:
        """Release what the executor holds (threads, cluster connection)."""

    def __enter__(self) -> SessionExecutor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def open_executor(runner: Runner | None, play: Play, max_concurrency: int) -> SessionExecutor:
    """The executor ``runner`` asks for (``None``: the local thread pool).

    :raises MasError: Ray is asked for but not installed, unreachable, or missing plugins.
    """
    if runner is None or runner.backend == "local":
        from mas.library.lab.executors.local import LocalExecutor

        return LocalExecutor(play, max_concurrency)
    from mas.library.lab.executors.ray_backend import RayExecutor

    return RayExecutor(play, max_concurrency, runner)
